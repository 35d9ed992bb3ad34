package merge_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"trending/model"
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
	week := model.Align("week", t0)
	cal := partial("week", 0, t0, e("a", 9))
	cal.Start, cal.End = week, model.Next("week", week)
	month := partial("month", 0, t0, e("a", 9))
	month.Start, month.End = model.Align("month", t0), model.Next("month", model.Align("month", t0))
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
