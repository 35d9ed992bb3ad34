package worker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"trending/model"
	"trending/model/event"
	"trending/serving/store"
	"trending/speed/window"
)

// TestSincePartial: with a base read through Config.Base, a partition moves its boundary to
// the base's and publishes its exact counts since it, the base items it holds included;
// without a base (not found) it publishes none, and a newer base moves the boundary.
func TestSincePartial(t *testing.T) {
	b1 := time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)
	base := model.List{Window: model.BaseWindow, Boundary: b1, AsOf: b1, Version: 5, Source: model.SourceBatch, Exact: true,
		Items: []model.Item{{Rank: 1, ItemID: "old", Views: 1000, Exact: true}}}
	var have *model.List
	cfg := DefaultConfig()
	cfg.Log, cfg.BaseRefresh = slog.New(slog.DiscardHandler), time.Minute
	cfg.Base = func(context.Context) (model.List, error) {
		if have == nil {
			return model.List{}, store.ErrNotFound
		}
		return *have, nil
	}
	wc := window.DefaultConfig()
	wc.K, wc.M, wc.SinceDays = 1, 1, 7
	cfg.Window = wc
	st, err := window.New(wc)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{cfg: cfg}
	p := &partition{w: w, id: 3, state: st}
	for _, ev := range []event.Event{
		{ItemID: "old", Count: 2, TS: b1.Add(-time.Hour)}, // before B: the base's
		{ItemID: "old", Count: 3, TS: b1.Add(time.Hour)},
		{ItemID: "new", Count: 9, TS: b1.Add(2 * time.Hour)},
		{ItemID: "new", Count: 1, TS: b1.Add(26 * time.Hour)},
		{ItemID: "x", Count: 1, TS: b1.Add(27 * time.Hour)}, // closes the minutes before
	} {
		st.Add(ev)
	}
	now := time.Now()
	w.base.refresh(context.Background(), cfg, now)
	if _, ok := p.sincePartial(); ok {
		t.Fatal("a since partial without a base")
	}
	have = &base
	w.base.refresh(context.Background(), cfg, now.Add(time.Minute))
	pt, ok := p.sincePartial()
	if !ok {
		t.Fatal("no since partial with a base")
	}
	if pt.Window != model.SinceWindow || pt.Partition != 3 || !pt.Boundary.Equal(b1) || pt.From.After(b1) || pt.BaseVersion != 5 ||
		len(pt.Items) != 1 || pt.Items[0].Item != "new" || pt.Items[0].Count != 10 || pt.Cutoff != 10 ||
		len(pt.Base) != 1 || pt.Base[0].Item != "old" || pt.Base[0].Count != 3 {
		t.Fatalf("since partial %+v", pt)
	}
	// As of the last closed minute, at the version of the newest event read (the live lists').
	if newest := b1.Add(27 * time.Hour); pt.Version != newest.UnixMilli() || !pt.AsOf.Equal(newest.Add(-wc.AllowedLateness).Truncate(time.Minute)) {
		t.Fatalf("since partial as of %s version %d, want as of the closed minute before %s at version %d",
			pt.AsOf, pt.Version, newest.Add(-wc.AllowedLateness), newest.UnixMilli())
	}
	// The next night's base: B a day later.
	b2 := b1.AddDate(0, 0, 1)
	next := base
	next.Boundary, next.AsOf, next.Version = b2, b2, 6
	have = &next
	w.base.refresh(context.Background(), cfg, now.Add(2*time.Minute))
	pt, _ = p.sincePartial()
	if !pt.Boundary.Equal(b2) || len(pt.Items) != 1 || pt.Items[0].Count != 1 || len(pt.Base) != 0 || pt.BaseVersion != 6 {
		t.Fatalf("after B moved: %+v", pt)
	}
	// A failing store keeps the base held.
	cfg.Base = func(context.Context) (model.List, error) { return model.List{}, errors.New("down") }
	w.base.refresh(context.Background(), cfg, now.Add(3*time.Minute))
	if b := w.base.get(); b == nil || b.version != 6 {
		t.Fatalf("base after a failed read: %+v", b)
	}
}
