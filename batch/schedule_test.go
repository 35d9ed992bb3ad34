package batch_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	reg := prometheus.NewRegistry()
	sc.Registry = reg
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

	// The scheduler's metrics: passes that succeeded, none failed, a last success.
	if n := metricOf(t, reg, "trending_batch_runs_total", "kind", "scheduled", "result", "ok"); n < 1 {
		t.Errorf(`trending_batch_runs_total{kind="scheduled",result="ok"} = %v, want >= 1`, n)
	}
	for _, name := range []string{"trending_batch_windows_failed_total", "trending_batch_windows_pending"} {
		if n := metricOf(t, reg, name, "level", "hour"); name == "trending_batch_windows_failed_total" && n != 0 {
			t.Errorf(`%s{level="hour"} = %v, want 0`, name, n)
		}
	}
	if ts := metricOf(t, reg, "trending_batch_last_success_timestamp_seconds"); ts <= 0 {
		t.Errorf("trending_batch_last_success_timestamp_seconds = %v", ts)
	}
}

// metricOf is the value of the series of name with the label pairs kv in reg; the test
// fails when there is none.
func metricOf(t *testing.T, reg *prometheus.Registry, name string, kv ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i < len(kv); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, kv)
	return 0
}
