package batch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
	"trending/model/windowset"
	"trending/serving/store"
)

// TestGroupsExactAgainstTruth: with lists per region, every closed hour, day and month of
// each configured region equals that region's truth, on both engines, beside the lists of all
// items (still the truth of every event); a region without lists gets none, and all time has
// no list per region (the speed layer's). A first run without groups built the rollups: the
// run with groups rebuilds them (their fingerprint names the groups), and a rerun rebuilds
// nothing.
func TestGroupsExactAgainstTruth(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		f.generate()
		eng, st := open(t), boltStore(t)
		now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
		f.progress(now)
		ctx := context.Background()
		month := model.Month.Align(day0)
		ws := append(spans(t, batch.Hour, day0, day0.Add(48*time.Hour)), spans(t, batch.Day, day0, day0.Add(48*time.Hour))...)
		ws = append(ws, batch.Window{Level: batch.Month, Start: month}, batch.Window{Level: batch.All})
		if _, err := newRunner(t, f, eng, st, now, nil).Recompute(ctx, ws); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(ctx, model.Key{Window: "day", Start: day0, Group: "eu"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a list per region without groups configured: %v", err)
		}
		groups := windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us", "apac"}}
		withGroups := func(c *batch.Config) { c.Windows.Groups = groups }
		rep, err := newRunner(t, f, eng, st, now.Add(time.Minute), withGroups).Recompute(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		built := 0
		for _, o := range rep.Outcomes {
			if o.Built && o.Window.Level == batch.Hour && o.Group == "" {
				built++
			}
		}
		if built == 0 {
			t.Fatal("the run with groups rebuilt no hour: its rollups would hold no group rows")
		}
		for _, r := range groups.Values {
			for _, h := range hoursOf(day0, 48) {
				want := f.regionOf(r, h)
				k := model.Key{Window: "hour", Start: h, Group: r}
				if len(want) == 0 {
					if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("%s without events: %v, want no list", k, err)
					}
					continue
				}
				checkList(t, st, k, want)
			}
			checkList(t, st, model.Key{Window: "day", Start: day0, Group: r}, f.regionOf(r, hoursOf(day0, 24)...))
			checkList(t, st, model.Key{Window: "day", Start: day0.Add(24 * time.Hour), Group: r}, f.regionOf(r, hoursOf(day0.Add(24*time.Hour), 24)...))
			l := checkList(t, st, model.Key{Window: "month", Start: month, Group: r}, f.regionOf(r, hoursOf(day0, 48)...))
			if l.Group != r || l.Window != "month" || l.Version != rep.Version {
				t.Fatalf("month %s: key %v version %d", r, l.Key(), l.Version)
			}
		}
		checkList(t, st, model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))
		checkList(t, st, model.Key{Window: "all"}, f.truthOf(hoursOf(day0, 48)...))
		for _, k := range []model.Key{{Window: "day", Start: day0, Group: "mars"}, {Window: "all", Group: "eu"}} {
			if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: %v, want no list", k, err)
			}
		}
		got, err := eng.Counts(ctx, batch.Day, day0, "us", []string{"V0", "V1", "V150", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		for id, v := range f.regionOf("us", hoursOf(day0, 24)...) {
			if _, asked := got[id]; asked && got[id] != v {
				t.Errorf("Counts(us, %s) = %d, want %d", id, got[id], v)
			}
		}
		rerun, err := newRunner(t, f, eng, st, now.Add(2*time.Minute), withGroups).Recompute(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rerun.Outcomes {
			if o.Built {
				t.Errorf("a rerun over the same inputs and groups rebuilt %s", o.Window)
			}
		}
	})
}

// TestGroupsEveryValueCapped: with every value seen getting lists up to 2, a window's two
// regions with the most views get lists (eu and us here; apac and mars have fewer), each its
// truth.
func TestGroupsEveryValueCapped(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, err := batch.OpenNative(t.TempDir() + "/rollups.db")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	st := boltStore(t)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f.progress(now)
	ctx := context.Background()
	every := windowset.Groups{By: windowset.ByRegion, Every: true, Max: 2}
	r := newRunner(t, f, eng, st, now, func(c *batch.Config) { c.Windows.Groups = every })
	if _, err := r.Recompute(ctx, []batch.Window{{Level: batch.Day, Start: day0}}); err != nil {
		t.Fatal(err)
	}
	vals, err := eng.Groups(ctx, batch.Day, day0)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 4 || vals[0].Group != "eu" || vals[1].Group != "us" {
		t.Fatalf("group values of the day %+v, want eu and us first of eu, us, apac, mars", vals)
	}
	for _, g := range vals {
		k := model.Key{Window: "day", Start: day0, Group: g.Group}
		if g.Group == "eu" || g.Group == "us" {
			checkList(t, st, k, f.regionOf(g.Group, hoursOf(day0, 24)...))
		} else if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s past the cap of 2: %v, want no list", k, err)
		}
		var views uint64
		for _, v := range f.regionOf(g.Group, hoursOf(day0, 24)...) {
			views += v
		}
		if g.Views != views {
			t.Errorf("%s: %d views, the truth %d", g.Group, g.Views, views)
		}
	}
}
