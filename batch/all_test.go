package batch_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"trending/batch"
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
	speed := store.List{Window: "all", AsOf: speedAsOf, Version: speedAsOf.UnixMilli(), Source: store.SourceSpeed,
		Items: []store.Item{{Rank: 1, ItemID: "V0", Views: 1}}, ComputedAt: speedAsOf}
	if err := st.Put(ctx, speed); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, f, eng, st, next.Add(26*time.Hour), nil)
	if _, err := r.Nightly(ctx, next); err != nil && !errors.Is(err, store.ErrStaleVersion) {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, store.Key{Window: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != store.SourceSpeed || got.Version != speed.Version {
		t.Fatalf("all-time list: source %s version %d, want the fresher speed list (version %d) kept", got.Source, got.Version, speed.Version)
	}
}
