package window

import (
	"math"
	"time"

	"trending/speed/sketch"
)

// allTimeStart is the start of every all-time list: the earliest event time
// a partition accepts, so [Start, End) really is the interval counted.
var allTimeStart = time.UnixMilli(minEventMs).UTC()

// allTimeBounds fills an all-time list's interval: everything up to AsOf.
func allTimeBounds(p *Partition, l *List) {
	if p.started {
		l.Start, l.End, l.AsOf = allTimeStart, minuteTime(p.asOf), minuteTime(p.asOf)
	}
}

// exactAll is an all-time window counted exactly: one running total per
// item in a dense slice indexed by handle, only ever added to. Each nonzero
// total holds a reference on its item, so an item once counted stays
// interned for good: the memory grows with the distinct items ever seen
// (about 60 bytes an item with the interner), which suits small
// deployments; the default all-time window counts by sketch.
type exactAll struct {
	cfg    WindowConfig
	totals []uint64
	sum    uint64
}

func newExactAll(p *Partition, wc WindowConfig) *exactAll {
	w := &exactAll{cfg: wc}
	p.in.register(&w.totals)
	return w
}

func (w *exactAll) conf() WindowConfig { return w.cfg }

// advance has nothing to do: nothing expires.
func (w *exactAll) advance(*Partition) {}

// accepts every late event: every closed minute is in the window.
func (w *exactAll) accepts(*Partition, int64) bool { return true }

func (w *exactAll) add(p *Partition, id uint32, c uint64) {
	if w.totals[id] == 0 {
		p.in.ref(id)
	}
	w.totals[id] += c
	w.sum += c
}

func (w *exactAll) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	t := w.totals
	for _, e := range f.ents {
		id, c := uint32(e>>32), e&math.MaxUint32
		if t[id] == 0 {
			p.in.ref(id)
		}
		t[id] += c
		w.sum += c
	}
	for id, c := range f.extra {
		w.add(p, id, c)
	}
}

func (w *exactAll) addLate(p *Partition, _ int64, id uint32, c, _ uint64) { w.add(p, id, c) }

func (w *exactAll) top(p *Partition) List {
	l := List{Window: w.cfg.Name, Exact: true, Total: w.sum}
	allTimeBounds(p, &l)
	l.Items = topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id, c := range w.totals {
			if c != 0 {
				offer(uint32(id), c)
			}
		}
	}, p.in.strs)
	return l
}

func (w *exactAll) stats(s *Stats) { s.Bytes += int64(cap(w.totals)) * 8 }

// sketchAll is an all-time window counted by one running count-min sketch
// and a candidate set. The sketch is never subtracted, so it honours
// Config.Sketch.Conservative. Since estimates only grow, the adaptive floor
// (the (M*K)-th largest candidate estimate) never falls, and an item under
// it at its last event stays under it: the candidate set misses no item that
// belongs in the top M*K, the guarantee sliding windows only have with a
// fixed CandidateFloor. The bound grows with N, which never stops growing:
// (e/Width)*N, as sketch.BoundFor states it on every list.
type sketchAll struct {
	cfg   WindowConfig
	sk    *sketch.Sketch
	j     journal // what reached sk since its stored base (journal.go)
	cands candidates
}

func newSketchAll(p *Partition, wc WindowConfig) *sketchAll {
	sk, err := sketch.New(p.cfg.Sketch)
	if err != nil {
		panic("BUG: window: validated sketch config rejected: " + err.Error())
	}
	return &sketchAll{cfg: wc, sk: sk, cands: newCandidates()}
}

func (w *sketchAll) conf() WindowConfig { return w.cfg }

func (w *sketchAll) estimate(p *Partition) func(uint32) uint64 {
	return func(id uint32) uint64 { return w.sk.EstimateHash(p.hash(id)) }
}

func (w *sketchAll) advance(p *Partition) { w.cands.maybeReestimate(p, w.estimate(p)) }

func (w *sketchAll) accepts(*Partition, int64) bool { return true }

func (w *sketchAll) addMinute(p *Partition, f *frozen, hs, ns []uint64) {
	addFrozen(p, w.sk, f, hs, ns)
	w.j.minute(p, f)
	offerMinute(p, &w.cands, w.sk, f, hs)
}

func (w *sketchAll) addLate(p *Partition, _ int64, id uint32, c, h uint64) {
	w.sk.AddHash(h, c)
	w.j.add(p, id, c)
	w.cands.offer(p, id, w.sk.EstimateHash(h))
	w.cands.maybeReestimate(p, w.estimate(p))
}

func (w *sketchAll) top(p *Partition) List {
	l := w.cands.top(p, w.sk)
	l.Window = w.cfg.Name
	allTimeBounds(p, &l)
	return l
}

func (w *sketchAll) stats(s *Stats) {
	s.Sketches++
	s.Bytes += int64(w.sk.Config().Bytes())
	s.Candidates += len(w.cands.set)
	s.Bytes += int64(len(w.cands.set)) * 16
}
