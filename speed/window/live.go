package window

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	trmodel "trending/model"
	"trending/model/topk"
	"trending/speed/sketch"
)

// Live lists: the open minutes on top of the closed ones.
//
// Top answers as of AsOf, the last closed minute, so an event waits for its minute to close
// (its end plus the allowed lateness) before any list shows it. Live answers as if every open
// minute had closed now: each window's running state, plus the open minutes' counts, minus
// the buckets that closing them would expire (an open minute before a sliding window's start
// then, which the lateness can keep open, is not counted). So a live list counts exactly the
// events in [Start, End], End the newest event time counted, and Start is a function of End's
// minute alone (overlay.upTo): partitions at one minute state one Start, which the merger
// relies on (docs/requirements.md, "The span a live list states"). It is an overlay
// computed from the state on demand and never applied to it, so checkpoints, replays and the
// closed-minute arithmetic are exactly those of Top; only the answer is fresher. Late events
// follow the usual rules (the overlay has nothing to do with them: they are in the state
// already).
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
// LiveAll, which the speed worker calls every publish (every second or so), only looks at
// the events counted since its last call and at the buckets that started to expire
// (liveCache, below); it computes a list from scratch only when a window's cache runs short
// of its floor, a calendar period opens, or a sketch window's candidates or buckets change.

// overlay is what closing every open minute now would do, shared by the windows of one call.
type overlay struct {
	// upTo is the asOf once the open minutes closed: the minute after the one holding the
	// newest event time, whether or not an event of it was counted (AdvanceTo), so that a
	// sliding window's start is a function of asOf alone (partitions at one as-of minute
	// state one start, which the merger relies on).
	upTo int64
	asOf time.Time // the newest event time counted
}

func (p *Partition) overlay() overlay {
	ms := max(p.maxSeen, p.asOf*minuteMs)
	return overlay{upTo: max(floorDiv(ms, minuteMs)+1, p.asOf), asOf: time.UnixMilli(ms).UTC()}
}

// liveSpec is what one window's live list is made of (window.liveSpec builds it).
type liveSpec struct {
	meta   List  // the list without Items, Total and Bound
	lo, hi int64 // the open minutes counted: [lo, hi)
	// from, to: the minutes the list counts, [from, to) (a sliding window's from is its
	// start ws: an open minute before it is not counted, as closing it would expire it).
	from, to int64

	// Exact windows: the running totals and the buckets closing the open minutes would
	// expire (and a sliding window's open bucket, when even that would).
	totals     []uint64
	sum        uint64
	expiring   []*frozen
	openBucket map[uint32]uint64
	// Exact sliding windows: the window's start once the open minutes closed (ws: buckets
	// starting before it expire) and now (sws: the state holds nothing before it), and the
	// bucket length in minutes.
	ws, sws, b int64
	sliding    bool
	// cal: a calendar window, whose period is [from, to) (meta.Start, meta.End).
	cal bool

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
	if fw, ok := w.(freqWindow); ok {
		l := fw.live(p, &ov)
		l.Tracked = p.closedTracked(w, l.Start)
		return l, nil
	}
	spec := w.liveSpec(p, &ov)
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, spec.lo, spec.hi)
	l := spec.meta
	if spec.exact() {
		for _, f := range spec.expiring {
			dsum -= subtract(d, f)
		}
		for id, c := range spec.openBucket {
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
	s := liveSpec{lo: max(p.asOf, ws), hi: ov.upTo, from: ws, to: math.MaxInt64, totals: w.totals, sum: w.sum,
		meta:    List{Window: w.cfg.Name, Exact: true, Start: minuteTime(ws), End: ov.asOf, AsOf: ov.asOf},
		sliding: true, ws: ws, sws: w.start(p.asOf), b: w.b}
	if w.b == 1 {
		for _, f := range p.minutes {
			if f.start >= ws {
				break
			}
			if f.start >= w.lo {
				s.expiring = append(s.expiring, f)
			}
		}
		return s
	}
	for _, f := range w.ring {
		if f.start >= ws {
			break
		}
		s.expiring = append(s.expiring, f)
	}
	if w.hasOpen && w.openStart < ws {
		s.openBucket = w.openBucket
	}
	return s
}

// livePeriod is the calendar period a calendar window's live list answers for: the open
// one, else the one the oldest open minute would open, else the one holding AsOf.
func (p *Partition) livePeriod(span trmodel.Period, opened bool, pstart int64) (start, end int64) {
	switch {
	case opened:
		start = pstart
	case len(p.open) > 0:
		start = span.StartMinute(p.open[0].minute)
	default:
		start = span.StartMinute(p.asOf)
	}
	return start, span.EndMinute(start)
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
	s := liveSpec{meta: calendarMeta(w.cfg.Name, start, end, ov), lo: max(start, p.asOf), hi: min(end, ov.upTo), cal: true, from: start, to: end}
	s.meta.Exact = true
	if w.opened {
		s.totals, s.sum = w.totals, w.sum
	}
	return s
}

func (w *exactAll) liveSpec(p *Partition, ov *overlay) liveSpec {
	return liveSpec{meta: List{Window: w.cfg.Name, Exact: true, Start: allTimeStart, End: ov.asOf, AsOf: ov.asOf}, lo: p.asOf, hi: ov.upTo, from: math.MinInt64, to: math.MaxInt64, totals: w.totals, sum: w.sum}
}

func (w *sketchSliding) liveSpec(p *Partition, ov *overlay) liveSpec {
	ws := w.start(ov.upTo)
	s := liveSpec{meta: List{Window: w.cfg.Name, Start: minuteTime(ws), End: ov.asOf, AsOf: ov.asOf}, lo: max(p.asOf, ws), hi: ov.upTo, from: ws, to: math.MaxInt64,
		sk: w.running, cands: &w.cands, sliding: true, ws: ws, sws: w.start(p.asOf)}
	for _, b := range w.buckets {
		if b.start >= ws {
			break
		}
		s.without = append(s.without, b.sk)
	}
	return s
}

func (w *sketchCalendar) liveSpec(p *Partition, ov *overlay) liveSpec {
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	return liveSpec{meta: calendarMeta(w.cfg.Name, start, end, ov), lo: max(start, p.asOf), hi: min(end, ov.upTo), sk: w.sk, cands: &w.cands, cal: true, from: start, to: end}
}

func (w *sketchAll) liveSpec(p *Partition, ov *overlay) liveSpec {
	return liveSpec{meta: List{Window: w.cfg.Name, Start: allTimeStart, End: ov.asOf, AsOf: ov.asOf}, lo: p.asOf, hi: ov.upTo, from: math.MinInt64, to: math.MaxInt64, sk: w.sk, cands: &w.cands}
}

// Incremental live lists (LiveAll).
//
// Each window keeps a cache (liveCache): a set C of items with their live counts and a floor
// such that every item outside C has a live count at most the floor and every item in C one
// above it, plus the last list (the best n of C, best first). Between two calls live counts
// change only by
//
//   - the events counted since (the touches): an item of C rises by its open events; any
//     other touched item is looked up (its totals plus its open count) and joins C when above
//     the floor, unless its bound (below) keeps it under; a late event has its item looked
//     up;
//   - a minute closing: it moves counts from the open minutes into the windows' state and
//     changes no live count (closing every open minute now is what the overlay shows
//     already), so nothing is done;
//   - the open minutes reaching a new minute, which makes a sliding window's next bucket
//     expire: only the items of that bucket fall, those of C are lowered (and leave C when
//     they fall to the floor); items outside C only fall, so the floor holds;
//   - a calendar period opening: the list starts over (rebuild).
//
// The list moves by merging the risen items into it (kept sorted); it is re-ranked from C
// only when one of its items fell. When C holds fewer than n items above the floor, an item
// outside it might belong in the list: only then is the window rebuilt from scratch (every
// total and open item looked at). An exact sliding window whose buckets are expiring does
// not look up an item's count in them when it joins C: its count there is an upper bound,
// resolved (a scan of the expiring buckets for those items) only when it reaches the list.
//
// Every item outside C has, per exact window, a bound (liveState.bound): its live count when
// it was last looked at (or left C) plus its open events since, so that an item seen now
// and then stays far under the floor without a lookup of its totals. Live counts outside C
// only fall between rebuilds, which set every bound again.
//
// The caches' items share rows (liveState.cells: one per item in any cache, its cell in each
// cache side by side), so that the touched items cost one lookup for all the windows and
// their counts sit in one or two cache lines; the touched items are taken in item by item
// across the windows, after a pass that loads their rows and bounds (independent loads the
// processor overlaps).

// touch is one counted event since the last LiveAll: its item, count and minute, and whether
// that minute had closed when it came (a late event).
type touch struct {
	id   uint32
	c    uint32
	m    int32 // Unix minutes: event times are before 2100
	late bool
}

// maxTouches bounds the events remembered between two LiveAll calls; past it the next call
// rebuilds every list from scratch.
const maxTouches = 1 << 20

// logTouch remembers a counted event for LiveAll, once LiveAll has been called.
func (p *Partition) logTouch(id uint32, c uint64, m int64, late bool) {
	if p.live == nil || p.live.overflow {
		return
	}
	if len(p.live.touches) == maxTouches {
		p.live.overflow, p.live.touches = true, nil
		return
	}
	p.live.touches = append(p.live.touches, touch{id, uint32(min(c, math.MaxUint32)), int32(m), late})
}

// liveState is LiveAll's memory: the events since its last call and one cache per window.
// None of it is in a snapshot: it is rebuilt from the state.
type liveState struct {
	touches   []touch
	overflow  bool
	caches    []liveCache
	dedupe    idTable          // scratch: the touched items' indexes in distinct
	distinct  []uint32         // scratch: the items touched since the last call, in order
	aggs      []touchAgg       // scratch: their events, by index in distinct
	minSum    map[int64]uint64 // each open minute's total count, kept from the touches
	apply     []*liveCache     // scratch: the caches taking the touches in
	round     liveRound        // scratch: the call's
	countBufs [][]uint64       // scratch of liveRound.count
	sink      uint64           // gather's loads land here
	bits      bitset           // scratch of rebuild: the items the overlay changes
	heap      []idCount        // scratch of rebuild
	// The items in some cache (an exact window's C, a sketch window's candidates) have a row:
	// an index into each cache's ents, -1 where not in it. member marks them, so that the
	// others cost no map lookup, and one lookup serves every window.
	member bitset
	rec    []int32  // item -> row, -1 if none (valid where member is set)
	cells  []cell   // nw a row: the item in each cache, side by side (16 bytes each)
	ests   []uint64 // nw a row: sketch windows' estimates (est)
	rowN   []int32  // per row: the caches holding its item; -1 for a free row
	rowID  []uint32 // per row: its item
	free   []int32  // free rows
	unheld []int32  // rows whose count fell to 0 in this call, freed at its end
	nw     int
	// bound holds, for each item and exact window (column gcol of its cache), an upper bound
	// of the item's live count while it is not in C (maxBound: none known), so that an item
	// with a few events far under the floor costs no lookup of its totals.
	bound  []uint16
	nBound int
	// What the caches did, for tests and benchmarks: lists rebuilt from scratch (breaches of
	// them because C ran short of the floor), buckets expired into a cache, scans resolving
	// upper bounds, floors raised.
	rebuilds, breaches, expiries, resolves, raises int
	// The items touched, and those of them in some cache, over all calls.
	nDistinct, nMember int
}

// touchAgg is what one item's events since the last call add up to.
type touchAgg struct {
	open     uint64 // the counts of its events in open minutes
	mlo, mhi int32  // the least and greatest of their minutes
	late     bool   // one of them was late
	row      int32  // its row, -1 if none (yet)
}

// liveCache is one window's live list and what it is made of (see above). A sketch window's
// C is its candidates (sketchPrepare).
type liveCache struct {
	built     bool
	gen, upTo int64  // sketch: the closings and the open minutes' reach at the rebuild
	epoch     uint64 // sketch: the candidates' epoch at the rebuild
	calOpened bool   // calendar: the period was open at the last call
	fragile   bool   // exact: the last call's overlay changes as minutes close (see fragile)
	start     time.Time
	ws        int64 // exact sliding: buckets starting before ws are subtracted from C
	lws       int64 // sketch sliding: the list's start at the last call
	// tfrom, tto: the minutes whose events since the last call count in C as they are,
	// [tfrom, tto): a calendar period, or from a sliding window's start at the last call
	// (an open minute before it was not counted; one after it that has started to expire
	// since was subtracted whole, its events since included).
	tfrom, tto int64
	spec       liveSpec
	floor      uint64
	top        []topEnt     // the list, best first
	heap       []int32      // scratch of rank
	cand       []topEnt     // scratch of rank
	out        []topk.Entry // the last list's Items, reused by the next call
	pos        []int32      // row -> index in top, valid while its cell is inTop
	dirty      bool         // an item of the list fell or left: rank C again
	changed    []int32      // rows that rose since the last ranking
	bsum       map[*frozen]uint64
	ls         *liveState
	gcol       int  // exact: its column in ls.bound; -1 for a sketch window
	wi         int  // its column in ls.cells
	noX        bool // exact: no bucket expiring
	n          int  // items in C
}

// within reports whether the open events a touched item's aggregate holds all lie in
// [tfrom, tto): they raise its count in C by their sum.
func (c *liveCache) within(a *touchAgg) bool {
	return int64(a.mlo) >= c.tfrom && int64(a.mhi) < c.tto
}

// outside reports whether they all lie before tfrom: they change nothing in C (a minute
// before a sliding window's start at the last call was not counted then, nor is it now).
func (c *liveCache) outside(a *touchAgg) bool { return !a.late && int64(a.mhi) < c.tfrom }

// touchSpan sets tfrom and tto for the call's spec, before expire moves ws.
func (c *liveCache) touchSpan(spec *liveSpec, prevWS int64) {
	c.tfrom, c.tto = spec.from, spec.to
	if spec.sliding {
		c.tfrom = min(prevWS, spec.from)
	}
}

// cell is an item of C (one row of ls.cells, one column).
type cell struct {
	v       uint64 // the live count (an estimate in a sketch window)
	used    bool
	inTop   bool
	inexact bool // exact: v is an upper bound (the expiring buckets not looked up)
}

// topEnt is an item of a list: its row, count and name (ranking and copying the list out
// read no row).
type topEnt struct {
	row     int32
	inexact bool // its cell's, kept in step (a change of it in the list ranks C again)
	v       uint64
	item    string
}

func (x *topEnt) before(y *topEnt) bool { return x.v > y.v || (x.v == y.v && x.item < y.item) }

// ent is the cache's cell of row j.
func (c *liveCache) ent(j int32) *cell { return &c.ls.cells[int(j)*c.ls.nw+c.wi] }

// est is a sketch window's estimate of row j's item without the expiring buckets.
func (c *liveCache) est(j int32) *uint64 { return &c.ls.ests[int(j)*c.ls.nw+c.wi] }

// LiveAll returns Live of every window, in configuration order, with the work of each call
// proportional to the events counted since the previous one (see above). The lists are those
// Live gives for exact windows; a sketch window's estimate of a candidate is the one it had
// when its cache was last rebuilt (a new epoch of candidates, a bucket expiring) or it was
// last counted late, plus its open count then and its events since: never above Live's
// (the closed minutes since added at least their count to the sketch), still an upper bound
// of its true count within the window's bound. The Items of an exact or sketch window's list are the partition's
// memory until the next LiveAll call, which overwrites them: a caller keeping a list longer
// (the worker encodes it at once) copies its Items.
func (p *Partition) LiveAll() []List {
	out := make([]List, len(p.wins))
	if !p.started {
		for i, w := range p.wins {
			out[i] = w.top(p)
		}
		return out
	}
	if p.live == nil {
		p.live = newLiveState(p)
	}
	ls := p.live
	ls.grow(len(p.in.strs))
	ov := p.overlay()
	// The touched items, each once, in first-touch order.
	ls.dedupe.reset(min(len(ls.touches), 2*len(ls.distinct)+64)) // sized by the last call's
	ls.distinct, ls.aggs = ls.distinct[:0], ls.aggs[:0]
	for _, t := range ls.touches {
		i, ok := ls.dedupe.find(t.id)
		if !ok {
			i = int32(len(ls.distinct))
			ls.dedupe.put(t.id, i)
			ls.distinct = append(ls.distinct, t.id)
			ls.aggs = append(ls.aggs, touchAgg{row: -1})
		}
		a := &ls.aggs[i]
		switch {
		case t.late:
			a.late = true
		case a.open == 0:
			a.open, a.mlo, a.mhi = uint64(t.c), t.m, t.m
		default:
			a.open += uint64(t.c)
			a.mlo, a.mhi = min(a.mlo, t.m), max(a.mhi, t.m)
		}
	}
	ls.openSums(p)
	ls.gather()
	ls.nDistinct += len(ls.distinct)
	for i := range ls.aggs {
		if ls.aggs[i].row >= 0 {
			ls.nMember++
		}
	}
	r := &ls.round
	for _, a := range r.aggs {
		if a.counts != nil {
			ls.countBufs = append(ls.countBufs, a.counts)
		}
	}
	if r.aggs == nil {
		r.aggs = map[[2]int64]*openAgg{}
	}
	clear(r.aggs)
	r.p, r.distinct = p, ls.distinct
	// Each cache is rebuilt or brought to the touches' eve (expiring buckets), then the
	// touched items are taken in, item by item across the caches (an item's row is read
	// once), then each list is ranked.
	apply := ls.apply[:0]
	for i, w := range p.wins {
		if dw, ok := w.(decayedWindow); ok {
			out[i] = dw.liveAll(p, &ov, ls.touches, ls.distinct, ls.overflow)
			continue
		}
		if fw, ok := w.(freqWindow); ok {
			out[i] = fw.live(p, &ov)
			out[i].Tracked = p.closedTracked(w, out[i].Start)
			continue
		}
		c := &ls.caches[i]
		spec := w.liveSpec(p, &ov)
		var ok bool
		if spec.exact() {
			ok = c.exactPrepare(p, ls, spec, r)
		} else {
			ok = c.sketchPrepare(p, ls, spec, &ov)
		}
		if ok && len(ls.distinct) > 0 {
			apply = append(apply, c)
		}
	}
	ls.apply = apply
	for i, id := range ls.distinct {
		a := &ls.aggs[i]
		for _, c := range apply {
			if c.gcol < 0 {
				if ls.member.has(id) { // else no candidate
					c.applySketch(p, ls, r, i)
				}
				continue
			}
			if a.row < 0 && !a.late && c.within(a) {
				// Not in C (not even in another cache's): its bound may keep it out.
				k := int(id)*ls.nBound + c.gcol
				if b := uint64(ls.bound[k]); b != maxBound && b+a.open <= c.floor {
					ls.bound[k] = uint16(min(b+a.open, maxBound))
					continue
				}
			}
			c.applyExact(p, ls, r, i)
		}
	}
	for i, w := range p.wins {
		if _, ok := w.(decayedWindow); ok {
			continue
		}
		if _, ok := w.(freqWindow); ok {
			continue
		}
		if c := &ls.caches[i]; c.gcol >= 0 {
			out[i] = c.exactList(p, ls, r)
		} else {
			out[i] = c.sketchList(p, ls)
		}
	}
	ls.touches, ls.overflow = ls.touches[:0], false
	for _, r := range ls.unheld {
		if ls.rowN[r] == 0 {
			id := ls.rowID[r]
			ls.rec[id] = -1
			ls.member[id>>6] &^= 1 << (id & 63)
			ls.rowN[r] = -1
			ls.free = append(ls.free, r)
		}
	}
	ls.unheld = ls.unheld[:0]
	return out
}

// gather finds the touched items' rows and brings their rows and bounds into the cache in
// loops of independent loads, which the processor overlaps (one item after another, each
// would wait for its own misses).
func (ls *liveState) gather() {
	for i, id := range ls.distinct {
		if ls.member.has(id) {
			ls.aggs[i].row = ls.rec[id]
		}
	}
	var sink uint64
	nb := ls.nBound
	for i, id := range ls.distinct {
		if r := ls.aggs[i].row; r >= 0 {
			for k := int(r) * ls.nw; k < int(r+1)*ls.nw; k += 4 { // a cell is 16 bytes
				sink += ls.cells[k].v
			}
		} else if nb > 0 {
			sink += uint64(ls.bound[int(id)*nb])
		}
	}
	ls.sink = sink
}

// rowOf is an item's row, -1 if none.
func (ls *liveState) rowOf(id uint32) int32 {
	if !ls.member.has(id) {
		return -1
	}
	return ls.rec[id]
}

// rowFor is the row of the i-th touched item, found once per call.
func (ls *liveState) rowFor(i int) int32 {
	a := &ls.aggs[i]
	if a.row < 0 {
		a.row = ls.rowOf(ls.distinct[i])
	}
	return a.row
}

// find is the row of the i-th touched item, if in C.
func (c *liveCache) find(i int) (int32, bool) {
	r := c.ls.rowFor(i)
	return r, r >= 0 && c.ent(r).used
}

func newLiveState(p *Partition) *liveState {
	ls := &liveState{caches: make([]liveCache, len(p.wins)), nw: len(p.wins)}
	for i, w := range p.wins {
		c := &ls.caches[i]
		c.ls, c.gcol, c.wi = ls, -1, i
		switch w.(type) {
		case *exactSliding, *exactCalendar, *exactAll:
			c.gcol = ls.nBound
			ls.nBound++
		}
	}
	return ls
}

// grow makes room in member and bound for n item handles (the new ones' bound is 0: an item
// new since the last call has counted only the events since).
func (ls *liveState) grow(n int) {
	ls.member = extend(ls.member, (n+63)/64, 0)
	ls.rec = extend(ls.rec, n, -1)
	ls.bound = extend(ls.bound, n*ls.nBound, 0)
}

// extend lengthens s to n, filling with v, doubling its capacity when it grows.
func extend[T any](s []T, n int, v T) []T {
	if n <= len(s) {
		return s
	}
	if n > cap(s) {
		s = slices.Grow(s, max(n, 2*cap(s))-len(s))
	}
	k := len(s)
	s = s[:n]
	for i := k; i < n; i++ {
		s[i] = v
	}
	return s
}

const maxBound = math.MaxUint16

// setBound records an upper bound of an item's live count in the exact window of column col.
func (ls *liveState) setBound(id uint32, col int, v uint64) {
	ls.bound[int(id)*ls.nBound+col] = uint16(min(v, maxBound))
}

// openSums brings minSum to the open minutes: closed ones leave, the touches add.
func (ls *liveState) openSums(p *Partition) {
	if ls.minSum == nil || ls.overflow {
		ls.minSum = make(map[int64]uint64, len(p.open))
		for i := range p.open {
			var s uint64
			p.open[i].each(func(_ uint32, c uint64) { s += c })
			ls.minSum[p.open[i].minute] = s
		}
		return
	}
	for m := range ls.minSum {
		if m < p.asOf {
			delete(ls.minSum, m)
		}
	}
	m, sum := int64(noMinute), uint64(0)
	for _, t := range ls.touches {
		if t.late || int64(t.m) < p.asOf {
			continue
		}
		if int64(t.m) != m {
			if sum > 0 {
				ls.minSum[m] += sum
			}
			m, sum = int64(t.m), 0
		}
		sum += uint64(t.c)
	}
	if sum > 0 {
		ls.minSum[m] += sum
	}
}

// idTable maps item handles to indexes: open addressing over a power-of-two table whose
// slots belong to the current round by their stamp, so that starting a round clears
// nothing.
type idTable struct {
	slots []idSlot
	shift uint32
	stamp uint32
	n     int // put in this round
}

type idSlot struct {
	id, stamp uint32
	i         int32
}

// reset starts a round for about n items (it grows past them).
func (t *idTable) reset(n int) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	t.stamp++
	if len(t.slots) != size || t.stamp == 0 {
		t.slots = make([]idSlot, size)
		t.stamp = 1
	}
	t.shift = uint32(64 - bits.Len(uint(len(t.slots)-1)))
	t.n = 0
}

func (t *idTable) slot(id uint32) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> t.shift)
}

// find is id's index, if put in this round.
func (t *idTable) find(id uint32) (int32, bool) {
	mask := len(t.slots) - 1
	for k := t.slot(id); ; k = (k + 1) & mask {
		s := &t.slots[k]
		if s.stamp != t.stamp {
			return 0, false
		}
		if s.id == id {
			return s.i, true
		}
	}
}

// put records id's index (id not yet put in this round).
func (t *idTable) put(id uint32, i int32) {
	if t.n++; 2*t.n > len(t.slots) {
		old, stamp := t.slots, t.stamp
		t.slots, t.stamp = make([]idSlot, 2*len(old)), 1
		t.shift--
		for _, s := range old {
			if s.stamp == stamp {
				t.insert(s.id, s.i)
			}
		}
	}
	t.insert(id, i)
}

func (t *idTable) insert(id uint32, i int32) {
	mask := len(t.slots) - 1
	k := t.slot(id)
	for t.slots[k].stamp == t.stamp {
		k = (k + 1) & mask
	}
	t.slots[k] = idSlot{id, t.stamp, i}
}

// oSum is the sum of the open minutes' counts in [lo, hi).
func (ls *liveState) oSum(p *Partition, lo, hi int64) uint64 {
	var s uint64
	for i := range p.open {
		if m := p.open[i].minute; m >= lo && m < hi {
			s += ls.minSum[m]
		}
	}
	return s
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
	counts []uint64         // the count of each of distinct, noCount until looked up
}

const noCount = math.MaxUint64

func (r *liveRound) agg(lo, hi int64) *openAgg {
	k := [2]int64{lo, hi}
	a := r.aggs[k]
	if a == nil {
		a = &openAgg{}
		if n := len(r.p.live.countBufs); n > 0 {
			a.counts, r.p.live.countBufs = r.p.live.countBufs[n-1][:0], r.p.live.countBufs[:n-1]
		}
		r.aggs[k] = a
	}
	return a
}

// open is every open item's count in [lo, hi). Callers must not change it.
func (r *liveRound) open(lo, hi int64) map[uint32]int64 {
	a := r.agg(lo, hi)
	if a.o == nil {
		a.o = make(map[uint32]int64)
		r.p.openCounts(a.o, lo, hi)
	}
	return a.o
}

// count is the count in [lo, hi) of the i-th item of r.distinct.
func (r *liveRound) count(i int, lo, hi int64) uint64 {
	a := r.agg(lo, hi)
	if len(a.counts) != len(r.distinct) {
		a.counts = slices.Grow(a.counts[:0], len(r.distinct))[:len(r.distinct)]
		for k := range a.counts {
			a.counts[k] = noCount
		}
	}
	if a.counts[i] == noCount {
		a.counts[i] = r.p.openCount(r.distinct[i], lo, hi)
	}
	return a.counts[i]
}

// fragile reports whether an exact sliding window's live counts change as a minute closes:
// when an expiring bucket is still being filled (an open bucket). It takes a lateness
// about the window's length; such a window is rebuilt at every call. (An open minute before
// the window's start is not counted, and once closed it expires: no change.)
func fragile(spec *liveSpec) bool { return spec.openBucket != nil }

// openIn reports whether an open minute lies in [lo, hi).
func (p *Partition) openIn(lo, hi int64) bool {
	for i := range p.open {
		if m := p.open[i].minute; m >= lo && m < hi {
			return true
		}
	}
	return false
}

// exactList is an exact window's live list.
// exactPrepare rebuilds an exact window's cache or subtracts the buckets that started
// expiring since the last call; it reports whether the touches are to be taken in.
func (c *liveCache) exactPrepare(p *Partition, ls *liveState, spec liveSpec, r *liveRound) bool {
	fr := fragile(&spec)
	rebuild := !c.built || ls.overflow || fr || c.fragile ||
		spec.cal && (!spec.meta.Start.Equal(c.start) || c.calOpened != (spec.totals != nil)) ||
		spec.sliding && spec.sws > c.ws || // the state dropped buckets never subtracted here
		// an open minute counted at the last call is before the start now: its counts then
		// are not known apart from its events since
		spec.sliding && spec.ws > c.ws && p.openIn(c.ws, spec.ws)
	c.fragile, c.calOpened = fr, spec.totals != nil
	if rebuild {
		c.rebuildExact(p, ls, spec, r)
		return false
	}
	c.spec = spec
	c.touchSpan(&spec, c.ws)
	c.expire(ls, &c.spec)
	c.noX = len(spec.expiring) == 0 && spec.openBucket == nil
	if !c.noX && len(c.bsum) > 0 {
		// A late event in an expiring bucket changes its sum.
		for _, t := range ls.touches {
			if !t.late {
				continue
			}
			for f := range c.bsum {
				if m := int64(t.m); m >= f.start && m < f.start+max(spec.b, 1) {
					delete(c.bsum, f)
				}
			}
		}
	}
	return true
}

// exactList is an exact window's live list, once the touches are in.
func (c *liveCache) exactList(p *Partition, ls *liveState, r *liveRound) List {
	spec := c.spec
	c.rank(p)
	for c.resolve(p, ls, &spec) {
		c.rank(p)
	}
	if c.floor > 0 && len(c.top) < p.mk() {
		// Too few items above the floor: one outside C might belong in the list.
		ls.breaches++
		c.rebuildExact(p, ls, spec, r)
		c.rank(p)
	}
	c.raise(p, ls)
	l := spec.meta
	var xSum uint64
	for _, f := range spec.expiring {
		xSum += c.bucketSum(f)
	}
	for _, n := range spec.openBucket {
		xSum += n
	}
	l.Total = spec.sum + ls.oSum(p, spec.lo, spec.hi) - xSum
	l.Items = c.items(p)
	var xs map[uint32]uint64
	if len(p.tracked) > 0 && (len(spec.expiring) > 0 || spec.openBucket != nil) {
		xs = p.expiringCounts(&spec)
	}
	l.Tracked = p.liveTracked(&spec, func(id uint32) uint64 { return xs[id] })
	return l
}

// bucketSum is an expiring bucket's sum, cached (a late event into the bucket forgets it).
func (c *liveCache) bucketSum(f *frozen) uint64 {
	if s, ok := c.bsum[f]; ok {
		return s
	}
	var s uint64
	f.each(func(_ uint32, n uint64) { s += n })
	c.bsum[f] = s
	return s
}

// rebuildExact computes every live count of an exact window and keeps the best liveSlack*n
// above a floor (more when counts tie at the n-th).
func (c *liveCache) rebuildExact(p *Partition, ls *liveState, spec liveSpec, r *liveRound) {
	ls.rebuilds++
	c.reset(spec)
	o := r.open(spec.lo, spec.hi)
	xs := make(map[uint32]uint64)
	for _, f := range spec.expiring {
		var s uint64
		f.each(func(id uint32, n uint64) { xs[id] += n; s += n })
		c.bsum[f] = s
	}
	for id, n := range spec.openBucket {
		xs[id] += n
	}
	bits := p.changedBits(len(spec.totals))
	for id := range o {
		bits.set(id)
	}
	for id := range xs {
		bits.set(id)
	}
	defer bits.reset(o, xs)
	// Every item's bound is its live count now.
	for id := range len(p.in.strs) {
		ls.setBound(uint32(id), c.gcol, at(spec.totals, uint32(id)))
	}
	for id, oc := range o {
		ls.setBound(id, c.gcol, uint64(max(int64(at(spec.totals, id))+oc-int64(xs[id]), 0)))
	}
	for id, x := range xs {
		if _, ok := o[id]; !ok {
			ls.setBound(id, c.gcol, uint64(max(int64(at(spec.totals, id))-int64(x), 0)))
		}
	}
	each := func(fn func(id uint32, v uint64)) {
		for id, t := range spec.totals {
			if t != 0 && !bits.has(uint32(id)) {
				fn(uint32(id), t)
			}
		}
		for id, oc := range o {
			if v := int64(at(spec.totals, id)) + oc - int64(xs[id]); v > 0 {
				fn(id, uint64(v))
			}
		}
		for id, x := range xs {
			if _, ok := o[id]; !ok {
				if v := int64(at(spec.totals, id)) - int64(x); v > 0 {
					fn(id, uint64(v))
				}
			}
		}
	}
	n := p.mk()
	k := liveSlack * n
	h := ls.heap[:0] // the best k counts, the least at the root
	each(func(id uint32, v uint64) {
		if len(h) < k {
			h = append(h, idCount{id, v})
			for i := len(h) - 1; i > 0 && h[(i-1)/2].c > h[i].c; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
			return
		}
		if v <= h[0].c {
			return
		}
		h[0] = idCount{id, v}
		for i := 0; ; {
			m, l, rr := i, 2*i+1, 2*i+2
			if l < k && h[l].c < h[m].c {
				m = l
			}
			if rr < k && h[rr].c < h[m].c {
				m = rr
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	})
	ls.heap = h
	if len(h) < k {
		c.floor = 0
		for _, e := range h {
			c.put(e.id, e.c, false)
		}
		return
	}
	slices.SortFunc(h, func(a, b idCount) int { return cmpDesc(a.c, b.c) })
	vk, vn := h[k-1].c, h[n-1].c
	if vk < vn {
		c.floor = vk
		for _, e := range h {
			if e.c > vk {
				c.put(e.id, e.c, false)
			}
		}
		return
	}
	// The n-th count ties down to the k-th: keep every item at it or above.
	c.floor = vn - 1
	each(func(id uint32, v uint64) {
		if v >= vn {
			c.put(id, v, false)
		}
	})
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// liveSlack is how many times n items a rebuild keeps in C, liveCap how many C may grow to
// before its floor is raised.
const (
	liveSlack = 4
	liveCap   = 8
)

// expire subtracts the buckets that started expiring since the last call.
func (c *liveCache) expire(ls *liveState, spec *liveSpec) {
	if !spec.sliding || spec.ws <= c.ws {
		return
	}
	for _, f := range spec.expiring {
		if f.start < c.ws {
			continue
		}
		ls.expiries++
		var s uint64
		f.each(func(id uint32, n uint64) {
			s += n
			if j := c.ls.rowOf(id); j >= 0 {
				if e := c.ent(j); e.used {
					c.update(j, e.v-min(n, e.v), e.inexact)
				}
			}
		})
		c.bsum[f] = s
	}
	c.ws = spec.ws
}

// applyExact takes the events of the i-th touched item since the last call into an exact
// window's C.
func (c *liveCache) applyExact(p *Partition, ls *liveState, r *liveRound, i int) {
	spec, noX := &c.spec, c.noX
	id, a := ls.distinct[i], &ls.aggs[i]
	if c.outside(a) {
		return
	}
	j, in := c.find(i)
	if !a.late && c.within(a) {
		// Its open events (all in the period, for a calendar window) raise it by their
		// counts: its totals and expiring counts are as they were.
		if in {
			if a.open > 0 {
				e := c.ent(j)
				c.update(j, e.v+a.open, e.inexact)
			}
			return
		}
		if b := uint64(ls.bound[int(id)*ls.nBound+c.gcol]); b != maxBound && b+a.open <= c.floor {
			ls.setBound(id, c.gcol, b+a.open)
			return
		}
	}
	v := at(spec.totals, id) + r.count(i, spec.lo, spec.hi)
	switch {
	case in:
		c.update(j, v, !noX)
	case v > c.floor:
		c.put(id, v, !noX)
	default:
		ls.setBound(id, c.gcol, v)
	}
}

// resolve replaces the upper bounds in the list by counts, looking the items up in the
// expiring buckets; it reports whether there were any.
func (c *liveCache) resolve(p *Partition, ls *liveState, spec *liveSpec) bool {
	var need map[uint32]int32
	for _, t := range c.top {
		if t.inexact {
			if need == nil {
				need = map[uint32]int32{}
			}
			need[c.ls.rowID[t.row]] = t.row
		}
	}
	if len(need) == 0 {
		return false
	}
	ls.resolves++
	xs := make(map[uint32]uint64, len(need))
	expiringOf(spec, need, xs)
	for id, j := range need {
		v := max(int64(at(spec.totals, id)+p.openCount(id, spec.lo, spec.hi))-int64(xs[id]), 0)
		c.update(j, uint64(v), false)
	}
	c.dirty = true
	return true
}

// raise lifts the floor of an exact window whose C outgrew liveCap*n to the liveSlack*n-th
// count (below the list's last), dropping the items under it.
func (c *liveCache) raise(p *Partition, ls *liveState) {
	n := p.mk()
	if c.n <= liveCap*n || len(c.top) < n {
		return
	}
	vs := make([]uint64, 0, c.n)
	for j := range c.ls.rowN {
		if e := c.ent(int32(j)); e.used {
			vs = append(vs, e.v)
		}
	}
	slices.SortFunc(vs, cmpDesc)
	f := min(vs[liveSlack*n-1], c.top[n-1].v-1)
	if f <= c.floor {
		return
	}
	ls.raises++
	c.floor = f
	for j := range c.ls.rowN {
		if e := c.ent(int32(j)); e.used && e.v <= f {
			c.del(int32(j))
		}
	}
}

// sketchList is a sketch window's live list.
// sketchPrepare rebuilds a sketch window's cache if its candidates were re-estimated or
// dropped (a new epoch), its buckets expired or started expiring, or its period changed, and
// otherwise adds the candidates new since (a closed minute's); it reports whether the
// touches are to be taken in. A closed minute adds its items to the sketch: a candidate's
// cached estimate plus its open count, which counted that minute, is still at least its
// true count and at most the estimate Live gives (which went up by at least that minute's
// count), so the cache holds across closings.
func (c *liveCache) sketchPrepare(p *Partition, ls *liveState, spec liveSpec, ov *overlay) bool {
	rebuild := !c.built || ls.overflow || spec.cands.epoch != c.epoch || spec.sws != c.ws ||
		(c.upTo != ov.upTo && !slices.Equal(c.spec.without, spec.without)) ||
		(spec.cal && !spec.meta.Start.Equal(c.start)) ||
		// an open minute counted at the last call is before the start now
		(spec.sliding && spec.ws > c.lws && p.openIn(c.lws, spec.ws))
	if !rebuild {
		c.spec = spec
		c.touchSpan(&spec, c.lws)
		c.lws = spec.ws
		if c.gen != p.gen {
			for id := range spec.cands.set {
				if r := ls.rowOf(id); r < 0 || !c.ent(r).used {
					// Its open count has the touches' events, which applySketch adds.
					e := spec.sk.EstimateHashWithout(p.hash(id), spec.without...)
					j := c.put(id, e+p.openCount(id, spec.lo, spec.hi)-c.raiseOf(ls, id), false)
					*c.est(j) = e
				}
			}
		}
		c.gen, c.upTo, c.spec = p.gen, ov.upTo, spec
		return true
	}
	ls.rebuilds++
	c.reset(spec)
	c.gen, c.upTo, c.epoch, c.ws = p.gen, ov.upTo, spec.cands.epoch, spec.sws
	for id := range spec.cands.set {
		e := spec.sk.EstimateHashWithout(p.hash(id), spec.without...)
		j := c.put(id, e+p.openCount(id, spec.lo, spec.hi), false)
		*c.est(j) = e
	}
	return false
}

// raiseOf is what applySketch will add to a candidate for its events since the last call.
func (c *liveCache) raiseOf(ls *liveState, id uint32) uint64 {
	i, ok := ls.dedupe.find(id)
	if !ok {
		return 0
	}
	if a := &ls.aggs[i]; !a.late && c.within(a) {
		return a.open
	}
	return 0
}

// applySketch takes the events of the i-th touched item into a sketch window's cache.
func (c *liveCache) applySketch(p *Partition, ls *liveState, r *liveRound, i int) {
	j, ok := c.find(i)
	if !ok {
		return
	}
	e, a, spec := c.ent(j), &ls.aggs[i], &c.spec
	if c.outside(a) {
		return
	}
	if !a.late && c.within(a) {
		c.set(j, e.v+a.open)
		return
	}
	if a.late { // the sketch has it now
		*c.est(j) = spec.sk.EstimateHashWithout(p.hash(ls.distinct[i]), spec.without...)
	}
	c.set(j, *c.est(j)+r.count(i, spec.lo, spec.hi))
}

// sketchList is a sketch window's live list, once the touches are in.
func (c *liveCache) sketchList(p *Partition, ls *liveState) List {
	spec := c.spec
	c.rank(p)
	l := spec.meta
	var without uint64
	for _, o := range spec.without {
		without += o.Total()
	}
	l.Total = spec.sk.Total() - without + ls.oSum(p, spec.lo, spec.hi)
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, l.Total)
	l.Bound = &b
	l.Items = c.items(p)
	l.Tracked = p.liveTracked(&spec, nil)
	return l
}

// reset empties the cache for a rebuild.
func (c *liveCache) reset(spec liveSpec) {
	c.built, c.spec, c.floor, c.dirty = true, spec, 0, true
	if c.n > 0 {
		for j := range c.ls.rowN {
			if c.ent(int32(j)).used {
				c.unhold(int32(j))
			}
		}
	}
	c.n = 0
	c.bsum = map[*frozen]uint64{}
	c.top, c.changed = c.top[:0], c.changed[:0]
	c.ws, c.lws, c.start = spec.ws, spec.ws, spec.meta.Start
}

// put adds an item to C (or sets it) and returns its index.
func (c *liveCache) put(id uint32, v uint64, inexact bool) int32 {
	ls := c.ls
	r := ls.rowOf(id)
	if r < 0 {
		if n := len(ls.free); n > 0 {
			r, ls.free = ls.free[n-1], ls.free[:n-1]
		} else {
			r = int32(len(ls.rowN))
			ls.rowN, ls.rowID = append(ls.rowN, 0), append(ls.rowID, 0)
			ls.cells = append(ls.cells, make([]cell, ls.nw)...)
			ls.ests = append(ls.ests, make([]uint64, ls.nw)...)
		}
		ls.rec[id], ls.rowN[r], ls.rowID[r] = r, 0, id
		ls.member.set(id)
	}
	if e := c.ent(r); e.used {
		c.set(r, v)
		c.setInexact(e, inexact)
		return r
	}
	*c.ent(r) = cell{used: true, v: v, inexact: inexact}
	ls.rowN[r]++
	c.n++
	j := r
	c.changed = append(c.changed, j)
	return j
}

// set changes entry j's count: a rise is merged into the list at the next ranking, a fall
// of an item in the list makes it rank C again.
func (c *liveCache) set(j int32, v uint64) {
	e := c.ent(j)
	switch {
	case v > e.v:
		c.changed = append(c.changed, j)
	case v < e.v && e.inTop:
		c.dirty = true
	}
	e.v = v
}

// update sets an exact window's entry, dropping it from C at the floor or under.
func (c *liveCache) update(j int32, v uint64, inexact bool) {
	if v <= c.floor {
		c.ent(j).v = v
		c.del(j)
		return
	}
	c.set(j, v)
	c.setInexact(c.ent(j), inexact)
}

// setInexact sets whether a cell's count is an upper bound; the list keeps a copy.
func (c *liveCache) setInexact(e *cell, inexact bool) {
	if e.inexact != inexact && e.inTop {
		c.dirty = true
	}
	e.inexact = inexact
}

// del drops an item from C, keeping its count as its bound (an exact window's).
func (c *liveCache) del(j int32) {
	e := c.ent(j)
	if e.inTop {
		c.dirty = true
	}
	if c.gcol >= 0 {
		c.ls.setBound(c.ls.rowID[j], c.gcol, e.v)
	}
	c.unhold(j)
	c.n--
}

// unhold takes row j out of the cache.
func (c *liveCache) unhold(j int32) {
	ls := c.ls
	*c.ent(j) = cell{}
	if ls.rowN[j]--; ls.rowN[j] == 0 {
		ls.unheld = append(ls.unheld, j)
	}
}

// before reports whether entry a ranks before entry b: count descending, then item.
func (c *liveCache) before(p *Partition, a, b int32) bool {
	x, y := c.ent(a), c.ent(b)
	if x.v != y.v {
		return x.v > y.v
	}
	return p.in.strs[c.ls.rowID[a]] < p.in.strs[c.ls.rowID[b]]
}

// rank brings the list up to date: the best n of C with a count above zero. Risen entries
// merge into the last list (nothing else can have passed its last item); a fall in the
// list ranks all of C.
func (c *liveCache) rank(p *Partition) {
	n := p.mk()
	if c.dirty {
		for _, t := range c.top {
			c.ent(t.row).inTop = false
		}
		h := c.heap[:0] // the best n so far, the worst at the root
		for j := range c.ls.rowN {
			e := c.ent(int32(j))
			if !e.used || e.v == 0 {
				continue
			}
			if len(h) < n {
				h = append(h, int32(j))
				for i := len(h) - 1; i > 0 && c.before(p, h[(i-1)/2], h[i]); i = (i - 1) / 2 {
					h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
				}
				continue
			}
			if !c.before(p, int32(j), h[0]) {
				continue
			}
			h[0] = int32(j)
			for i := 0; ; {
				m, l, r := i, 2*i+1, 2*i+2
				if l < n && c.before(p, h[m], h[l]) {
					m = l
				}
				if r < n && c.before(p, h[m], h[r]) {
					m = r
				}
				if m == i {
					break
				}
				h[i], h[m] = h[m], h[i]
				i = m
			}
		}
		c.heap = h
		top := c.top[:0]
		for _, j := range h {
			c.ent(j).inTop = true
			e := c.ent(j)
			top = append(top, topEnt{row: j, inexact: e.inexact, v: e.v, item: p.in.strs[c.ls.rowID[j]]})
		}
		slices.SortFunc(top, func(a, b topEnt) int {
			if a.before(&b) {
				return -1
			}
			return 1
		})
		c.top, c.dirty, c.changed = top, false, c.changed[:0]
		c.place(0)
		return
	}
	if len(c.changed) == 0 {
		return
	}
	// The list's own items that rose take their counts, and may have passed each other:
	// sort it again from the first that rose (insertion: nearly sorted), then its last is the
	// bar a risen item outside it must pass.
	top, cand, lo := c.top, c.cand[:0], len(c.top)
	for _, j := range c.changed {
		switch e := c.ent(j); {
		case !e.used || e.v == 0:
		case e.inTop:
			k := int(c.pos[j])
			top[k].v = e.v
			lo = min(lo, k)
		default:
			cand = append(cand, topEnt{row: j, inexact: e.inexact, v: e.v})
		}
	}
	moved := len(top)
	for i := max(lo, 1); i < len(top); i++ {
		for k := i; k > 0 && top[k].before(&top[k-1]); k-- {
			top[k], top[k-1] = top[k-1], top[k]
			moved = min(moved, k-1)
		}
	}
	for _, t := range cand {
		e := c.ent(t.row)
		if e.inTop { // a duplicate in changed
			continue
		}
		if len(top) == n && (t.v < top[n-1].v || t.v == top[n-1].v && p.in.strs[c.ls.rowID[t.row]] > top[n-1].item) {
			continue
		}
		t.item = p.in.strs[c.ls.rowID[t.row]]
		e.inTop = true
		top = append(top, t)
		k := len(top) - 1
		for ; k > 0 && top[k].before(&top[k-1]); k-- {
			top[k], top[k-1] = top[k-1], top[k]
		}
		moved = min(moved, k)
		if len(top) > n {
			c.ent(top[n].row).inTop = false
			top = top[:n]
		}
	}
	c.top, c.changed, c.cand = top, c.changed[:0], cand[:0]
	c.place(moved)
}

// place records the list's positions from index i on.
func (c *liveCache) place(i int) {
	if n := len(c.ls.rowN); len(c.pos) < n {
		c.pos = append(c.pos, make([]int32, n-len(c.pos))...)
	}
	for ; i < len(c.top); i++ {
		c.pos[c.top[i].row] = int32(i)
	}
}

// items is the list as entries.
func (c *liveCache) items(p *Partition) []topk.Entry {
	if len(c.top) == 0 {
		return nil
	}
	out := c.out[:0]
	if cap(out) < len(c.top) {
		out = make([]topk.Entry, len(c.top), max(len(c.top), p.mk()))
	}
	out = out[:len(c.top)]
	c.out = out
	for i, t := range c.top {
		out[i] = topk.Entry{Item: t.item, Count: t.v}
	}
	return out
}

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
