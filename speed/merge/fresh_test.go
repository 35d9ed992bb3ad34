package merge

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store"
)

// TestAllFresh: Run publishes at once when every partition heard from within Staleness has
// sent a newer list since the last Publish; a partition silent for longer does not hold the
// others back, and a replayed (older) list does not count as news.
func TestAllFresh(t *testing.T) {
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.K, cfg.Partitions, cfg.Staleness, cfg.Store = 3, 3, time.Minute, st
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	offer := func(part int, asOf time.Time) {
		m.Offer(model.Partial{Window: "hour", Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Exact: true})
	}
	token := func() bool {
		select {
		case <-m.arrived:
			return true
		default:
			return false
		}
	}
	now := time.Now()
	if m.allFresh(now) || token() {
		t.Fatal("fresh before any list")
	}
	offer(0, at)
	offer(1, at)
	if !m.allFresh(now) || !token() {
		t.Fatal("both partitions sent a list: not fresh")
	}
	if err := m.Publish(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if m.allFresh(now) {
		t.Fatal("fresh right after Publish")
	}
	offer(0, at.Add(time.Second))
	if m.allFresh(now) || !token() {
		t.Fatal("partition 1 has no news yet, but fresh")
	}
	offer(1, at) // a replay of what partition 1 already sent
	if m.allFresh(now) || token() {
		t.Fatal("a replayed list counted as news")
	}
	offer(1, at.Add(2*time.Second))
	if !m.allFresh(now) {
		t.Fatal("both have news: not fresh")
	}
	if err := m.Publish(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	offer(0, at.Add(3*time.Second))
	if m.allFresh(now.Add(50 * time.Second)) {
		t.Fatal("partition 1, heard 50s ago (within Staleness), did not hold the merge")
	}
	if !m.allFresh(now.Add(2 * time.Minute)) {
		t.Fatal("partition 1, silent past Staleness, holds the merge back")
	}
}

// TestLiveSpan: a live list says the span its newest partition counts: window_end is as_of,
// window_start that partition's start, not the earliest start of a partition behind it.
func TestLiveSpan(t *testing.T) {
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.K, cfg.Partitions, cfg.Store = 3, 2, st
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	newest := time.Date(2026, 11, 14, 10, 30, 12, 0, time.UTC)
	behind := newest.Add(-70 * time.Second)
	for _, p := range []struct {
		part int
		asOf time.Time
	}{{0, newest}, {1, behind}} {
		m.Offer(model.Partial{Window: "hour", Partition: p.part, AsOf: p.asOf, Version: p.asOf.UnixMilli(), Exact: true,
			WindowStart: p.asOf.Truncate(time.Minute).Add(-59 * time.Minute)})
	}
	l, _, ok := m.Build(model.Key{Window: "hour"})
	if !ok {
		t.Fatal("no list")
	}
	if want := time.Date(2026, 11, 14, 9, 31, 0, 0, time.UTC); !l.WindowStart.Equal(want) || !l.WindowEnd.Equal(newest) || !l.AsOf.Equal(newest) {
		t.Fatalf("span [%v, %v] as of %v; want [%v, %v] as of %v", l.WindowStart, l.WindowEnd, l.AsOf, want, newest, newest)
	}
}
