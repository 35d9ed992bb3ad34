package worker

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"trending/internal/stream"
	"trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/speed/window"
)

// BenchmarkGroupMemory measures the memory the lists per group value take, per configured
// window: one partition counts 70 minutes of a generated stream (500 views a second over
// 20,000 items, 40 servers in eu, eu, us, apac: eu has half the views) in its window state
// alone, then again with a state per region beside it (the worker's groupStates, as
// handle() feeds it), and reports the heap each takes after a GC:
//
//	global-B    the partition's state of every event
//	groups-B    the three regions' states together
//	B/group     groups-B / 3
//	groups/global  their ratio: exact windows grow with the (region, item) pairs, sketch
//	            windows with the number of regions (each its sketches at the group width)
//	pairs/item  the (region, item) pairs of a minute per distinct item of the minute
//	            (plan's --group-pairs for this stream)
//	B/pair      exact windows: groups-B per (bucket, region, item) entry the group states
//	            hold (window.Stats().Entries); plan's --entry-bytes is 50
//	global-B/entry  the same of the partition's own state, per (bucket, item) entry
func BenchmarkGroupMemory(b *testing.B) {
	sc := stream.DefaultConfig()
	sc.Items, sc.Rate, sc.Servers, sc.Duration = 20_000, 500, 40, 70*time.Minute
	sc.Start, sc.Regions = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC), []string{"eu", "eu", "us", "apac"}
	g, err := stream.NewGenerator(sc)
	if err != nil {
		b.Fatal(err)
	}
	var evs []event.Event
	for recs, ok := g.NextSecond(nil); ok; recs, ok = g.NextSecond(recs[:0]) {
		for _, r := range recs {
			evs = append(evs, r.Event)
		}
	}
	// The (region, item) pairs and the distinct items of each minute.
	type pair struct{ region, item string }
	pairs, items := map[int64]map[pair]bool{}, map[int64]map[string]bool{}
	for _, ev := range evs {
		m := ev.TS.Unix() / 60
		if pairs[m] == nil {
			pairs[m], items[m] = map[pair]bool{}, map[string]bool{}
		}
		pairs[m][pair{ev.Region, ev.ItemID}] = true
		items[m][ev.ItemID] = true
	}
	var np, ni int
	for m := range pairs {
		np, ni = np+len(pairs[m]), ni+len(items[m])
	}
	regions := windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us", "apac"}}
	for _, wc := range []window.WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: model.Hour, Mode: windowset.Exact},
		{Name: "month", Kind: windowset.Sliding, Length: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Sketch},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
	} {
		b.Run(wc.Name, func(b *testing.B) {
			cfg := window.DefaultConfig()
			cfg.Windows, cfg.Sketch.Width = []window.WindowConfig{wc}, 1<<14 // up's sketches; the groups' at 1<<12
			gcfg := cfg
			gcfg.Sketch.Width = 1 << 12
			heap := func() uint64 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			count := func(withGroups bool) (uint64, *window.Partition, *groupStates) {
				before := heap()
				p, err := window.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				var gs *groupStates
				if withGroups {
					gs = newGroupStates(regions, gcfg)
				}
				for _, ev := range evs {
					item := []byte(ev.ItemID)
					ms := ev.TS.UnixMilli()
					p.AddBytes(item, ev.Count, ms)
					if gs != nil {
						gs.add(p, []byte(ev.Region), item, ev.Count, ms, false)
					}
				}
				return heap() - before, p, gs
			}
			b.ReportAllocs()
			var global, both uint64
			var entries, globalEntries int
			for range b.N {
				var p *window.Partition
				global, p, _ = count(false)
				globalEntries = p.Stats().Entries
				runtime.KeepAlive(p)
				var gs *groupStates
				both, p, gs = count(true)
				runtime.KeepAlive(p)
				entries = 0
				for _, st := range gs.states {
					entries += st.Stats().Entries
				}
			}
			groups := float64(both) - float64(global)
			b.ReportMetric(float64(global), "global-B")
			b.ReportMetric(groups, "groups-B")
			b.ReportMetric(groups/3, "B/group")
			b.ReportMetric(groups/float64(global), "groups/global")
			b.ReportMetric(float64(np)/float64(ni), "pairs/item")
			if wc.Mode == windowset.Exact && entries > 0 {
				b.ReportMetric(groups/float64(entries), "B/pair")
				b.ReportMetric(float64(global)/float64(globalEntries), "global-B/entry")
			}
			b.Logf("%s: %d events, %d minutes; global %s B, groups %s B", wc.Name, len(evs), len(pairs), strconv.FormatUint(global, 10), strconv.FormatFloat(groups, 'f', 0, 64))
		})
	}
}
