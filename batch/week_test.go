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

// TestWeekExact: with windows whose only calendar window is the week (no calendar hour, day
// or month, no all time) the batch publishes the closed ISO week, summed from its day rollups, equal to
// the truth, on both engines; it builds the hours and days below it without publishing them,
// and a speed layer's provisional week is replaced and reconciled.
func TestWeekExact(t *testing.T) {
	seed, err := windowset.Parse("minute=sliding:1m/1m,hour=sliding:1h/1m,day=sliding:24h/1h,7d=sliding:7d/1h,calendar:week")
	if err != nil {
		t.Fatal(err)
	}
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		f.generate() // Saturday day0 and Sunday, and the first hours of Monday the 16th
		eng, st := open(t), boltStore(t)
		week := model.Week.Align(day0)
		if !week.Equal(time.Date(2026, 11, 9, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("week of day0 starts %s", week)
		}
		ctx := context.Background()
		// The speed layer's final list of the week, a little off.
		speed := model.List{Window: "week", Start: week, End: model.Week.Next(week), AsOf: model.Week.Next(week), Version: 1,
			Source: model.SourceSpeed, Status: model.StatusProvisional, ComputedAt: day0,
			Items: []model.Item{{Rank: 1, ItemID: "V0", Views: 1}}}
		if err := st.Put(ctx, speed); err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 11, 17, 0, 0, 0, 0, time.UTC)
		r := newRunner(t, f, eng, st, now, func(c *batch.Config) { c.Windows = seed })
		rep, err := r.Nightly(ctx, time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)) // Sunday: the week closed
		if err != nil {
			t.Fatal(err)
		}
		l := checkList(t, st, model.Key{Window: "week", Start: week}, f.truthOf(hoursOf(day0, 48)...))
		if l.Reconciliation == nil || l.Reconciliation.SpeedVersion != 1 || !l.End.Equal(model.Week.Next(week)) {
			t.Errorf("week list: reconciliation %+v end %s", l.Reconciliation, l.End)
		}
		for _, k := range []model.Key{{Window: "hour", Start: day0.Add(10 * time.Hour)}, {Window: "day", Start: day0}, {Window: "all"}, {Window: model.BaseWindow}} {
			if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s published without being configured: %v", k, err)
			}
		}
		published := 0
		for _, o := range rep.Outcomes {
			if o.Published {
				published++
				if o.Window.Level != batch.Week {
					t.Errorf("published %s", o.Window)
				}
			}
		}
		if published != 1 {
			t.Errorf("%d lists published, want the week alone", published)
		}
		// Counts of the week are the sum of its days.
		got, err := eng.Counts(ctx, batch.Week, week, "", []string{"V0", "V3", "nope"})
		if err != nil {
			t.Fatal(err)
		}
		tr := f.truthOf(hoursOf(day0, 48)...)
		for _, id := range []string{"V0", "V3", "nope"} {
			if got[id] != tr[id] {
				t.Errorf("Counts(week, %s) = %d, want %d", id, got[id], tr[id])
			}
		}
		// The next week holds Monday's first hours: open, refused without --force.
		next := batch.Window{Level: batch.Week, Start: model.Week.Next(week)}
		if _, err := r.Recompute(ctx, []batch.Window{next}); !errors.Is(err, batch.ErrWindowOpen) {
			t.Errorf("open week: %v, want ErrWindowOpen", err)
		}
		// The nightly run of Saturday: its week has not ended, earlier ones are empty.
		rep, err = r.Nightly(ctx, day0)
		if err != nil || rep.Published() != 0 {
			t.Errorf("nightly of Saturday: %d published, %v", rep.Published(), err)
		}
		if again, _ := st.Get(ctx, model.Key{Window: "week", Start: week}); again.Version != l.Version {
			t.Errorf("week list rewritten: version %d, was %d", again.Version, l.Version)
		}
	})
}
