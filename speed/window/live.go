package window

import (
	"fmt"
	"math"
	"slices"
	"time"

	"trending/model/topk"
	"trending/speed/sketch"
)

// Live lists: the open minutes on top of the closed ones.
//
// Top answers as of AsOf, the last closed minute, so an event waits for its minute to close
// (its end plus the allowed lateness) before any list shows it. Live answers as if every open
// minute had closed now: each window's running state, plus the open minutes' counts, minus
// the buckets that closing them would expire. It is an overlay computed from the state on
// demand and never applied to it, so checkpoints, replays and the closed-minute arithmetic
// are exactly those of Top; only the answer is fresher. Late events follow the usual rules
// (the overlay has nothing to do with them: they are in the state already).
//
// Exact windows rank their totals with the overlay's changes exactly: the top n of the
// adjusted counts is among the top n+|changed| of the unadjusted ones and the changed
// items themselves. Sketch windows add the open minutes' exact counts to their candidates'
// estimates and estimate without the buckets that would expire
// (Sketch.EstimateHashWithout); an open item that is no candidate becomes one when its
// minute closes, as today. Closing a minute adds all its items to the sketch at once, so a
// candidate's live estimate is at most the one it will have then. A calendar window adds
// the open minutes of its current period only.
//
// Live computes a list from scratch: a scan of the window's totals and of every open item.
// LiveAll, which the speed worker calls every publish (every second or so), does that once
// per closed minute and otherwise only looks at the events counted since its last call
// (liveCache): between two closings an exact window's live counts only grow (an open or a
// late event adds; what expires is fixed by the minute the open minutes reach), so the
// n-th best count at the last rebuild is a floor no item under it can rise past without an
// event of its own.

// overlay is what closing every open minute now would do, shared by the windows of one call.
type overlay struct {
	upTo int64     // the asOf once the open minutes closed: the minute after the newest
	asOf time.Time // the newest event time counted
}

func (p *Partition) overlay() overlay {
	ov := overlay{upTo: p.asOf, asOf: time.UnixMilli(max(p.maxSeen, p.asOf*minuteMs)).UTC()}
	if n := len(p.open); n > 0 {
		ov.upTo = p.open[n-1].minute + 1
	}
	return ov
}

// liveSpec is what one window's live list is made of (window.liveSpec builds it).
type liveSpec struct {
	meta   List  // the list without Items, Total and Bound
	lo, hi int64 // the open minutes counted: [lo, hi)

	// Exact windows: the running totals and the buckets closing the open minutes would
	// expire (and a sliding window's partial bucket, when even that would).
	totals   []uint64
	sum      uint64
	expiring []*frozen
	partial  map[uint32]uint64
	// inX reports whether a late event of minute m lands in an expiring bucket.
	inX func(m int64) bool

	// Sketch windows: the sketch, its candidates and the expiring bucket sketches.
	sk      *sketch.Sketch
	cands   *candidates
	without []*sketch.Sketch
}

func (s *liveSpec) exact() bool { return s.sk == nil }

// Live returns the named window's list as if every open minute had closed now (see above):
// AsOf is the newest event time counted and End is AsOf for sliding and all-time windows.
// The state is not changed.
func (p *Partition) Live(name string) (List, error) {
	w, ok := p.byName[name]
	if !ok {
		return List{}, fmt.Errorf("live %q: %w", name, ErrUnknownWindow)
	}
	if !p.started {
		return w.top(p), nil
	}
	ov := p.overlay()
	if dw, ok := w.(decayedWindow); ok {
		return dw.live(p, &ov), nil
	}
	spec := w.liveSpec(p, &ov)
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, spec.lo, spec.hi)
	l := spec.meta
	if spec.exact() {
		for _, f := range spec.expiring {
			dsum -= subtract(d, f)
		}
		for id, c := range spec.partial {
			d[id] -= int64(c)
			dsum -= int64(c)
		}
		l.Total, l.Items = addSum(spec.sum, dsum), p.topChanged(spec.totals, d)
		xs := p.expiringCounts(&spec)
		l.Tracked = p.liveTracked(&spec, func(id uint32) uint64 { return xs[id] })
		return l, nil
	}
	for _, o := range spec.without {
		dsum -= int64(o.Total())
	}
	l.Total = addSum(spec.sk.Total(), dsum)
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, l.Total)
	l.Bound = &b
	l.Items = topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id := range spec.cands.set {
			if e := spec.sk.EstimateHashWithout(p.hash(id), spec.without...) + uint64(max(d[id], 0)); e > 0 {
				offer(id, e)
			}
		}
	}, p.in.strs)
	l.Tracked = p.liveTracked(&spec, nil)
	return l, nil
}

// openCounts adds the counts of the open minutes in [lo, hi) to d and returns their sum.
func (p *Partition) openCounts(d map[uint32]int64, lo, hi int64) int64 {
	var sum int64
	for i := range p.open {
		o := &p.open[i]
		if o.minute < lo || o.minute >= hi {
			continue
		}
		o.each(func(id uint32, c uint64) {
			d[id] += int64(c)
			sum += int64(c)
		})
	}
	return sum
}

// openCount is id's count in the open minutes of [lo, hi).
func (p *Partition) openCount(id uint32, lo, hi int64) uint64 {
	var n uint64
	for i := range p.open {
		o := &p.open[i]
		if o.minute < lo || o.minute >= hi {
			continue
		}
		if g := o.g; g != nil {
			if int(id) < len(g.sparse) {
				if j := g.sparse[id]; int(j) < len(g.ids) && g.ids[j] == id {
					n += g.counts[j]
				}
			}
			continue
		}
		n += o.counts[id]
	}
	return n
}

// subtract takes a bucket that would expire off d and returns its sum.
func subtract(d map[uint32]int64, f *frozen) int64 {
	var sum int64
	f.each(func(id uint32, c uint64) {
		d[id] -= int64(c)
		sum += int64(c)
	})
	return sum
}

// topChanged is the best p.mk() items of totals changed by d (see above).
func (p *Partition) topChanged(totals []uint64, d map[uint32]int64) []topk.Entry {
	n := p.mk()
	h := topk.NewHeap(n)
	for _, e := range p.topIDs(totals, n+len(d)) {
		if _, changed := d[e.id]; !changed {
			h.Offer(p.in.strs[e.id], e.c)
		}
	}
	for id, dc := range d {
		if c := int64(at(totals, id)) + dc; c > 0 {
			h.Offer(p.in.strs[id], uint64(c))
		}
	}
	return h.Sorted()
}

// idCount is an item handle and a count.
type idCount struct {
	id uint32
	c  uint64
}

// topIDs is the best n nonzero totals, best first (ties by item).
func (p *Partition) topIDs(totals []uint64, n int) []idCount {
	es := topOf(n, func(offer func(uint32, uint64)) {
		for id, c := range totals {
			if c != 0 {
				offer(uint32(id), c)
			}
		}
	}, p.in.strs)
	out := make([]idCount, len(es))
	for i, e := range es {
		id, _ := p.in.lookup(e.Item)
		out[i] = idCount{id, e.Count}
	}
	return out
}

func at(totals []uint64, id uint32) uint64 {
	if int(id) < len(totals) {
		return totals[id]
	}
	return 0
}

// addSum applies a signed change to a window's total.
func addSum(sum uint64, d int64) uint64 {
	if d < 0 && uint64(-d) > sum {
		panic("BUG: window: live total below zero")
	}
	return uint64(int64(sum) + d)
}

func (w *exactSliding) liveSpec(p *Partition, ov *overlay) liveSpec {
	ws := w.start(ov.upTo)
	s := liveSpec{lo: p.asOf, hi: ov.upTo, totals: w.totals, sum: w.sum,
		meta: List{Window: w.cfg.Name, Exact: true, Start: minuteTime(ws), End: ov.asOf, AsOf: ov.asOf}}
	if ov.upTo == p.asOf {
		return s
	}
	if w.b == 1 {
		for _, f := range p.minutes {
			if f.start >= ws {
				break
			}
			if f.start >= w.lo {
				s.expiring = append(s.expiring, f)
			}
		}
		lo := w.lo
		s.inX = func(m int64) bool { return m >= lo && m < ws }
		return s
	}
	for _, f := range w.ring {
		if f.start >= ws {
			break
		}
		s.expiring = append(s.expiring, f)
	}
	if w.hasPartial && w.pstart < ws {
		s.partial = w.partial
	}
	b, start := w.b, w.start(p.asOf)
	s.inX = func(m int64) bool { return m >= start && floorTo(m, b) < ws }
	return s
}

// livePeriod is the calendar period a calendar window's live list answers for: the open
// one, else the one the oldest open minute would open, else the one holding AsOf.
func (p *Partition) livePeriod(span string, opened bool, pstart int64) (start, end int64) {
	switch {
	case opened:
		start = pstart
	case len(p.open) > 0:
		start = spanStart(span, p.open[0].minute)
	default:
		start = spanStart(span, p.asOf)
	}
	return start, spanEnd(span, start)
}

// calendarMeta is a calendar period's live list without its counts. AsOf is the newest
// event time counted: the overlay's, or the period's end once the open minutes reach past
// it (minutes of the next period wait for it to open).
func calendarMeta(name string, start, end int64, ov *overlay) List {
	l := List{Window: name, Start: minuteTime(start), End: minuteTime(end), AsOf: ov.asOf}
	if !ov.asOf.Before(l.End) {
		l.AsOf = l.End
	}
	return l
}

func (w *exactCalendar) liveSpec(p *Partition, ov *overlay) liveSpec {
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	s := liveSpec{meta: calendarMeta(w.cfg.Name, start, end, ov), lo: max(start, p.asOf), hi: min(end, ov.upTo)}
	s.meta.Exact = true
	if w.opened {
		s.totals, s.sum = w.totals, w.sum
	}
	return s
}

func (w *exactAll) liveSpec(p *Partition, ov *overlay) liveSpec {
	return liveSpec{meta: List{Window: w.cfg.Name, Exact: true, Start: allTimeStart, End: ov.asOf, AsOf: ov.asOf}, lo: p.asOf, hi: ov.upTo, totals: w.totals, sum: w.sum}
}

func (w *sketchSliding) liveSpec(p *Partition, ov *overlay) liveSpec {
	ws := w.start(ov.upTo)
	s := liveSpec{meta: List{Window: w.cfg.Name, Start: minuteTime(ws), End: ov.asOf, AsOf: ov.asOf}, lo: p.asOf, hi: ov.upTo, sk: w.running, cands: &w.cands}
	for _, b := range w.buckets {
		if b.start >= ws || ov.upTo == p.asOf {
			break
		}
		s.without = append(s.without, b.sk)
	}
	return s
}

func (w *sketchCalendar) liveSpec(p *Partition, ov *overlay) liveSpec {
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	return liveSpec{meta: calendarMeta(w.cfg.Name, start, end, ov), lo: max(start, p.asOf), hi: min(end, ov.upTo), sk: w.sk, cands: &w.cands}
}

func (w *sketchAll) liveSpec(p *Partition, ov *overlay) liveSpec {
	return liveSpec{meta: List{Window: w.cfg.Name, Start: allTimeStart, End: ov.asOf, AsOf: ov.asOf}, lo: p.asOf, hi: ov.upTo, sk: w.sk, cands: &w.cands}
}

// Incremental live lists (LiveAll).

// touch is one counted event since the last LiveAll: its item, count and minute (an open
// minute, or a closed one for a late event).
type touch struct {
	id uint32
	c  uint32
	m  int64
}

// maxTouches bounds the events remembered between two LiveAll calls; past it the next call
// rebuilds every list from scratch.
const maxTouches = 1 << 20

// logTouch remembers a counted event for LiveAll, once LiveAll has been called.
func (p *Partition) logTouch(id uint32, c uint64, m int64) {
	if p.live == nil || p.live.overflow {
		return
	}
	if len(p.live.touches) == maxTouches {
		p.live.overflow, p.live.touches = true, nil
		return
	}
	p.live.touches = append(p.live.touches, touch{id, uint32(min(c, math.MaxUint32)), m})
}

// liveState is LiveAll's memory: the events since its last call and one cache per window.
// None of it is in a snapshot: it is rebuilt from the state.
type liveState struct {
	touches  []touch
	overflow bool
	caches   []liveCache
	marked   map[uint32]bool // scratch: the items touched since the last call
	distinct []uint32        // scratch: the same, in first-touch order
	bits     bitset          // scratch of rebuild: the items the overlay changes
	rebuilds int             // caches rebuilt, for benchmarks
	vals     []idCount       // scratch of rebuild
}

// liveCache is one window's live list at its last rebuild plus what happened since: valid
// while the partition's closings (gen), the open minutes' reach (upTo) and, for sketch
// windows, the candidate set's epoch are those it was built at.
type liveCache struct {
	built      bool
	gen, upTo  int64
	epoch      uint64
	calOpened  bool // a calendar window was open at the rebuild
	spec       liveSpec
	floor      uint64            // exact: the n-th best live count at the rebuild
	raw        []topk.Entry      // exact: best totals unchanged by the overlay, best first
	rawAt      map[uint32]int    // exact: index in raw
	gone       []bool            // exact: raw entries changed since the rebuild
	vals       map[uint32]uint64 // live counts: exact, of changed items at or above floor; sketch, every candidate's
	xs         map[uint32]uint64 // exact: the expiring buckets' counts
	est        map[uint32]uint64 // sketch: candidates' estimates without the expiring buckets
	oSum, xSum uint64
	nGone      int
	// lastMin is the n-th count of the last list: counts only grow between rebuilds, so
	// nothing under it can be in the next list.
	lastMin uint64
}

// LiveAll returns Live of every window, in configuration order, with the work of each call
// proportional to the events counted since the previous one (see above). The lists are those
// Live gives for exact windows; a sketch window's estimates for candidates untouched since
// the last closing are those of that moment (still upper bounds of the true counts, within
// the window's bound).
func (p *Partition) LiveAll() []List {
	out := make([]List, len(p.wins))
	if !p.started {
		for i, w := range p.wins {
			out[i] = w.top(p)
		}
		return out
	}
	if p.live == nil {
		p.live = &liveState{caches: make([]liveCache, len(p.wins)), marked: map[uint32]bool{}}
	}
	ls := p.live
	ov := p.overlay()
	clear(ls.marked)
	ls.distinct = ls.distinct[:0]
	for _, t := range ls.touches {
		if !ls.marked[t.id] {
			ls.marked[t.id] = true
			ls.distinct = append(ls.distinct, t.id)
		}
	}
	r := &liveRound{p: p, distinct: ls.distinct, aggs: map[[2]int64]*openAgg{}}
	for i, w := range p.wins {
		if dw, ok := w.(decayedWindow); ok {
			out[i] = dw.liveAll(p, &ov, ls.touches, ls.distinct, ls.overflow)
			continue
		}
		c := &ls.caches[i]
		spec := w.liveSpec(p, &ov)
		switch {
		case !c.built || ls.overflow || c.gen != p.gen || (c.upTo != ov.upTo && !sameExpiry(&c.spec, &spec)) || (spec.cands != nil && spec.cands.epoch != c.epoch):
			c.rebuild(p, spec, r)
		case spec.exact() && !c.calOpened && spec.totals != nil:
			c.rebuild(p, spec, r) // a late event opened the calendar period
		default:
			c.spec = spec // the totals' slice may have grown
			if !c.apply(p, ls.touches, r) {
				c.rebuild(p, spec, r)
			}
		}
		c.gen, c.upTo = p.gen, ov.upTo
		out[i] = c.list(p, spec)
	}
	ls.touches, ls.overflow = ls.touches[:0], false
	return out
}

// liveRound is what the windows of one LiveAll call share: the open minutes' counts over a
// range of minutes, worked out once per range (most windows count [asOf, upTo)).
type liveRound struct {
	p        *Partition
	distinct []uint32
	aggs     map[[2]int64]*openAgg
}

type openAgg struct {
	o      map[uint32]int64 // every open item's count; built on the first rebuild that needs it
	sum    int64
	summed bool     // sum is set (it is whenever o is)
	counts []uint64 // the count of each of distinct; built on the first apply that needs it
}

func (r *liveRound) agg(lo, hi int64) *openAgg {
	k := [2]int64{lo, hi}
	a := r.aggs[k]
	if a == nil {
		a = &openAgg{}
		r.aggs[k] = a
	}
	return a
}

// open is every open item's count in [lo, hi), and their sum. Callers must not change it.
func (r *liveRound) open(lo, hi int64) (map[uint32]int64, int64) {
	a := r.agg(lo, hi)
	if a.o == nil {
		a.o = make(map[uint32]int64)
		a.sum, a.summed = r.p.openCounts(a.o, lo, hi), true
	}
	return a.o, a.sum
}

// sum is the sum of the open minutes' counts in [lo, hi).
func (r *liveRound) sum(lo, hi int64) uint64 {
	a := r.agg(lo, hi)
	if a.o == nil && !a.summed {
		for i := range r.p.open {
			o := &r.p.open[i]
			if o.minute >= lo && o.minute < hi {
				o.each(func(_ uint32, c uint64) { a.sum += int64(c) })
			}
		}
		a.summed = true
	}
	return uint64(a.sum)
}

// counts is the count in [lo, hi) of each item of r.distinct.
func (r *liveRound) counts(lo, hi int64) []uint64 {
	a := r.agg(lo, hi)
	if a.counts == nil {
		a.counts = make([]uint64, len(r.distinct))
		for i, id := range r.distinct {
			a.counts[i] = r.p.openCount(id, lo, hi)
		}
	}
	return a.counts
}

// sameExpiry reports whether two specs of one window expire the same buckets: then the open
// minutes reaching a new minute only adds counts (its events are all among the touches
// since the last call, as the minute is newer than that call), and the cache holds.
func sameExpiry(a, b *liveSpec) bool {
	return slices.Equal(a.expiring, b.expiring) && slices.Equal(a.without, b.without) && (a.partial == nil) == (b.partial == nil) && a.lo == b.lo
}

func (c *liveCache) rebuild(p *Partition, spec liveSpec, r *liveRound) {
	p.live.rebuilds++
	*c = liveCache{built: true, spec: spec, vals: map[uint32]uint64{}, calOpened: spec.totals != nil}
	if !spec.exact() {
		c.oSum = r.sum(spec.lo, spec.hi)
		c.epoch = spec.cands.epoch
		c.est = make(map[uint32]uint64, len(spec.cands.set))
		for id := range spec.cands.set {
			e := spec.sk.EstimateHashWithout(p.hash(id), spec.without...)
			c.est[id] = e
			c.vals[id] = e + p.openCount(id, spec.lo, spec.hi)
		}
		return
	}
	o, osum := r.open(spec.lo, spec.hi)
	c.oSum = uint64(osum)
	c.xs = make(map[uint32]uint64)
	for _, f := range spec.expiring {
		f.each(func(id uint32, n uint64) { c.xs[id] += n; c.xSum += n })
	}
	for id, n := range spec.partial {
		c.xs[id] += n
		c.xSum += n
	}
	// The best totals of items the overlay leaves alone, with room for some to be touched
	// before the next rebuild (list rebuilds when too many were).
	n := p.mk()
	bits := p.changedBits(len(spec.totals))
	for id := range o {
		bits.set(id)
	}
	for id := range c.xs {
		bits.set(id)
	}
	c.raw = topOf(rawSlack*n, func(offer func(uint32, uint64)) {
		for id, t := range spec.totals {
			if t != 0 && !bits.has(uint32(id)) {
				offer(uint32(id), t)
			}
		}
	}, p.in.strs)
	bits.reset(o, c.xs)
	// Every changed item's live count, once; the n-th best of those and the untouched best
	// is the floor.
	h := topk.NewHeap(n)
	for _, e := range c.raw[:min(n, len(c.raw))] {
		h.Offer(e.Item, e.Count)
	}
	vals := p.live.vals[:0]
	offer := func(id uint32, v uint64) {
		vals = append(vals, idCount{id, v})
		if m, ok := h.Min(); !h.Full() || !ok || v >= m.Count {
			h.Offer(p.in.strs[id], v)
		}
	}
	for id, oc := range o {
		var x uint64
		if len(c.xs) > 0 {
			x = c.xs[id]
		}
		offer(id, uint64(max(int64(at(spec.totals, id))+oc-int64(x), 0)))
	}
	for id, x := range c.xs {
		if _, ok := o[id]; !ok {
			offer(id, uint64(max(int64(at(spec.totals, id))-int64(x), 0)))
		}
	}
	if h.Full() {
		m, _ := h.Min()
		c.floor = m.Count
	}
	for _, e := range vals {
		if e.c >= c.floor && e.c > 0 {
			c.vals[e.id] = e.c
		}
	}
	p.live.vals = vals
	c.rawAt = make(map[uint32]int, len(c.raw))
	for i, e := range c.raw {
		id, _ := p.in.lookup(e.Item)
		c.rawAt[id] = i
	}
	c.gone = make([]bool, len(c.raw))
}

// rawSlack is how many times n of the best untouched totals a rebuild keeps: the items of
// the open minute are mostly the popular ones, so the best untouched items are touched soon
// after, and each one touched leaves one fewer for the list.
const rawSlack = 16

// bitset marks item handles.
type bitset []uint64

func (b bitset) set(id uint32) {
	if int(id>>6) < len(b) {
		b[id>>6] |= 1 << (id & 63)
	}
}
func (b bitset) has(id uint32) bool { return int(id>>6) < len(b) && b[id>>6]&(1<<(id&63)) != 0 }

// reset clears the bits of the keys of ms.
func (b bitset) reset(ms ...any) {
	for _, m := range ms {
		switch m := m.(type) {
		case map[uint32]int64:
			for id := range m {
				if int(id>>6) < len(b) {
					b[id>>6] = 0
				}
			}
		case map[uint32]uint64:
			for id := range m {
				if int(id>>6) < len(b) {
					b[id>>6] = 0
				}
			}
		}
	}
}

// changedBits is a cleared bitset for n handles, reused between calls.
func (p *Partition) changedBits(n int) bitset {
	words := (n + 63) / 64
	if cap(p.live.bits) < words {
		p.live.bits = make(bitset, words)
	}
	return p.live.bits[:words]
}

// apply takes the events since the last call (ts; r.distinct are their items) into the
// cache. It reports false when too many of the cached best totals were touched for the list
// to be sure of its last entries: the cache must be rebuilt.
func (c *liveCache) apply(p *Partition, ts []touch, r *liveRound) bool {
	s := &c.spec
	for _, t := range ts {
		if t.m >= p.asOf {
			if t.m >= s.lo && t.m < s.hi {
				c.oSum += uint64(t.c)
			}
			continue
		}
		// A late event: it is in the totals (or the sketch) already.
		if s.exact() && s.inX != nil && s.inX(t.m) {
			c.xs[t.id] += uint64(t.c)
			c.xSum += uint64(t.c)
		}
		if !s.exact() {
			if _, ok := s.cands.set[t.id]; ok {
				c.est[t.id] = s.sk.EstimateHashWithout(p.hash(t.id), s.without...)
			}
		}
	}
	counts := r.counts(s.lo, s.hi)
	for i, id := range r.distinct {
		if !s.exact() {
			e, ok := c.est[id]
			if !ok {
				continue
			}
			c.vals[id] = e + counts[i]
			continue
		}
		v := uint64(max(int64(at(s.totals, id)+counts[i])-int64(c.xs[id]), 0))
		if v >= c.floor && v > 0 {
			c.vals[id] = v
		}
		if j, ok := c.rawAt[id]; ok && !c.gone[j] {
			c.gone[j] = true
			c.nGone++
		}
	}
	// The list takes the first n untouched raw entries: if raw was cut at rawSlack*n and fewer are
	// left, an item past the cut might belong in the list.
	n := p.mk()
	return len(c.raw) < rawSlack*n || len(c.raw)-c.nGone >= n
}

// list is the cache's current list; spec is the window's spec now (its totals' sum moves
// with late events).
func (c *liveCache) list(p *Partition, spec liveSpec) List {
	l := spec.meta
	n := p.mk()
	h := topk.NewHeap(n)
	if spec.exact() {
		l.Total = spec.sum + c.oSum - c.xSum
		taken := 0
		for i, e := range c.raw {
			if taken == n || e.Count < c.lastMin {
				break
			}
			if !c.gone[i] {
				h.Offer(e.Item, e.Count)
				taken++
			}
		}
		for id, v := range c.vals {
			if v >= c.lastMin {
				h.Offer(p.in.strs[id], v)
			}
		}
		return c.sorted(p, h, &l)
	}
	var without uint64
	for _, o := range spec.without {
		without += o.Total()
	}
	l.Total = spec.sk.Total() - without + c.oSum
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, l.Total)
	l.Bound = &b
	for id, v := range c.vals {
		if v > 0 && v >= c.lastMin {
			h.Offer(p.in.strs[id], v)
		}
	}
	return c.sorted(p, h, &l)
}

// sorted sets l's items from h and remembers their n-th count, and adds the tracked items'
// counts (an exact window's expiring counts are in the cache).
func (c *liveCache) sorted(p *Partition, h *topk.Heap, l *List) List {
	if m, ok := h.Min(); ok && h.Full() {
		c.lastMin = m.Count
	}
	l.Items = h.Sorted()
	l.Tracked = p.liveTracked(&c.spec, func(id uint32) uint64 { return c.xs[id] })
	return *l
}
