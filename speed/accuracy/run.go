package accuracy

import (
	"context"
	"fmt"
	"sort"
	"time"

	"trending/internal/stream"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/window"
)

// Run generates cfg's stream, feeds it to cfg.Partitions window partitions
// and compares every window with the truth. It returns ctx's error if ctx
// is cancelled first.
func Run(ctx context.Context, cfg Config) (Report, error) {
	began := time.Now()
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	scaled := cfg.Window.Sketch.Width == 0
	cfg = cfg.derived()
	gen, err := stream.NewGenerator(cfg.Stream)
	if err != nil {
		return Report{}, err
	}
	sc := gen.Config()
	parts := make([]*window.Partition, cfg.Partitions)
	for i := range parts {
		if parts[i], err = window.New(cfg.Window); err != nil {
			return Report{}, err
		}
	}
	wcfg := parts[0].Config()
	h := &harness{cfg: cfg, k: wcfg.K, truth: stream.NewTruth(), parts: parts, finals: map[finalKey][]partList{}}
	rep := Report{
		Items: sc.Items, Zipf: sc.Zipf, Seed: sc.Seed, Start: sc.Start, Span: stream.FormatSpan(cfg.Span),
		Partitions: cfg.Partitions, K: wcfg.K, M: wcfg.M, SketchWidth: wcfg.Sketch.Width, SketchDepth: wcfg.Sketch.Depth,
		Scaled: scaled, TargetRatio: cfg.TargetRatio,
		PlannedRatio: Ratio(wcfg.Sketch.Width, sc.Items, sc.Zipf, wcfg.K, cfg.Partitions),
	}
	for _, v := range sc.Viral {
		rep.Viral = append(rep.Viral, v.String())
	}

	seconds := int64(cfg.Span / time.Second)
	next := 1
	pointAt := func(j int) int64 { return seconds * int64(j) / int64(cfg.Points) }
	var recs []stream.Record
	for sec := int64(1); ; sec++ {
		var ok bool
		if recs, ok = gen.NextSecond(recs[:0]); !ok {
			break
		}
		for _, r := range recs {
			h.add(r.Event)
		}
		for next <= cfg.Points && sec >= pointAt(next) {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			rep.Rows = append(rep.Rows, h.point(fmt.Sprintf("%d%%", 100*next/cfg.Points))...)
			next++
		}
		if sec%3600 == 0 {
			if err := ctx.Err(); err != nil {
				return Report{}, err
			}
			if cfg.Progress != nil {
				cfg.Progress(time.Duration(sec)*time.Second, cfg.Span)
			}
		}
	}
	rep.Rows = append(rep.Rows, h.finalRows(wcfg)...)
	rep.Views, rep.Events = h.truth.Views(), h.truth.Events()
	for _, p := range parts {
		st := p.Stats()
		rep.Late += st.Late
		rep.TooLate += st.TooLate
	}
	rep.Elapsed = time.Since(began)
	return rep, nil
}

type finalKey struct {
	window string
	start  time.Time
}

type harness struct {
	cfg    Config
	k      int
	truth  *stream.Truth
	parts  []*window.Partition
	finals map[finalKey][]partList
}

// add counts ev in the truth and in its partition, and measures any
// calendar list that closed against the truth as it is at that moment.
func (h *harness) add(ev event.Event) {
	h.truth.Add(ev)
	p := stream.PartitionOf(ev.ItemID, len(h.parts))
	h.parts[p].Add(ev)
	for _, l := range h.parts[p].TakeClosed() {
		c := h.truth.Range(l.Start, l.End)
		pl := h.measure(p, l, c, nil)
		key := finalKey{l.Window, l.Start}
		h.finals[key] = append(h.finals[key], pl)
	}
}

// measure pairs partition p's list with the truth c of its range.
// tops, when not nil, caches the true top K of every partition of c.
func (h *harness) measure(p int, l window.List, c stream.Counts, tops [][]topk.Entry) partList {
	pl := partList{part: p, list: l, trueOf: make(map[string]uint64, len(l.Items))}
	if tops != nil {
		pl.trueTop = tops[p]
	} else {
		pl.trueTop = topsByPartition(c, h.k, len(h.parts))[p]
	}
	for _, e := range l.Items {
		pl.trueOf[e.Item] = c.Get(e.Item)
	}
	return pl
}

// topsByPartition returns the true top k of every partition's items in c,
// in one pass.
func topsByPartition(c stream.Counts, k, partitions int) [][]topk.Entry {
	heaps := make([]*topk.Heap, partitions)
	for i := range heaps {
		heaps[i] = topk.NewHeap(k)
	}
	c.Each(func(item string, n uint64) { heaps[stream.PartitionOf(item, partitions)].Offer(item, n) })
	out := make([][]topk.Entry, partitions)
	for i, hp := range heaps {
		out[i] = hp.Sorted()
	}
	return out
}

type rangeKey struct{ from, to time.Time }

type rangeTruth struct {
	c    stream.Counts
	tops [][]topk.Entry
}

// point compares every window's current lists with the truth.
func (h *harness) point(at string) []Row {
	cache := map[rangeKey]rangeTruth{}
	var rows []Row
	for _, wc := range h.parts[0].Config().Windows {
		var pls []partList
		var asOf time.Time
		for p, part := range h.parts {
			l, err := part.Top(wc.Name)
			if err != nil {
				panic("BUG: accuracy: configured window unknown to its partition: " + err.Error())
			}
			// A list covers [Start, End) up to its AsOf: the open calendar
			// period so far, or the sliding window.
			rk := rangeKey{l.Start, minTime(l.End, l.AsOf)}
			rt, ok := cache[rk]
			if !ok {
				rt.c = h.truth.Range(rk.from, rk.to)
				rt.tops = topsByPartition(rt.c, h.k, len(h.parts))
				cache[rk] = rt
			}
			pls = append(pls, h.measure(p, l, rt.c, rt.tops))
			asOf = maxTime(asOf, l.AsOf)
		}
		rows = append(rows, rowOf(wc, at, asOf, []listResult{compare(h.k, len(h.parts), pls)}))
	}
	return rows
}

// finalRows folds every closed calendar period into one row per window.
func (h *harness) finalRows(wcfg window.Config) []Row {
	keys := make([]finalKey, 0, len(h.finals))
	for k := range h.finals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].start.Before(keys[j].start) })
	var rows []Row
	for _, wc := range wcfg.Windows {
		if wc.Kind != windowset.Calendar {
			continue
		}
		var rs []listResult
		for _, k := range keys {
			if k.window == wc.Name {
				rs = append(rs, compare(h.k, len(h.parts), h.finals[k]))
			}
		}
		if len(rs) > 0 {
			rows = append(rows, rowOf(wc, "final", time.Time{}, rs))
		}
	}
	return rows
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
