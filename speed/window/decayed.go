package window

import (
	"math"
	"slices"
	"time"

	"trending/model/topk"
	"trending/speed/sketch"
)

// Decayed windows ("trending now", seed 004): no edge at all. Every view counts, weighted
// 2^(-age/HalfLife), its age measured from the start of its minute (event time, truncated to
// the minute as every window buckets it) to the list's as-of: a view of the minute that
// just began counts 1, one a half-life older 1/2. An item's score is the sum of its weights,
// the views it is worth now; a burst shows within a minute and fades smoothly instead of
// dropping out of a window all at once.
//
// # Numbers
//
// A score is stored against a fixed epoch E rather than against now, as the value
// c x 2^((m-E)/h) per minute m (h the half-life in minutes): a view's value never changes
// once added, so closing a minute adds each of its items once, late events add like any
// other, and lists rank by value without touching any other item. The score at time t is the
// value times 2^((E-t)/h). Values grow as 2^(t/h), so E moves, in steps of epochHalfLives
// half-lives (and is always a multiple of that step: a function of the watermark alone), and
// every value is multiplied by 2^-k for the k half-lives it moved: an exact operation on a
// float64 (only its exponent changes), so rescaling in one step or several, before or after
// a restore, gives the same bits, and values stay below 2^(64+epochHalfLives+lateness/h)
// times the largest count, far from overflow for years of uptime (MinHalfLife keeps the
// lateness term small). Weights are computed as 2^q x 2^(r/h) for m-E = q x h + r, so the
// weight of a minute against two epochs a whole number of half-lives apart differs by an
// exact power of two as well.
//
// An item whose score falls under 2^-ForgetHalfLives views (a single view, ForgetHalfLives
// half-lives later) is forgotten once an hour: its memory is freed, and the score it would
// have kept is at most that much (scores are lower than the exact decayed sum by less than
// 2^(1-ForgetHalfLives) views, which is what "exact" means for a decayed window). Values
// smaller than sketch.FlushBelow are zero.
//
// # Exact and sketch
//
// Exact mode keeps one value per item, a float64 in a dense slice by handle (its bits:
// positive floats order as their bits do, so the partition's count heap ranks them). Its
// memory is the distinct items of about ForgetHalfLives half-lives, which is why Auto picks
// it only up to a 24-hour horizon, as for any window. Sketch mode keeps one float count-min
// sketch (sketch.Float: the count-min bound at N = the decayed total) and a candidate set
// like the all-time sketch's: values only grow between rescales, which scale every estimate
// alike, so the candidate rules carry over; a closed minute reaches the sketch sorted by
// hash, so float rounding does not depend on the order a restore gives its entries.
//
// # Lists
//
// A decayed list ranks by score (List.Scored; Items is empty) and carries its HalfLife.
// Top answers as of AsOf; Live and LiveAll add the open minutes' views at their weights, as
// of the newest event time. Between two calls of LiveAll an item's live value only grows
// unless it is forgotten (exact: closing a minute moves its views from the open part to the
// stored value, the same float operations in the same order), so LiveAll ranks the last
// list's items and the items counted since, not the whole state.

const (
	// ForgetHalfLives is how many half-lives a single view is remembered: an item whose
	// score falls under 2^-ForgetHalfLives views is forgotten (see above). It also sets a
	// decayed window's horizon for Auto (ForgetHalfLives x HalfLife, exact up to 24 hours).
	ForgetHalfLives = 10
	// MinHalfLife and MaxHalfLife bound WindowConfig.HalfLife (whole minutes).
	MinHalfLife = 5 * time.Minute
	MaxHalfLife = 30 * 24 * time.Hour
	// epochHalfLives is the step of the epoch, in half-lives (see above).
	epochHalfLives = 64
)

// forgetBelow is the score under which an item is forgotten.
var forgetBelow = math.Ldexp(1, -ForgetHalfLives)

// Horizon is how long a decayed window remembers a single view (ForgetHalfLives half-lives):
// the length Auto and the capacity arithmetic size it by.
func Horizon(halfLife time.Duration) time.Duration { return ForgetHalfLives * halfLife }

// pow2 returns 2^(n/d) for d > 0, as 2^q x 2^(r/d) with n = q*d + r and 0 <= r < d.
func pow2(n, d int64) float64 {
	q := floorDiv(n, d)
	r := n - q*d
	q = max(min(q, 1<<20), -(1 << 20))
	return math.Ldexp(math.Exp2(float64(r)/float64(d)), int(q))
}

// decay is the arithmetic both decayed windows share: the half-life and the epoch.
type decay struct {
	h     int64 // half-life in minutes
	epoch int64 // E in Unix minutes: a multiple of epochHalfLives*h
}

// weight is the value of one view of minute m.
func (d *decay) weight(m int64) float64 { return pow2(m-d.epoch, d.h) }

// factor turns a value into the score at Unix millisecond t.
func (d *decay) factor(t int64) float64 { return pow2(d.epoch*minuteMs-t, d.h*minuteMs) }

// move sets the epoch for watermark minute asOf and returns the power of two every value
// must be scaled by (0 when the epoch stays).
func (d *decay) move(asOf int64) int {
	e := floorTo(asOf, epochHalfLives*d.h)
	if e <= d.epoch {
		return 0
	}
	k := min((e-d.epoch)/d.h, 1<<20)
	d.epoch = e
	return -int(k)
}

// scaleValue is v scaled by 2^k, flushed to zero under sketch.FlushBelow.
func scaleValue(v float64, k int) float64 {
	if v = math.Ldexp(v, k); v < sketch.FlushBelow {
		return 0
	}
	return v
}

// openWeights is the weight of each open minute, in p.open's order.
func (d *decay) openWeights(p *Partition, buf []float64) []float64 {
	buf = buf[:0]
	for i := range p.open {
		buf = append(buf, d.weight(p.open[i].minute))
	}
	return buf
}

// openMinuteCount is id's count in one open minute.
func openMinuteCount(o *openMinute, id uint32) uint64 {
	if g := o.g; g != nil {
		if int(id) < len(g.sparse) {
			if j := g.sparse[id]; int(j) < len(g.ids) && g.ids[j] == id {
				return g.counts[j]
			}
		}
		return 0
	}
	return o.counts[id]
}

// liveValue is a stored value plus id's views in the open minutes at their weights, added
// minute by minute in order: closing a minute adds the same product to the stored value, so
// the sum is the same float whether a minute is open or closed. Every product is converted
// explicitly, here and where values are added, so that no compiler fuses a multiply-add
// (the Go spec allows it, arm64 does it) and changes a rounding on one path only.
func liveValue(p *Partition, base float64, id uint32, ws []float64) float64 {
	for i := range p.open {
		if c := openMinuteCount(&p.open[i], id); c > 0 {
			base += float64(float64(c) * ws[i])
		}
	}
	return base
}

// liveMass is a stored total plus the open minutes' views at their weights (each minute's
// count summed as an integer first), in order.
func liveMass(mass float64, tots []uint64, ws []float64) float64 {
	for i, t := range tots {
		mass += float64(float64(t) * ws[i])
	}
	return mass
}

// openTotals is the total count of each open minute, in p.open's order.
func (p *Partition) openTotals(buf []uint64) []uint64 {
	buf = buf[:0]
	for i := range p.open {
		var t uint64
		p.open[i].each(func(_ uint32, c uint64) { t += c })
		buf = append(buf, t)
	}
	return buf
}

// decayedMeta is a decayed list without its items: AsOf is t, End is AsOf, no Start (a
// decayed list has no edge).
func decayedMeta(wc WindowConfig, t time.Time, exact bool) List {
	return List{Window: wc.Name, End: t, AsOf: t, HalfLife: wc.HalfLife, Exact: exact}
}

// scoredOf turns a heap's entries (values as ScoreKey bits) into scores at factor f.
func scoredOf(es []topk.Entry, f float64) []topk.Scored {
	out := make([]topk.Scored, 0, len(es))
	for _, e := range es {
		if s := topk.ScoreOf(e.Count) * f; s > 0 {
			out = append(out, topk.Scored{Item: e.Item, Score: s})
		}
	}
	return out
}

// roundTotal is a decayed total as a list's Total: the score rounded to whole views.
func roundTotal(v float64) uint64 {
	if !(v > 0) {
		return 0
	}
	return uint64(math.Round(min(v, maxSnapCount)))
}

// decayedLive is LiveAll's cache of a decayed window: the handles of its last list, and
// the open minutes' totals, kept up to date from the events counted since.
type decayedLive struct {
	built bool
	gen   int64  // p.gen at the last call
	epoch uint64 // the window's forget epoch at the last call
	top   []uint32
	tots  []uint64 // per open minute (p.open's order at gen)
	ws    []float64
	ids   []uint32 // scratch
	seen  map[uint32]bool
}

// decayedWindow is what Live and LiveAll ask of a decayed window.
type decayedWindow interface {
	window
	// live is the window's list from scratch as of the newest event time.
	live(p *Partition, ov *overlay) List
	// liveAll is live, updated from the events counted since the last call (see above).
	liveAll(p *Partition, ov *overlay, ts []touch, distinct []uint32, overflow bool) List
}

// liveList ranks ids by live value (base(id) plus the open minutes), best first, as of t,
// and returns the list with the decayed total of the window's views (mass plus the open
// minutes), also unrounded.
func (c *decayedLive) liveList(p *Partition, meta List, d *decay, t int64, mass float64, base func(uint32) float64, ids []uint32) (List, float64) {
	h := topk.NewHeap(p.mk())
	for _, id := range ids {
		if p.in.strs[id] == "" {
			continue
		}
		if v := liveValue(p, base(id), id, c.ws); v > 0 {
			h.Offer(p.in.strs[id], topk.ScoreKey(v))
		}
	}
	es := h.Sorted()
	c.top = c.top[:0]
	for _, e := range es {
		id, _ := p.in.lookup(e.Item)
		c.top = append(c.top, id)
	}
	f := d.factor(t)
	meta.Scored = scoredOf(es, f)
	n := liveMass(mass, c.tots, c.ws) * f
	meta.Total = roundTotal(n)
	return meta, n
}

// refresh brings the open minutes' totals and weights up to date: rescanned when a minute
// closed (or on a rebuild), else advanced by the events counted since.
func (c *decayedLive) refresh(p *Partition, d *decay, ts []touch, rescan bool) {
	if rescan || c.gen != p.gen || len(c.tots) != len(p.open) {
		c.tots = p.openTotals(c.tots)
	} else {
		for _, t := range ts {
			if int64(t.m) < p.asOf {
				continue
			}
			if i, ok := slices.BinarySearchFunc(p.open, int64(t.m), func(o openMinute, m int64) int { return int64cmp(o.minute, m) }); ok {
				c.tots[i] += uint64(t.c)
			}
		}
	}
	c.ws = d.openWeights(p, c.ws)
}

// candidates is the items to rank: every one when rebuilding (all(fn) offers them), else
// the last list's and those counted since.
func (c *decayedLive) candidates(p *Partition, rebuild bool, distinct []uint32, all func(func(uint32))) []uint32 {
	ids := c.ids[:0]
	if c.seen == nil {
		c.seen = map[uint32]bool{}
	}
	clear(c.seen)
	add := func(id uint32) {
		if !c.seen[id] {
			c.seen[id] = true
			ids = append(ids, id)
		}
	}
	if rebuild {
		all(add)
	} else {
		for _, id := range c.top {
			add(id)
		}
		for _, id := range distinct {
			add(id)
		}
	}
	c.ids = ids
	return ids
}

// eachOpen offers every item of the open minutes.
func (p *Partition) eachOpen(fn func(uint32)) {
	for i := range p.open {
		p.open[i].each(func(id uint32, _ uint64) { fn(id) })
	}
}

// decayedExact is a decayed window counted exactly: one value per item.
type decayedExact struct {
	cfg    WindowConfig
	d      decay
	values []uint64 // by handle: the float64 bits of the item's value (0: none); each nonzero holds a reference
	mass   float64  // every value added, scaled with them
	at     int64    // the Unix hour of the last sweep
	forgot uint64   // bumped whenever an item is forgotten (LiveAll rebuilds)
	lc     decayedLive
	ck     decayedCkpt
}

// decayedCkpt is what incremental checkpoints of an exact decayed window need (decayed_snap.go):
// a stored base of every value and, since it, which values changed. mark[id] is the
// generation in which the item's value last changed; a checkpoint that stores every value
// covers the changes of generations up to its own, and starts the next.
type decayedCkpt struct {
	mark      []uint64 // by handle
	gen       uint64   // the current generation, from 1
	gone      []goneItem
	base      string // the stored piece of every value, "" when none is known
	baseGen   uint64 // the generation the base covers
	baseEpoch int64  // the epoch its values are against
}

// goneItem is an item forgotten in generation gen.
type goneItem struct {
	name string
	gen  uint64
}

func newDecayedExact(p *Partition, wc WindowConfig) *decayedExact {
	w := &decayedExact{cfg: wc, d: decay{h: int64(wc.HalfLife / time.Minute)}, at: math.MinInt64, ck: decayedCkpt{gen: 1}}
	p.in.register(&w.values)
	p.in.register(&w.ck.mark)
	return w
}

func (w *decayedExact) conf() WindowConfig { return w.cfg }

func (w *decayedExact) value(id uint32) float64 { return math.Float64frombits(w.values[id]) }

func (w *decayedExact) forget(p *Partition, id uint32) {
	w.ck.forgotten(p.in.strs[id])
	w.values[id], w.ck.mark[id] = 0, 0
	p.in.unref(id)
	w.forgot++
}

// advance moves the epoch (rescaling every value) and, once an hour, forgets the items
// whose score fell under forgetBelow.
func (w *decayedExact) advance(p *Partition) {
	if k := w.d.move(p.asOf); k != 0 {
		for id, b := range w.values {
			if b == 0 {
				continue
			}
			if v := scaleValue(math.Float64frombits(b), k); v > 0 {
				w.values[id] = math.Float64bits(v)
			} else {
				w.forget(p, uint32(id))
			}
		}
		w.mass = scaleValue(w.mass, k)
	}
	if hr := floorDiv(p.asOf, 60); hr != w.at {
		w.at = hr
		w.sweep(p)
	}
}

// sweep forgets every item whose score as of AsOf is under forgetBelow.
func (w *decayedExact) sweep(p *Partition) {
	floor := forgetBelow / w.d.factor(p.asOf*minuteMs)
	for id, b := range w.values {
		if b != 0 && math.Float64frombits(b) < floor {
			w.forget(p, uint32(id))
		}
	}
}

func (w *decayedExact) add(p *Partition, id uint32, v float64) {
	if !(v > 0) {
		return
	}
	if w.values[id] == 0 {
		p.in.ref(id)
	}
	w.values[id] = math.Float64bits(w.value(id) + v)
	w.ck.mark[id] = w.ck.gen
}

func (w *decayedExact) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	wt := w.d.weight(f.start)
	var total uint64
	for _, e := range f.ents {
		c := e & math.MaxUint32
		w.add(p, uint32(e>>32), float64(float64(c)*wt))
		total += c
	}
	for id, c := range f.extra {
		w.add(p, id, float64(float64(c)*wt))
		total += c
	}
	w.mass += float64(float64(total) * wt)
}

// accepts every late event: it weighs what its minute weighs.
func (w *decayedExact) accepts(*Partition, int64) bool { return true }

func (w *decayedExact) addLate(p *Partition, m int64, id uint32, c, _ uint64) {
	v := float64(float64(c) * w.d.weight(m))
	w.add(p, id, v)
	w.mass += v
}

func (w *decayedExact) top(p *Partition) List {
	if !p.started {
		return List{Window: w.cfg.Name, HalfLife: w.cfg.HalfLife, Exact: true}
	}
	l := decayedMeta(w.cfg, minuteTime(p.asOf), true)
	f := w.d.factor(p.asOf * minuteMs)
	l.Scored = scoredOf(topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id, b := range w.values {
			if b != 0 {
				offer(uint32(id), b)
			}
		}
	}, p.in.strs), f)
	l.Total = roundTotal(w.mass * f)
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue, nil, p.asOf*minuteMs)
	return l
}

func (w *decayedExact) all(p *Partition) func(func(uint32)) {
	return func(fn func(uint32)) {
		for id, b := range w.values {
			if b != 0 {
				fn(uint32(id))
			}
		}
		p.eachOpen(fn)
	}
}

func (w *decayedExact) live(p *Partition, ov *overlay) List {
	var c decayedLive
	c.refresh(p, &w.d, nil, true)
	l, _ := c.liveList(p, decayedMeta(w.cfg, ov.asOf, true), &w.d, ov.asOf.UnixMilli(), w.mass, w.value,
		c.candidates(p, true, nil, w.all(p)))
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue, c.ws, ov.asOf.UnixMilli())
	return l
}

func (w *decayedExact) liveAll(p *Partition, ov *overlay, ts []touch, distinct []uint32, overflow bool) List {
	c := &w.lc
	rebuild := !c.built || overflow || c.epoch != w.forgot
	c.refresh(p, &w.d, ts, rebuild)
	l, _ := c.liveList(p, decayedMeta(w.cfg, ov.asOf, true), &w.d, ov.asOf.UnixMilli(), w.mass, w.value,
		c.candidates(p, rebuild, distinct, w.all(p)))
	c.built, c.gen, c.epoch = true, p.gen, w.forgot
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue, c.ws, ov.asOf.UnixMilli())
	return l
}

func (w *decayedExact) liveSpec(*Partition, *overlay) liveSpec {
	panic("BUG: window: liveSpec of a decayed window (Live and LiveAll ask decayedWindow)")
}

func (w *decayedExact) stats(s *Stats) {
	s.Bytes += int64(cap(w.values)+cap(w.ck.mark)) * 8
	for _, g := range w.ck.gone {
		s.Bytes += int64(24 + len(g.name))
	}
}

// decayedSketch is a decayed window counted by one float count-min sketch and a candidate
// set, ranked by estimate.
type decayedSketch struct {
	cfg   WindowConfig
	d     decay
	sk    *sketch.Float
	cands map[uint32]struct{} // each holds a reference
	floor float64             // the (M*K)-th largest estimate at the last re-estimation
	at    int64               // the Unix hour of the last re-estimation
	drops uint64              // bumped whenever candidates were dropped (LiveAll rebuilds)
	lc    decayedLive
	hbuf  []hashEnt
}

func newDecayedSketch(p *Partition, wc WindowConfig) *decayedSketch {
	sk, err := sketch.NewFloat(p.cfg.Sketch)
	if err != nil {
		panic("BUG: window: validated sketch config rejected: " + err.Error())
	}
	return &decayedSketch{cfg: wc, d: decay{h: int64(wc.HalfLife / time.Minute)}, sk: sk, cands: map[uint32]struct{}{}, at: math.MinInt64}
}

func (w *decayedSketch) conf() WindowConfig { return w.cfg }

func (w *decayedSketch) estimate(p *Partition, id uint32) float64 {
	return w.sk.EstimateHash(p.hash(id))
}

// forgetFloor is the value under which an item is forgotten as of AsOf.
func (w *decayedSketch) forgetFloor(p *Partition) float64 {
	return forgetBelow / w.d.factor(p.asOf*minuteMs)
}

// offer makes id a candidate if its estimate reaches the adaptive floor and forget, the
// forget floor as of AsOf.
func (w *decayedSketch) offer(p *Partition, id uint32, est, forget float64) {
	if est < w.floor || est < forget || !(est > 0) {
		return
	}
	if _, ok := w.cands[id]; !ok {
		w.cands[id] = struct{}{}
		p.in.ref(id)
	}
}

// reestimate sets the adaptive floor to the (M*K)-th largest estimate and drops every
// candidate under it or under the forget floor.
func (w *decayedSketch) reestimate(p *Partition) {
	type ce struct {
		id  uint32
		est float64
	}
	all := make([]ce, 0, len(w.cands))
	ests := make([]float64, 0, len(w.cands))
	for id := range w.cands {
		e := w.estimate(p, id)
		all = append(all, ce{id, e})
		ests = append(ests, e)
	}
	w.floor = 0
	if mk := p.mk(); len(ests) >= mk {
		slices.Sort(ests)
		w.floor = ests[len(ests)-mk]
	}
	floor := max(w.floor, w.forgetFloor(p))
	dropped := false
	for _, e := range all {
		if e.est < floor || !(e.est > 0) {
			delete(w.cands, e.id)
			p.in.unref(e.id)
			dropped = true
		}
	}
	if dropped {
		w.drops++
	}
}

func (w *decayedSketch) advance(p *Partition) {
	if k := w.d.move(p.asOf); k != 0 {
		w.sk.Scale(k)
		w.floor = scaleValue(w.floor, k)
	}
	if hr := floorDiv(p.asOf, 60); hr != w.at || len(w.cands) > p.cfg.CandidateCap {
		w.at = hr
		w.reestimate(p)
	}
}

func (w *decayedSketch) accepts(*Partition, int64) bool { return true }

// addMinute adds a closed minute's entries in hash order (the partition sorted them: see
// decayedSketch), the side entries after them in hash order too, then offers every item.
func (w *decayedSketch) addMinute(p *Partition, f *frozen, hs, ns []uint64) {
	wt := w.d.weight(f.start)
	for i, h := range hs {
		w.sk.AddHash(h, float64(float64(ns[i])*wt))
	}
	if len(f.extra) > 0 {
		xs := w.hbuf[:0]
		for id, c := range f.extra {
			xs = append(xs, hashEnt{p.hash(id), c})
		}
		slices.SortFunc(xs, func(a, b hashEnt) int { return cmpUint64(a.h, b.h) })
		for _, x := range xs {
			w.sk.AddHash(x.h, float64(float64(x.v)*wt))
		}
		w.hbuf = xs
	}
	forget := w.forgetFloor(p)
	for i, e := range f.ents {
		id := uint32(e >> 32)
		if _, ok := w.cands[id]; !ok {
			w.offer(p, id, w.sk.EstimateHash(hs[i]), forget)
		}
	}
	for id := range f.extra {
		w.offer(p, id, w.estimate(p, id), forget)
	}
	if len(w.cands) > p.cfg.CandidateCap {
		w.reestimate(p)
	}
}

func (w *decayedSketch) addLate(p *Partition, m int64, id uint32, c, h uint64) {
	w.sk.AddHash(h, float64(float64(c)*w.d.weight(m)))
	w.offer(p, id, w.sk.EstimateHash(h), w.forgetFloor(p))
	if len(w.cands) > p.cfg.CandidateCap {
		w.reestimate(p)
	}
}

// bound is the count-min bound of a list whose decayed total is n views.
func (w *decayedSketch) bound(p *Partition, n float64) *sketch.Bound {
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, 0)
	b.MaxOvercount = math.E / float64(p.cfg.Sketch.Width) * n
	return &b
}

func (w *decayedSketch) top(p *Partition) List {
	if !p.started {
		return List{Window: w.cfg.Name, HalfLife: w.cfg.HalfLife}
	}
	l := decayedMeta(w.cfg, minuteTime(p.asOf), false)
	f := w.d.factor(p.asOf * minuteMs)
	l.Scored = scoredOf(topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id := range w.cands {
			offer(id, topk.ScoreKey(w.estimate(p, id)))
		}
	}, p.in.strs), f)
	n := w.sk.Total() * f
	l.Total, l.Bound = roundTotal(n), w.bound(p, n)
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue(p), nil, p.asOf*minuteMs)
	return l
}

func (w *decayedSketch) base(p *Partition) func(uint32) float64 {
	return func(id uint32) float64 { return w.estimate(p, id) }
}

func (w *decayedSketch) all(fn func(uint32)) {
	for id := range w.cands {
		fn(id)
	}
}

// sketchList finishes a live list (of candidates only: an open item becomes one when its
// minute closes) with the bound at its decayed total n.
func (w *decayedSketch) sketchList(p *Partition, l List, n float64) List {
	l.Bound = w.bound(p, n)
	return l
}

func (w *decayedSketch) live(p *Partition, ov *overlay) List {
	var c decayedLive
	c.refresh(p, &w.d, nil, true)
	l, n := c.liveList(p, decayedMeta(w.cfg, ov.asOf, false), &w.d, ov.asOf.UnixMilli(), w.sk.Total(), w.base(p),
		c.candidates(p, true, nil, w.all))
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue(p), c.ws, ov.asOf.UnixMilli())
	return w.sketchList(p, l, n)
}

// liveAll rebuilds whenever a minute closed (it raised estimates of candidates it did not
// name) or candidates were dropped; between, it ranks the last list and the candidates
// counted since.
func (w *decayedSketch) liveAll(p *Partition, ov *overlay, ts []touch, distinct []uint32, overflow bool) List {
	c := &w.lc
	rebuild := !c.built || overflow || c.epoch != w.drops || c.gen != p.gen
	c.refresh(p, &w.d, ts, rebuild)
	ids := distinct
	if !rebuild {
		ids = c.ids[:0]
		for _, id := range distinct {
			if _, ok := w.cands[id]; ok {
				ids = append(ids, id)
			}
		}
		ids = slices.Clone(ids)
	}
	l, n := c.liveList(p, decayedMeta(w.cfg, ov.asOf, false), &w.d, ov.asOf.UnixMilli(), w.sk.Total(), w.base(p),
		c.candidates(p, rebuild, ids, w.all))
	c.built, c.gen, c.epoch = true, p.gen, w.drops
	l.TrackedScored = p.trackedScored(&w.d, w.trackedValue(p), c.ws, ov.asOf.UnixMilli())
	return w.sketchList(p, l, n)
}

func (w *decayedSketch) liveSpec(*Partition, *overlay) liveSpec {
	panic("BUG: window: liveSpec of a decayed window (Live and LiveAll ask decayedWindow)")
}

func (w *decayedSketch) stats(s *Stats) {
	s.Sketches++
	s.Bytes += int64(w.sk.Config().Bytes())
	s.Candidates += len(w.cands)
	s.Bytes += int64(len(w.cands)) * 16
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
