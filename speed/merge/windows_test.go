package merge_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/serving/store"
	"trending/speed/merge"
)

// TestOnlyConfiguredWindows: with the seed-004 windows the merger publishes the minute, the
// 7 days and the calendar week, and drops partials of windows it does not serve (a worker
// still on the default set) instead of writing them to the store.
func TestOnlyConfiguredWindows(t *testing.T) {
	st := openStore(t)
	c := mergeConfig(3, 1, st)
	var err error
	if c.Windows, err = windowset.Preset("seed-004"); err != nil {
		t.Fatal(err)
	}
	m, err := merge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	week := model.Week.Align(t0)
	cal := partial("week", 0, t0, e("a", 9))
	cal.Start, cal.End = week, model.Week.Next(week)
	month := partial("month", 0, t0, e("a", 9))
	month.Start, month.End = model.Month.Align(t0), model.Month.Next(model.Month.Align(t0))
	for _, p := range []model.Partial{
		partial("minute", 0, t0, e("a", 2)), partial("7d", 0, t0, e("a", 700)), cal,
		partial("month", 0, t0, e("a", 9)), partial("all", 0, t0, e("a", 9)), month,
		{Window: model.SinceWindow, Partition: 0, AsOf: t0, Version: t0.UnixMilli(), Items: nil},
	} {
		m.Offer(p)
	}
	ctx := context.Background()
	if err := m.Publish(ctx, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []model.Key{{Window: "minute"}, {Window: "7d"}, {Window: "week", Start: week}} {
		if _, err := st.Get(ctx, k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []model.Key{{Window: "month"}, {Window: "all"}, {Window: "month", Start: month.Start}} {
		if _, err := st.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s published although not configured: %v", k, err)
		}
	}
}

// TestDecayedMerge: a decayed window's partials are brought to the newest partition's as-of
// (a partition a minute behind decays by 2^(-1/60) at a one-hour half-life) and ranked by
// score; views are the scores rounded; the list is live and never exact. Partials without
// the configured half-life (a worker on another window set) are dropped.
func TestDecayedMerge(t *testing.T) {
	// Producers from before model.Partial.Kind send none: the merger infers it as it did.
	t.Run("kind inferred", func(t *testing.T) { testDecayedMerge(t, false) })
	t.Run("kind given", func(t *testing.T) { testDecayedMerge(t, true) })
}

func testDecayedMerge(t *testing.T, kinds bool) {
	kind := func(k model.PartialKind) model.PartialKind {
		if kinds {
			return k
		}
		return ""
	}
	st := openStore(t)
	c := mergeConfig(3, 2, st)
	var err error
	if c.Windows, err = windowset.Parse("hour=sliding:1h/1m,now=decayed:1h:exact"); err != nil {
		t.Fatal(err)
	}
	m, err := merge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	dec := func(part int, at time.Time, hl int64, s ...topk.Scored) model.Partial {
		return model.Partial{Kind: kind(model.PartialScored), Window: "now", Partition: part, AsOf: at, Version: at.UnixMilli(), Exact: true, HalfLifeSeconds: hl, Scored: s}
	}
	counts := partial("now", 1, t0.Add(-20*time.Second), e("y", 99))
	counts.Kind = kind(model.PartialItems)
	m.Offer(dec(0, t0, 3600, topk.Scored{Item: "a", Score: 10}, topk.Scored{Item: "b", Score: 4.4}))
	m.Offer(dec(1, t0.Add(-time.Minute), 3600, topk.Scored{Item: "c", Score: 10}, topk.Scored{Item: "d", Score: 0.2}))
	m.Offer(dec(1, t0.Add(-30*time.Second), 60, topk.Scored{Item: "x", Score: 99})) // another half-life
	m.Offer(counts)                                                                 // counts, not scores
	ctx := context.Background()
	if err := m.Publish(ctx, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	l, err := st.Get(ctx, model.Key{Window: "now"})
	if err != nil {
		t.Fatal(err)
	}
	c10 := 10 * math.Exp2(-1.0/60)
	want := []model.Item{
		{Rank: 1, ItemID: "a", Views: 10, DecayedScore: 10},
		{Rank: 2, ItemID: "c", Views: 10, DecayedScore: c10},
		{Rank: 3, ItemID: "b", Views: 4, DecayedScore: 4.4},
	}
	if l.HalfLifeSeconds != 3600 || l.Status != model.StatusLive || l.Exact || !l.AsOf.Equal(t0) || len(l.Items) != len(want) {
		t.Fatalf("list %+v", l)
	}
	for i, it := range l.Items {
		if it.ItemID != want[i].ItemID || it.Views != want[i].Views || math.Abs(it.DecayedScore-want[i].DecayedScore) > 1e-12 || it.Rank != i+1 {
			t.Errorf("rank %d: %+v, want %+v", i+1, it, want[i])
		}
	}
}
