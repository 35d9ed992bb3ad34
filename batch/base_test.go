package batch_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
	"trending/serving/store"
)

// rollDays archives n events per partition for each of days UTC days from the first.
func (f *fixture) rollDays(first time.Time, days, n int) {
	for d := range days {
		for p := range int32(2) {
			f.roll(p, n, first.AddDate(0, 0, d), 24*time.Hour)
		}
	}
}

// truthBefore sums the truth of every hour before b.
func (f *fixture) truthBefore(b time.Time) map[string]uint64 {
	var hs []time.Time
	for h := range f.truth {
		if h.Before(b) {
			hs = append(hs, h)
		}
	}
	return f.truthOf(hs...)
}

// checkBase compares the published base with the truth through b: the top n and the cutoff.
func checkBase(t *testing.T, st store.Store, b time.Time, n int, truth map[string]uint64) model.List {
	t.Helper()
	l, err := st.Get(context.Background(), model.Key{Window: model.BaseWindow})
	if err != nil {
		t.Fatalf("base: %v", err)
	}
	if !l.Boundary.Equal(b) || !l.AsOf.Equal(b) || l.Source != model.SourceBatch || !l.Exact {
		t.Fatalf("base: boundary %s as of %s source %s exact %t, want boundary %s, batch, exact", l.Boundary, l.AsOf, l.Source, l.Exact, b)
	}
	want := rank(truth)
	var cutoff uint64
	if len(want) > n {
		cutoff, want = want[n].Views, want[:n]
	}
	if !slices.Equal(l.Items, want) || l.Cutoff != cutoff {
		t.Fatalf("base through %s: %d items cutoff %d, want %d cutoff %d; first got %v want %v", b, len(l.Items), l.Cutoff, len(want), cutoff, head(l.Items), head(want))
	}
	return l
}

// TestAllTimeBase: the batch publishes the exact all-time base through the boundary B (the
// last closed and complete day start) as its own key, across a month boundary, and moves B a
// day forward with the next nightly run; the live "all" key is not where it goes. Before the
// archive says the day before B is complete there is no base. Both engines.
func TestAllTimeBase(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		first := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC) // Oct 30, 31, Nov 1, 2, 3
		f.rollDays(first, 5, 300)
		eng, st := open(t), boltStore(t)
		ctx := context.Background()
		const k, factor = 4, 3
		mod := func(c *batch.Config) { c.K, c.BaseFactor, c.LookbackDays = k, factor, 3 }

		// The archive is complete only through Nov 1 10:00: no base through Nov 2 yet.
		nov2 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		f.progress(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
		r := newRunner(t, f, eng, st, nov2.Add(30*time.Minute), mod)
		if _, err := r.Recompute(ctx, []batch.Window{{Level: batch.All}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(ctx, model.Key{Window: model.BaseWindow}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("base before the archive is complete: %v, want none", err)
		}

		// The nightly run for Nov 1: B = Nov 2, summed from October whole and November's
		// first day.
		f.progress(nov2.Add(time.Hour))
		if _, err := r.Nightly(ctx, nov2.AddDate(0, 0, -1)); err != nil {
			t.Fatal(err)
		}
		b1 := checkBase(t, st, nov2, k*factor, f.truthBefore(nov2))
		if b1.Cutoff == 0 {
			t.Fatal("the base holds every item: the cutoff is not tested")
		}

		// A rerun with nothing new republishes nothing.
		rep, err := r.Nightly(ctx, nov2.AddDate(0, 0, -1))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rep.Outcomes {
			if o.Window.Level == model.BaseWindow && o.Published {
				t.Fatal("an unchanged base was republished")
			}
		}

		// The next night: B moves to Nov 3.
		nov3 := nov2.AddDate(0, 0, 1)
		f.progress(nov3.Add(time.Hour))
		r = newRunner(t, f, eng, st, nov3.Add(30*time.Minute), mod)
		if _, err := r.Nightly(ctx, nov2); err != nil {
			t.Fatal(err)
		}
		b2 := checkBase(t, st, nov3, k*factor, f.truthBefore(nov3))
		if b2.Version <= b1.Version {
			t.Fatalf("base version %d after %d", b2.Version, b1.Version)
		}
	})
}

// idTitler titles every item "Title of <id>".
type idTitler struct{}

func (idTitler) Attach(_ context.Context, l *model.List) {
	for i := range l.Items {
		l.Items[i].Title = "Title of " + l.Items[i].ItemID
	}
}

// TestAllTimeBaseTitled: written through a store that titles the items (store.WithTitles, as
// every command gives the batch), the base carries its items' titles, and a rerun with
// nothing new still finds it current (its counts compared, not the metadata the store added)
// rather than republishing it every run.
func TestAllTimeBaseTitled(t *testing.T) {
	f := newFixture(t)
	first := time.Date(2026, 10, 30, 0, 0, 0, 0, time.UTC)
	f.rollDays(first, 3, 300)
	raw := boltStore(t)
	st := store.WithTitles(raw, idTitler{})
	ctx := context.Background()
	nov1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	f.progress(nov1.Add(time.Hour))
	eng, err := batch.OpenNative(filepath.Join(t.TempDir(), "rollups.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	r := newRunner(t, f, eng, st, nov1.Add(30*time.Minute), func(c *batch.Config) { c.K, c.BaseFactor, c.LookbackDays = 4, 3, 3 })
	for run := range 2 {
		rep, err := r.Nightly(ctx, nov1.AddDate(0, 0, -1))
		if err != nil {
			t.Fatal(err)
		}
		published := 0
		for _, o := range rep.Outcomes {
			if o.Window.Level == model.BaseWindow && o.Published {
				published++
			}
		}
		if want := 1 - run; published != want {
			t.Fatalf("run %d: the base published %d times, want %d", run+1, published, want)
		}
	}
	l, err := raw.Get(ctx, model.Key{Window: model.BaseWindow})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 12 {
		t.Fatalf("base of %d items, want 12", len(l.Items))
	}
	for _, it := range l.Items {
		if it.Title != "Title of "+it.ItemID {
			t.Fatalf("base item %s titled %q", it.ItemID, it.Title)
		}
	}
}
