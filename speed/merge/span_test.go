package merge_test

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"trending/model"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/merge"
	"trending/speed/window"
)

// TestMergedSpansHold drives real window partitions (seed 004's sliding windows) that read
// their share of one stream at different paces, with late and early events, publishes their
// live lists as the worker does, and merges them at random times. Every merged list of a live
// sliding window says one window_start for all its counts:
//   - each count of a partition not marked stale is the one a list of that partition with
//     that very start gave (never a count over another span);
//   - under one window_start no item's views ever go down from one merge to the next (the
//     span only grows at its end), which is what a list that merged partitions at different
//     starts broke: a partition crossing the minute dropped the expired minute's views while
//     the list's start stayed put (the ranks flickered).
func TestMergedSpansHold(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { mergedSpansHold(t, seed) })
	}
}

func mergedSpansHold(t *testing.T, seed uint64) {
	const parts = 3
	set, err := windowset.Preset("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	mc := mergeConfig(5, parts, openStore(t))
	mc.Windows, mc.Staleness = set, 20*time.Second
	m, err := merge.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	wc := window.DefaultConfig()
	wc.K, wc.M = 5, 2
	wc.Windows = []window.WindowConfig{
		{Name: "minute", Kind: windowset.Sliding, Length: time.Minute, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
	}
	ps := make([]*window.Partition, parts)
	for i := range ps {
		if ps[i], err = window.New(wc); err != nil {
			t.Fatal(err)
		}
	}
	owner := func(item string) int {
		h := fnv.New32a()
		h.Write([]byte(item))
		return int(h.Sum32() % parts)
	}
	// published[p][window]: the counts each list partition p sent gave, by start and item.
	type startItem struct {
		start time.Time
		item  string
	}
	published := make([]map[string]map[startItem]map[uint64]bool, parts)
	for i := range published {
		published[i] = map[string]map[startItem]map[uint64]bool{}
	}
	r := rand.New(rand.NewPCG(seed, 27))
	zipf := rand.NewZipf(r, 1.2, 1, 40)
	queues := make([][]event.Event, parts)
	now := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(3600)) * time.Second)
	type seen struct {
		start time.Time
		views map[string]uint64
	}
	last := map[string]seen{}
	merges, held, prevUsed := 0, 0, 0
	for step := range 20000 {
		now = now.Add(time.Duration(r.Int64N(int64(400 * time.Millisecond))))
		ts := now.Add(-time.Duration(r.Int64N(int64(5 * time.Second))))
		switch x := r.IntN(100); {
		case x < 10:
			ts = now.Add(-time.Duration(r.Int64N(int64(90 * time.Second))))
		case x < 13:
			ts = now.Add(time.Duration(r.Int64N(int64(3 * time.Second))))
		}
		ev := event.Event{ItemID: fmt.Sprintf("v%02d", zipf.Uint64()), Count: uint32(1 + r.IntN(3)), TS: ts.Truncate(time.Millisecond)}
		p := owner(ev.ItemID)
		queues[p] = append(queues[p], ev)
		// Each partition reads at its own pace: some fall seconds behind, then catch up.
		q := r.IntN(parts)
		n := min(len(queues[q]), r.IntN(4))
		for _, e := range queues[q][:n] {
			ps[q].Add(e)
		}
		queues[q] = queues[q][n:]
		if r.IntN(15) != 0 {
			continue
		}
		// A publish tick: every partition sends its live lists (as the worker does: the
		// list's start as WindowStart, its as-of as the version), then the merger merges.
		for i, pt := range ps {
			if pt.AsOf().IsZero() {
				continue
			}
			for _, l := range pt.LiveAll() {
				m.Offer(model.Partial{Window: l.Window, Partition: i, AsOf: l.AsOf, Version: l.AsOf.UnixMilli(), Exact: l.Exact,
					Total: l.Total, Items: append([]topk.Entry(nil), l.Items...), WindowStart: l.Start})
				byStart := published[i][l.Window]
				if byStart == nil {
					byStart = map[startItem]map[uint64]bool{}
					published[i][l.Window] = byStart
				}
				for _, e := range l.Items {
					k := startItem{l.Start, e.Item}
					if byStart[k] == nil {
						byStart[k] = map[uint64]bool{}
					}
					byStart[k][e.Count] = true
				}
			}
		}
		for _, name := range []string{"minute", "hour", "day"} {
			l, stale, ok := m.Build(model.Key{Window: name})
			if !ok {
				continue
			}
			merges++
			isStale := map[int]bool{}
			for _, s := range stale {
				isStale[s] = true
			}
			if l.Version > l.AsOf.UnixMilli() {
				prevUsed++
			}
			prev := last[name]
			views := map[string]uint64{}
			for _, it := range l.Items {
				p := owner(it.ItemID)
				if isStale[p] {
					continue
				}
				views[it.ItemID] = it.Views
				if !published[p][name][startItem{l.WindowStart, it.ItemID}][it.Views] {
					t.Fatalf("step %d %s [%s, %s]: %s at %d views from partition %d, which sent no such count from that start",
						step, name, l.WindowStart.Format(time.TimeOnly), l.WindowEnd.Format(time.TimeOnly), it.ItemID, it.Views, p)
				}
				if old, ok := prev.views[it.ItemID]; ok && prev.start.Equal(l.WindowStart) {
					held++
					if it.Views < old {
						t.Fatalf("step %d %s: under one window_start %s, %s went from %d views to %d", step, name,
							l.WindowStart.Format(time.TimeOnly), it.ItemID, old, it.Views)
					}
				}
			}
			last[name] = seen{l.WindowStart, views}
		}
	}
	t.Logf("%d merges, %d counts compared under one start, %d merges with a partition's list from before its newest", merges, held, prevUsed)
	if merges < 1000 || held < 5000 || prevUsed < 20 {
		t.Fatalf("not exercised: %d merges, %d counts compared, %d merges using a previous list", merges, held, prevUsed)
	}
}
