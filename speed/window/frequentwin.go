package window

import (
	"math"
	"slices"
	"time"

	"trending/model/topk"
	"trending/speed/frequent"
)

// Frequent windows (windowset.Frequent, issue 32): counted in Misra-Gries summaries of
// WindowConfig.Capacity counters (speed/frequent), so that every listed item carries a
// proven lower and upper bound on its views and the list a guarantee: no item with more
// than its Cutoff views is missing, whatever the stream.
//
// A sliding window keeps one summary per bucket in a frequent.Window (two-stacks sliding
// aggregation: a summary cannot subtract an expired bucket), the newest bucket as a
// running summary until it is complete, and the late events of buckets already in the
// frequent.Window beside it, one summary per bucket. A calendar period and all time keep
// one running summary. A closed minute becomes one summary (AddCounts: its exact counts,
// compacted once) merged into the bucket's or the period's.
//
// Determinism: every summary a window holds is compacted to at most Capacity counters
// after each change, so a merge of two never compacts half way and its result is a
// function of their contents alone, not of the order of their tables (which a restore
// does not keep). The state after a restore therefore answers exactly as before it.
//
// Lists: the closed summary S (the merge of the buckets in the window) gives each item a
// lower bound, its counter, and an upper bound, the counter plus S's offset D
// (List.MaxError). A live list adds the open minutes' exact counts to both. The list ranks
// by lower bound; an item it leaves out has at most the last listed lower bound plus D
// views when the list was cut, else at most D (List.Cutoff). Live lists are computed from
// the summary on each call (LiveAll too): O(Capacity) per window and publish.

// freqWindow is what Live and LiveAll ask of a frequent window.
type freqWindow interface {
	window
	live(p *Partition, ov *overlay) List
}

// minuteSummary is a closed minute as a compacted summary of capacity m.
func minuteSummary(p *Partition, f *frozen, m int) *frequent.Summary {
	s := newSummary(m)
	items := make([]string, 0, f.entries())
	counts := make([]uint64, 0, f.entries())
	f.each(func(id uint32, c uint64) {
		items = append(items, p.in.strs[id])
		counts = append(counts, c)
	})
	s.AddCounts(items, counts)
	s.Compact()
	return s
}

func newSummary(m int) *frequent.Summary {
	s, err := frequent.New(frequent.Config{Capacity: m})
	if err != nil {
		panic("BUG: window: validated frequent capacity rejected: " + err.Error())
	}
	return s
}

// mergeInto merges o into s and compacts it (both compacted: never half way).
func mergeInto(s, o *frequent.Summary) {
	if err := s.Merge(o); err != nil {
		panic("BUG: window: merge of summaries of one capacity failed: " + err.Error())
	}
	s.Compact()
}

// closedView is a frequent window's closed summary as lists read it, cached: the summary
// and its entries ranked, valid while the partition's as-of (Partition.gen), the window's
// changes (ver) and the span's start (from) stay the same. A live list per publish then
// costs the open minutes, not a merge and a sort of the summary's counters.
type closedView struct {
	gen, from int64
	ver       uint64
	ok        bool
	s         *frequent.Summary
	top       []frequent.Entry
}

// get returns the view for (gen, ver, from), computing it with summary when stale.
func (c *closedView) get(gen int64, ver uint64, from int64, summary func() *frequent.Summary) *closedView {
	if !c.ok || c.gen != gen || c.ver != ver || c.from != from {
		c.s = summary()
		c.top = c.s.Top(0)
		c.gen, c.ver, c.from, c.ok = gen, ver, from, true
	}
	return c
}

// freqList is the list of the closed view v plus the open counts d (nil: none) summing to
// dsum: its best n by lower bound, with MaxError and Cutoff. An open item's lower bound is
// its counter plus its open count. With fewer open items than counters, each open item's
// counter is looked up and, of the other counted items, the ranked entries are read until n
// of them are not open (only those can be listed); with more, each counter's open count is
// looked up instead (d, the caller's scratch, loses those items), then the open items left
// have no counter. Either way a publish costs the smaller of the two sets in lookups.
func freqList(p *Partition, v *closedView, d map[uint32]int64, dsum int64) List {
	n := p.mk()
	s := v.s
	l := List{Frequent: true, MaxError: s.MaxError(), Total: addSum(s.Total(), dsum)}
	h := topk.NewHeap(n)
	held := len(v.top) // items with a nonzero lower bound
	if len(d) <= len(v.top) {
		for id, dc := range d {
			if dc <= 0 {
				continue
			}
			item := p.in.strs[id]
			c := s.Lower(item)
			if c == 0 {
				held++
			}
			h.Offer(item, c+uint64(dc))
		}
		taken := 0
		for _, e := range v.top {
			if taken == n {
				break
			}
			if len(d) > 0 {
				if id, ok := p.in.lookup(e.Item); ok && d[id] > 0 {
					continue // offered with its open count
				}
			}
			h.Offer(e.Item, e.Lower)
			taken++
		}
	} else {
		for _, e := range v.top {
			c := e.Lower
			if id, ok := p.in.lookup(e.Item); ok {
				if dc := d[id]; dc > 0 {
					c += uint64(dc)
				}
				delete(d, id)
			}
			h.Offer(e.Item, c)
		}
		for id, dc := range d {
			if dc > 0 {
				h.Offer(p.in.strs[id], uint64(dc))
				held++
			}
		}
	}
	l.Items = h.Sorted()
	l.Cutoff = l.MaxError
	if held > len(l.Items) && len(l.Items) > 0 {
		l.Cutoff += l.Items[len(l.Items)-1].Count
	}
	return l
}

// openScratch returns the partition's map for a live list's open counts, emptied: one map
// reused by every frequent window and call, so a publish does not grow a new one.
func (p *Partition) openScratch() map[uint32]int64 {
	if p.freqOpen == nil {
		p.freqOpen = map[uint32]int64{}
	}
	clear(p.freqOpen)
	return p.freqOpen
}

// fbucket is one bucket summary of a frequent sliding window.
type fbucket struct {
	start int64
	s     *frequent.Summary
}

// freqSliding is a sliding window counted by bucket summaries (see above).
type freqSliding struct {
	cfg    WindowConfig
	b, n   int64
	win    *frequent.Window
	last   int64             // start of the newest bucket in win, noMinute when none
	part   *frequent.Summary // the newest bucket while incomplete; nil when none
	pstart int64
	late   []fbucket // late counts of buckets already in win, by start
	ver    uint64    // bumped by every change of the summaries (closedView)
	view   closedView
}

func newFreqSliding(wc WindowConfig) *freqSliding {
	fw, err := frequent.NewWindow(frequent.Config{Capacity: wc.Capacity})
	if err != nil {
		panic("BUG: window: validated frequent capacity rejected: " + err.Error())
	}
	return &freqSliding{cfg: wc, b: int64(wc.Bucket / time.Minute), n: int64(wc.Length / wc.Bucket), win: fw, last: noMinute}
}

func (w *freqSliding) conf() WindowConfig { return w.cfg }

func (w *freqSliding) start(asOf int64) int64 {
	return floorTo(asOf-1, w.b) - (w.n-1)*w.b
}

func (w *freqSliding) pushPart() {
	if err := w.win.Push(w.pstart, w.part); err != nil {
		panic("BUG: window: frequent bucket push: " + err.Error())
	}
	w.last, w.part = w.pstart, nil
}

func (w *freqSliding) advance(p *Partition) {
	w.ver++ // buckets move and expire (p.gen moves too; a restore starts a new view)
	if w.part != nil && p.asOf >= w.pstart+w.b {
		w.pushPart()
	}
	ws := w.start(p.asOf)
	w.win.Expire(ws)
	n := 0
	for n < len(w.late) && w.late[n].start < ws {
		n++
	}
	w.late = slices.Delete(w.late, 0, n)
	if w.part != nil && w.pstart < ws {
		w.part = nil
	}
}

// bucket returns the summary counting bucket bs: the running newest one, or a late
// bucket's beside the window.
func (w *freqSliding) bucket(bs int64) *frequent.Summary {
	if w.part != nil && bs > w.pstart {
		w.pushPart()
	}
	switch {
	case w.part != nil && bs == w.pstart:
		return w.part
	case w.part == nil && bs > w.last:
		w.part, w.pstart = newSummary(w.cfg.Capacity), bs
		return w.part
	}
	i, ok := slices.BinarySearchFunc(w.late, bs, func(b fbucket, s int64) int { return cmpInt64(b.start, s) })
	if !ok {
		w.late = slices.Insert(w.late, i, fbucket{bs, newSummary(w.cfg.Capacity)})
	}
	return w.late[i].s
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w *freqSliding) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	w.ver++
	bs := floorTo(f.start, w.b)
	mergeInto(w.bucket(bs), minuteSummary(p, f, w.cfg.Capacity))
	if w.part != nil && p.asOf >= w.pstart+w.b {
		w.pushPart()
	}
}

func (w *freqSliding) accepts(p *Partition, m int64) bool {
	return floorTo(m, w.b) >= w.start(p.asOf)
}

func (w *freqSliding) addLate(p *Partition, m int64, id uint32, c, _ uint64) {
	w.ver++
	s := w.bucket(floorTo(m, w.b))
	s.AddString(p.in.strs[id], c)
	s.Compact()
}

// summary is the merge of the window's buckets starting at from or later.
func (w *freqSliding) summary(from int64) *frequent.Summary {
	s := w.win.SummaryFrom(from)
	if w.part != nil && w.pstart >= from {
		mergeInto(s, w.part)
	}
	for _, b := range w.late {
		if b.start >= from {
			mergeInto(s, b.s)
		}
	}
	return s
}

// closed is the cached view of the buckets starting at from or later.
func (w *freqSliding) closed(p *Partition, from int64) *closedView {
	return w.view.get(p.gen, w.ver, from, func() *frequent.Summary { return w.summary(from) })
}

func (w *freqSliding) top(p *Partition) List {
	ws := w.start(p.asOf)
	l := freqList(p, w.closed(p, ws), nil, 0)
	l.Window = w.cfg.Name
	if p.started {
		l.Start, l.End, l.AsOf = minuteTime(ws), minuteTime(p.asOf), minuteTime(p.asOf)
	}
	return l
}

// live counts the buckets a close of every open minute would keep and the open minutes
// from the window's start then (live.go's span rule).
func (w *freqSliding) live(p *Partition, ov *overlay) List {
	ws := w.start(ov.upTo)
	d := p.openScratch()
	dsum := p.openCounts(d, max(p.asOf, ws), ov.upTo)
	l := freqList(p, w.closed(p, ws), d, dsum)
	l.Window, l.Start, l.End, l.AsOf = w.cfg.Name, minuteTime(ws), ov.asOf, ov.asOf
	return l
}

func (w *freqSliding) liveSpec(*Partition, *overlay) liveSpec {
	panic("BUG: window: liveSpec of a frequent window (Live and LiveAll ask freqWindow)")
}

func (w *freqSliding) stats(s *Stats) {
	_, sums, _ := w.win.Buckets()
	for _, x := range sums {
		s.Bytes += int64(x.Bytes())
	}
	s.Bytes *= 2 // the front stack's suffix merges
	if w.part != nil {
		s.Bytes += int64(w.part.Bytes())
	}
	for _, b := range w.late {
		s.Bytes += int64(b.s.Bytes())
	}
}

// count is the item's lower bound: what its salted shares add up from.
func (w *freqSliding) count(p *Partition, id uint32, found bool, _ uint64) uint64 {
	if !found {
		return 0
	}
	return w.closed(p, w.start(p.asOf)).s.Lower(p.in.strs[id])
}

func (w *freqSliding) reach(p *Partition) int64 { return w.start(p.asOf) }

// freqRunning is a frequent calendar window (one summary for the open period) or, with
// all set, the all-time window (one summary ever).
type freqRunning struct {
	cfg          WindowConfig
	all          bool
	s            *frequent.Summary
	opened       bool
	pstart, pend int64
	ver          uint64 // bumped by every change of s (closedView)
	view         closedView
}

func newFreqRunning(wc WindowConfig, all bool) *freqRunning {
	return &freqRunning{cfg: wc, all: all, s: newSummary(wc.Capacity)}
}

func (w *freqRunning) conf() WindowConfig { return w.cfg }

func (w *freqRunning) advance(p *Partition) {
	if !w.all && w.opened && p.asOf >= w.pend {
		l := w.list(p, true)
		l.Tracked = p.closedTracked(w, l.Start)
		p.closed = append(p.closed, l)
		w.s.Reset()
		w.opened = false
		w.ver++ // the view cached for the final list holds the closed period
	}
}

func (w *freqRunning) ensure(m int64) {
	if !w.all && !w.opened {
		w.opened = true
		w.pstart = w.cfg.Span.StartMinute(m)
		w.pend = w.cfg.Span.EndMinute(w.pstart)
	}
}

func (w *freqRunning) accepts(p *Partition, m int64) bool {
	switch {
	case w.all:
		return true
	case w.opened:
		return m >= w.pstart
	}
	return w.cfg.Span.EndMinute(w.cfg.Span.StartMinute(m)) > p.asOf
}

func (w *freqRunning) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	w.ver++
	w.ensure(f.start)
	mergeInto(w.s, minuteSummary(p, f, w.cfg.Capacity))
}

func (w *freqRunning) addLate(p *Partition, m int64, id uint32, c, _ uint64) {
	w.ver++
	w.ensure(m)
	w.s.AddString(p.in.strs[id], c)
	w.s.Compact()
}

func (w *freqRunning) top(p *Partition) List { return w.list(p, false) }

// closed is the cached view of the running summary (an empty one while no period is open).
func (w *freqRunning) closed(p *Partition) *closedView {
	return w.view.get(p.gen, w.ver, 0, func() *frequent.Summary {
		if !w.all && !w.opened {
			return newSummary(w.cfg.Capacity)
		}
		return w.s
	})
}

func (w *freqRunning) list(p *Partition, final bool) List {
	l := freqList(p, w.closed(p), nil, 0)
	l.Window, l.Final = w.cfg.Name, final
	if !p.started {
		return l
	}
	if w.all {
		l.Start, l.End, l.AsOf = allTimeStart, minuteTime(p.asOf), minuteTime(p.asOf)
		return l
	}
	start := w.pstart
	if !w.opened {
		start = w.cfg.Span.StartMinute(p.asOf)
	}
	end := w.cfg.Span.EndMinute(start)
	l.Start, l.End, l.AsOf = minuteTime(start), minuteTime(end), minuteTime(min(p.asOf, end))
	return l
}

func (w *freqRunning) live(p *Partition, ov *overlay) List {
	d := p.openScratch()
	if w.all {
		dsum := p.openCounts(d, p.asOf, ov.upTo)
		l := freqList(p, w.closed(p), d, dsum)
		l.Window, l.Start, l.End, l.AsOf = w.cfg.Name, allTimeStart, ov.asOf, ov.asOf
		return l
	}
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	dsum := p.openCounts(d, max(start, p.asOf), min(end, ov.upTo))
	meta := calendarMeta(w.cfg.Name, start, end, ov)
	l := freqList(p, w.closed(p), d, dsum)
	l.Window, l.Start, l.End, l.AsOf = meta.Window, meta.Start, meta.End, meta.AsOf
	return l
}

func (w *freqRunning) liveSpec(*Partition, *overlay) liveSpec {
	panic("BUG: window: liveSpec of a frequent window (Live and LiveAll ask freqWindow)")
}

func (w *freqRunning) stats(s *Stats) { s.Bytes += int64(w.s.Bytes()) }

func (w *freqRunning) count(p *Partition, id uint32, found bool, _ uint64) uint64 {
	if !found || (!w.all && !w.opened) {
		return 0
	}
	return w.s.Lower(p.in.strs[id])
}

func (w *freqRunning) reach(p *Partition) int64 {
	switch {
	case w.all:
		return math.MinInt64
	case w.opened:
		return w.pstart
	}
	return p.asOf
}
