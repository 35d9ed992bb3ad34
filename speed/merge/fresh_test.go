package merge

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	boltstore "trending/serving/store/bolt"
)

// TestAllFresh: Run publishes at once when every partition heard from within Staleness has
// sent a newer list since the last Publish; a partition silent for longer does not hold the
// others back, and a replayed (older) list does not count as news.
func TestAllFresh(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
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

// TestLiveSpan: a live list's counts all start at one window_start, whatever minute each
// partition has reached: while a partition has not reached the minute its peers moved to,
// the list keeps the start it counts from (one bucket back at most) and merges the faster
// partitions' last lists from it, so ranks do not flip as partitions cross the boundary one
// by one (merging every partition's newest list put b above a for a moment: a had lost the
// expired minute, b not yet). window_end is as_of, the newest event time of the lists
// merged. A partition more than a bucket behind does not hold the others back: it is marked
// stale, as its counts cover another span.
func TestLiveSpan(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := DefaultConfig()
	cfg.K, cfg.Partitions, cfg.Store = 3, 3, st
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := func(hms string) time.Time {
		x, err := time.Parse(time.DateTime, "2026-11-14 "+hms)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	offer := func(part int, asOf string, items ...topk.Entry) {
		a := at(asOf)
		m.Offer(model.Partial{Window: "hour", Partition: part, AsOf: a, Version: a.UnixMilli(), Exact: true,
			WindowStart: a.Truncate(time.Minute).Add(-59 * time.Minute), Items: items})
	}
	check := func(step, start, asOf, items string, stale []int) {
		t.Helper()
		l, _, ok := m.Build(model.Key{Window: "hour"})
		if !ok {
			t.Fatalf("%s: no list", step)
		}
		var got []string
		for _, it := range l.Items {
			got = append(got, fmt.Sprintf("%s:%d", it.ItemID, it.Views))
		}
		if !l.WindowStart.Equal(at(start)) || !l.WindowEnd.Equal(at(asOf)) || !l.AsOf.Equal(at(asOf)) ||
			strings.Join(got, " ") != items || !slices.Equal(l.StalePartitions, stale) || l.Incomplete != (len(stale) > 0) {
			t.Fatalf("%s: span [%s, %s] as of %s, items %v, stale %v; want [%s, %s], items %s, stale %v", step,
				l.WindowStart.Format(time.TimeOnly), l.WindowEnd.Format(time.TimeOnly), l.AsOf.Format(time.TimeOnly), got, l.StalePartitions, start, asOf, items, stale)
		}
	}
	offer(0, "10:29:58", topk.Entry{Item: "a", Count: 10})
	offer(1, "10:29:59", topk.Entry{Item: "b", Count: 8})
	offer(2, "10:29:57", topk.Entry{Item: "c", Count: 1})
	check("one start", "09:30:00", "10:29:59", "a:10 b:8 c:1", nil)
	// Partition 0 reaches 10:30: minute 09:30 expires from its counts. 1 and 2 are still
	// in 10:29: the list stays at 09:30 with partition 0's last list from it.
	offer(0, "10:30:12", topk.Entry{Item: "a", Count: 4})
	check("partition 0 ahead", "09:30:00", "10:29:59", "a:10 b:8 c:1", nil)
	offer(1, "10:30:13", topk.Entry{Item: "b", Count: 3})
	check("partitions 0 and 1 ahead", "09:30:00", "10:29:59", "a:10 b:8 c:1", nil)
	offer(2, "10:30:14", topk.Entry{Item: "c", Count: 2})
	check("every partition at 10:30", "09:31:00", "10:30:14", "a:4 b:3 c:2", nil)
	// Partition 2 falls silent at 10:30 (within the staleness) while the others reach 10:32:
	// two buckets behind, it no longer holds the start.
	offer(0, "10:31:01", topk.Entry{Item: "a", Count: 5})
	offer(1, "10:31:02", topk.Entry{Item: "b", Count: 4})
	offer(0, "10:32:05", topk.Entry{Item: "a", Count: 6})
	check("partition 2 two minutes behind", "09:32:00", "10:31:02", "a:5 b:4 c:2", []int{2})
	offer(1, "10:32:06", topk.Entry{Item: "b", Count: 1})
	check("partition 2 alone behind", "09:33:00", "10:32:06", "a:6 c:2 b:1", []int{2})
}
