package window

import (
	"cmp"
	"math"
	"slices"
	"time"

	"trending/speed/sketch"
)

// candidates is a sketch window's candidate set (docs/requirements.md, "Sketches"): a sketch can
// estimate any item but cannot list the top ones, so the window remembers
// the items whose running estimate reached the floor when they were last
// counted. Because an estimate is never low and a window count only falls
// after an item's last event, every item whose true count is at or above
// the floor in force at its last event is a candidate.
//
// The floor is max(Config.CandidateFloor, the adaptive floor), where the
// adaptive floor is the (M*K)-th largest candidate estimate at the last
// re-estimation (0 while there are fewer candidates). The window re-estimates
// every candidate once an hour of watermark time, and at once when the set
// outgrows Config.CandidateCap; it drops every candidate under the floor (and
// any whose estimate fell to 0). The adaptive floor makes small streams work
// without tuning and keeps the set near M*K; the price is that an item which
// sat under it at its last event and only later climbed into the top M*K
// (because others expired) waits for its next event to become a candidate. A
// fixed CandidateFloor well under the K-th count (half of it, as the capacity
// arithmetic sets it) keeps the stronger guarantee for such items.
type candidates struct {
	set   map[uint32]struct{}
	floor uint64 // adaptive floor at the last re-estimation
	at    int64  // Unix hour of the last re-estimation
	epoch uint64 // counts the times candidates were dropped (LiveAll's caches hold per epoch)
}

func newCandidates() candidates {
	return candidates{set: make(map[uint32]struct{}), at: math.MinInt64}
}

// offer makes id a candidate if its estimate reaches the floor.
func (c *candidates) offer(p *Partition, id uint32, est uint64) {
	if est < max(p.cfg.CandidateFloor, c.floor, 1) {
		return
	}
	if _, ok := c.set[id]; !ok {
		c.set[id] = struct{}{}
		p.in.ref(id)
	}
}

// maybeReestimate re-estimates if the watermark entered a new hour or the
// set outgrew the cap.
func (c *candidates) maybeReestimate(p *Partition, est func(uint32) uint64) {
	if h := floorDiv(p.asOf, 60); h != c.at || len(c.set) > p.cfg.CandidateCap {
		c.reestimate(p, est)
		c.at = h
	}
}

// reestimate sets the adaptive floor to the (M*K)-th largest estimate and
// drops every candidate under the floor.
func (c *candidates) reestimate(p *Partition, est func(uint32) uint64) {
	c.epoch++
	if len(c.set) == 0 {
		c.floor = 0
		return
	}
	type ce struct {
		id  uint32
		est uint64
	}
	all := make([]ce, 0, len(c.set))
	ests := make([]uint64, 0, len(c.set))
	for id := range c.set {
		e := est(id)
		all = append(all, ce{id, e})
		ests = append(ests, e)
	}
	c.floor = 0
	if mk := p.mk(); len(ests) >= mk {
		slices.Sort(ests)
		c.floor = ests[len(ests)-mk]
	}
	floor := max(p.cfg.CandidateFloor, c.floor, 1)
	for _, e := range all {
		if e.est < floor {
			delete(c.set, e.id)
			p.in.unref(e.id)
		}
	}
}

// clear drops every candidate.
func (c *candidates) clear(p *Partition) {
	c.epoch++
	for id := range c.set {
		p.in.unref(id)
	}
	clear(c.set)
	c.floor = 0
}

// offerMinute offers every item of a closed minute once the whole minute
// is in sk, so that the estimates, and the candidate set, do not depend on
// the order of the minute's entries (which differs after a restore); then
// re-estimates if due.
func offerMinute(p *Partition, c *candidates, sk *sketch.Sketch, f *frozen, hs []uint64) {
	for i, e := range f.ents {
		// A member needs no estimate (offer would do nothing), and the set
		// is small enough to stay in cache where the sketch's cells are not.
		if _, ok := c.set[uint32(e>>32)]; ok {
			continue
		}
		c.offer(p, uint32(e>>32), sk.EstimateHash(hs[i]))
	}
	for id := range f.extra {
		c.offer(p, id, sk.EstimateHash(p.hash(id)))
	}
	c.maybeReestimate(p, func(id uint32) uint64 { return sk.EstimateHash(p.hash(id)) })
}

// addFrozen adds a closed minute to a sketch that is never subtracted (a
// calendar or all-time sketch): its entries, whose hashes and counts are hs
// and ns, in one AddHashes. Conservative update is not commutative: two
// items sharing a cell can leave different cells depending on which comes
// first. The partition sorts a minute's entries by hash before the windows
// see it (sortByHash), AddHashes takes a conservative sketch's keys in slice
// order (a standard one's in any: sums), and the rare side entries (counts
// over 32 bits) are added here in hash order too, so the cells depend on the
// minute's counts alone, not on arrival or map order, which a restore does
// not keep. Items with equal hashes share every cell, and for them the order
// does not matter.
func addFrozen(p *Partition, sk *sketch.Sketch, f *frozen, hs, ns []uint64) {
	addMany(sk, hs, ns)
	if len(f.extra) == 0 {
		return
	}
	xs := make([]hashEnt, 0, len(f.extra))
	for id, c := range f.extra {
		xs = append(xs, hashEnt{p.hash(id), c})
	}
	slices.SortFunc(xs, func(a, b hashEnt) int { return cmp.Compare(a.h, b.h) })
	for _, x := range xs {
		sk.AddHash(x.h, x.v)
	}
}

// bulkAdd makes addMany use sketch.AddHashes; off, it adds key by key with
// AddHash, the path before AddHashes, which leaves the same cells.
// Only tests change it (TestBulkAddSameState, BenchmarkSlideSketch,
// TestSlideSketchInterleaved), to compare both paths in one process; none of
// the package's tests runs in parallel.
var bulkAdd = true

// addMany adds the keys hashed hs with counts ns to sk: sk.AddHashes, or one
// by one when bulkAdd is off.
func addMany(sk *sketch.Sketch, hs, ns []uint64) {
	if bulkAdd {
		sk.AddHashes(hs, ns)
		return
	}
	for i, h := range hs {
		sk.AddHash(h, ns[i])
	}
}

// hashEnt pairs a sketch hash with a count or a packed entry.
type hashEnt struct{ h, v uint64 }

// top ranks the candidates by estimate.
func (c *candidates) top(p *Partition, sk *sketch.Sketch) List {
	l := List{Exact: false, Total: sk.Total()}
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, sk.Total())
	l.Bound = &b
	l.Items = topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id := range c.set {
			offer(id, sk.EstimateHash(p.hash(id)))
		}
	}, p.in.strs)
	return l
}

// sbucket is one bucket of a sketch window.
type sbucket struct {
	start int64
	sk    *sketch.Sketch
	// piece is the name of the incremental-checkpoint piece that holds sk as it is, ""
	// when sk changed since (or was never stored); ver says which version of sk a
	// snapshot captured (see Partition.Stored).
	piece string
	ver   uint64
}

// sketchSliding is a sliding window counted by count-min sketches: one per
// bucket plus the running sum of the buckets in the window, which slides by
// adding each closed minute and subtracting each expired bucket cell by
// cell (standard update, since conservative cells cannot be subtracted).
type sketchSliding struct {
	cfg     WindowConfig
	b, n    int64
	running *sketch.Sketch
	buckets []sbucket // by start; the newest is the open bucket
	cands   candidates
}

func newSketchSliding(p *Partition, wc WindowConfig) *sketchSliding {
	return &sketchSliding{
		cfg:     wc,
		b:       int64(wc.Bucket / time.Minute),
		n:       int64(wc.Length / wc.Bucket),
		running: p.newSketch(),
		cands:   newCandidates(),
	}
}

func (w *sketchSliding) conf() WindowConfig { return w.cfg }

func (w *sketchSliding) start(asOf int64) int64 {
	return floorTo(asOf-1, w.b) - (w.n-1)*w.b
}

func (w *sketchSliding) advance(p *Partition) {
	ws := w.start(p.asOf)
	n := 0
	for n < len(w.buckets) && w.buckets[n].start < ws {
		if err := w.running.Subtract(w.buckets[n].sk); err != nil {
			panic("BUG: window: expiring bucket sketch: " + err.Error())
		}
		p.putSketch(w.buckets[n].sk)
		n++
	}
	if n > 0 {
		w.buckets = slices.Delete(w.buckets, 0, n)
	}
	w.cands.maybeReestimate(p, w.estimate(p))
}

func (w *sketchSliding) estimate(p *Partition) func(uint32) uint64 {
	return func(id uint32) uint64 { return w.running.EstimateHash(p.hash(id)) }
}

// bucket returns the bucket sketch starting at s, creating it.
func (w *sketchSliding) bucket(p *Partition, s int64) *sketch.Sketch {
	i, ok := slices.BinarySearchFunc(w.buckets, s, func(b sbucket, s int64) int {
		switch {
		case b.start < s:
			return -1
		case b.start > s:
			return 1
		}
		return 0
	})
	if !ok {
		w.buckets = slices.Insert(w.buckets, i, sbucket{start: s, sk: p.newSketch()})
	}
	// Every change to a bucket sketch comes through here.
	p.skVer++
	w.buckets[i].piece, w.buckets[i].ver = "", p.skVer
	return w.buckets[i].sk
}

func (w *sketchSliding) addMinute(p *Partition, f *frozen, hs, ns []uint64) {
	bk := w.bucket(p, floorTo(f.start, w.b))
	addMany(w.running, hs, ns)
	addMany(bk, hs, ns)
	for id, c := range f.extra {
		h := p.hash(id)
		w.running.AddHash(h, c)
		bk.AddHash(h, c)
	}
	offerMinute(p, &w.cands, w.running, f, hs)
}

func (w *sketchSliding) add(p *Partition, bk *sketch.Sketch, id uint32, c, h uint64) {
	w.running.AddHash(h, c)
	bk.AddHash(h, c)
	w.cands.offer(p, id, w.running.EstimateHash(h))
}

func (w *sketchSliding) accepts(p *Partition, m int64) bool {
	return floorTo(m, w.b) >= w.start(p.asOf)
}

func (w *sketchSliding) addLate(p *Partition, m int64, id uint32, c, h uint64) {
	w.add(p, w.bucket(p, floorTo(m, w.b)), id, c, h)
	w.cands.maybeReestimate(p, w.estimate(p))
}

func (w *sketchSliding) top(p *Partition) List {
	l := w.cands.top(p, w.running)
	l.Window = w.cfg.Name
	if p.started {
		l.Start, l.End, l.AsOf = minuteTime(w.start(p.asOf)), minuteTime(p.asOf), minuteTime(p.asOf)
	}
	return l
}

func (w *sketchSliding) stats(s *Stats) {
	n := 1 + len(w.buckets)
	s.Sketches += n
	s.Bytes += int64(n) * int64(w.running.Config().Bytes())
	s.Candidates += len(w.cands.set)
	s.Bytes += int64(len(w.cands.set)) * 16
}

// sketchCalendar is a calendar window counted by one count-min sketch for
// the open period. It is never subtracted, so it honours
// Config.Sketch.Conservative.
type sketchCalendar struct {
	cfg          WindowConfig
	sk           *sketch.Sketch
	j            journal // what reached sk since its stored base (journal.go)
	cands        candidates
	opened       bool
	pstart, pend int64
}

func newSketchCalendar(p *Partition, wc WindowConfig) *sketchCalendar {
	sk, err := sketch.New(p.cfg.Sketch)
	if err != nil {
		panic("BUG: window: validated sketch config rejected: " + err.Error())
	}
	return &sketchCalendar{cfg: wc, sk: sk, cands: newCandidates()}
}

func (w *sketchCalendar) conf() WindowConfig { return w.cfg }

func (w *sketchCalendar) advance(p *Partition) {
	if w.opened && p.asOf >= w.pend {
		l := w.list(p, true)
		l.Tracked = p.closedTracked(w, l.Start)
		p.closed = append(p.closed, l)
		w.sk.Reset()
		w.j.reset(p)
		w.cands.clear(p)
		w.opened = false
	}
	w.cands.maybeReestimate(p, w.estimate(p))
}

func (w *sketchCalendar) estimate(p *Partition) func(uint32) uint64 {
	return func(id uint32) uint64 { return w.sk.EstimateHash(p.hash(id)) }
}

func (w *sketchCalendar) accepts(p *Partition, m int64) bool {
	if w.opened {
		return m >= w.pstart
	}
	return w.cfg.Span.EndMinute(w.cfg.Span.StartMinute(m)) > p.asOf
}

func (w *sketchCalendar) ensure(m int64) {
	if !w.opened {
		w.opened = true
		w.pstart = w.cfg.Span.StartMinute(m)
		w.pend = w.cfg.Span.EndMinute(w.pstart)
	}
}

func (w *sketchCalendar) add(p *Partition, id uint32, c, h uint64) {
	w.sk.AddHash(h, c)
	w.j.add(p, id, c)
	w.cands.offer(p, id, w.sk.EstimateHash(h))
}

func (w *sketchCalendar) addMinute(p *Partition, f *frozen, hs, ns []uint64) {
	w.ensure(f.start)
	addFrozen(p, w.sk, f, hs, ns)
	w.j.minute(p, f)
	offerMinute(p, &w.cands, w.sk, f, hs)
}

func (w *sketchCalendar) addLate(p *Partition, m int64, id uint32, c, h uint64) {
	w.ensure(m)
	w.add(p, id, c, h)
	w.cands.maybeReestimate(p, w.estimate(p))
}

func (w *sketchCalendar) top(p *Partition) List { return w.list(p, false) }

func (w *sketchCalendar) list(p *Partition, final bool) List {
	l := w.cands.top(p, w.sk)
	l.Window, l.Final = w.cfg.Name, final
	if !p.started {
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

func (w *sketchCalendar) stats(s *Stats) {
	s.Sketches++
	s.Bytes += int64(w.sk.Config().Bytes())
	s.Candidates += len(w.cands.set)
	s.Bytes += int64(len(w.cands.set)) * 16
}
