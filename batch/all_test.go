package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
	"trending/serving/store"
)

// TestAllTimeDefersToFresherSpeed: the exact all-time list is as of the end of the last
// rolled-up month; a speed all-time list as of later stays served, and an empty exact list is
// never published over it.
func TestAllTimeDefersToFresherSpeed(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, err := batch.OpenNative(t.TempDir() + "/r.db")
	if err != nil {
		t.Fatal(err)
	}
	st := boltStore(t)
	ctx := context.Background()
	next := day0.Add(24 * time.Hour)
	speedAsOf := next.Add(26*time.Hour - time.Minute) // the speed layer is a minute behind now
	speed := model.List{Window: "all", AsOf: speedAsOf, Version: speedAsOf.UnixMilli(), Source: model.SourceSpeed, Status: model.StatusLive,
		Items: []model.Item{{Rank: 1, ItemID: "V0", Views: 1}}, ComputedAt: speedAsOf}
	if err := st.Put(ctx, speed); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	r := newRunner(t, f, eng, st, next.Add(26*time.Hour), func(c *batch.Config) { c.Progress = &progress })
	rep, err := r.Nightly(ctx, next)
	if err != nil && !errors.Is(err, store.ErrStaleVersion) {
		t.Fatal(err)
	}
	// The outcome and the progress line say whose list was kept: the speed layer's, not
	// another batch run's.
	var all *batch.Outcome
	for i := range rep.Outcomes {
		if rep.Outcomes[i].Window.Level == batch.All {
			all = &rep.Outcomes[i]
		}
	}
	if all == nil || all.Published || all.Skipped != batch.KeptSpeed {
		t.Fatalf("all-time outcome %+v, want skipped: %q", all, batch.KeptSpeed)
	}
	if !strings.Contains(progress.String(), "kept") || !strings.Contains(progress.String(), batch.KeptSpeed) || strings.Contains(progress.String(), batch.KeptBatch) {
		t.Fatalf("progress does not say the speed layer's list is kept:\n%s", progress.String())
	}
	got, err := st.Get(ctx, model.Key{Window: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != model.SourceSpeed || got.Version != speed.Version {
		t.Fatalf("all-time list: source %s version %d, want the fresher speed list (version %d) kept", got.Source, got.Version, speed.Version)
	}
}

// TestAllTimeNewerBatchKept: when the stored all-time list is a newer batch run's, the
// refused write says so (not that the speed layer's list is kept).
func TestAllTimeNewerBatchKept(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, err := batch.OpenNative(t.TempDir() + "/r.db")
	if err != nil {
		t.Fatal(err)
	}
	st := boltStore(t)
	ctx := context.Background()
	next := day0.Add(24 * time.Hour)
	later := next.Add(40 * time.Hour)
	newer := model.List{Window: "all", AsOf: later, Version: later.UnixMilli(), Source: model.SourceBatch, Status: model.StatusExact, Exact: true,
		Items: []model.Item{{Rank: 1, ItemID: "V0", Views: 1, Exact: true}}, ComputedAt: later}
	if err := st.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	rep, err := newRunner(t, f, eng, st, next.Add(26*time.Hour), nil).Nightly(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		if o.Window.Level == batch.All && (o.Published || o.Skipped != batch.KeptBatch) {
			t.Fatalf("all-time outcome %+v, want skipped: %q", o, batch.KeptBatch)
		}
	}
}
