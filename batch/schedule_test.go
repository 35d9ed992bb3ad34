package batch_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
)

// TestSchedule: the built-in scheduler publishes every closed hour and day exactly, and
// recomputes an hour (and its day) when late data lands in the archive.
func TestSchedule(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, err := batch.OpenNative(t.TempDir() + "/rollups.db")
	if err != nil {
		t.Fatal(err)
	}
	st := boltStore(t)
	r := newRunner(t, f, eng, st, day0.Add(26*time.Hour), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sc := batch.DefaultScheduleConfig()
	sc.Every, sc.Lookback, sc.NightlyAt = 20*time.Millisecond, 48*time.Hour, -1
	go func() { done <- r.Schedule(ctx, sc) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	h10 := day0.Add(10 * time.Hour)
	waitFor := func(k model.Key, want map[string]uint64) model.List {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			l, err := st.Get(context.Background(), k)
			if err == nil && l.Exact && slices.Equal(l.Items, rank(want)) {
				return checkList(t, st, k, want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never became exact: %+v %v", k, l.Items[:min(2, len(l.Items))], err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	before := waitFor(model.Key{Window: "hour", Start: h10}, f.truthOf(h10))
	waitFor(model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))

	f.roll(0, 40, h10.Add(10*time.Minute), 20*time.Minute) // late events for hour 10
	after := waitFor(model.Key{Window: "hour", Start: h10}, f.truthOf(h10))
	if after.Fingerprint == before.Fingerprint || after.Version < before.Version {
		t.Fatalf("late data: fingerprint %q -> %q, version %d -> %d", before.Fingerprint, after.Fingerprint, before.Version, after.Version)
	}
	waitFor(model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))
}
