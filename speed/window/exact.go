package window

import (
	"math"
	"time"
)

// exactSliding is a sliding window counted exactly: running totals in a
// dense slice indexed by item handle, plus the buckets to subtract when they
// expire. Minute-bucket windows share the partition's minute ring; longer
// buckets keep their own ring of frozen buckets and an open bucket
// (a map) that the closing minutes fill, frozen when the next bucket starts.
type exactSliding struct {
	cfg    WindowConfig
	b, n   int64 // bucket length in minutes, number of buckets
	totals []uint64
	sum    uint64

	lo int64 // b == 1: window start last applied; minutes before it were subtracted

	ring       ring // b > 1: closed buckets inside the window, by start
	openBucket map[uint32]uint64
	openStart  int64
	hasOpen    bool
}

func newExactSliding(p *Partition, wc WindowConfig) *exactSliding {
	w := &exactSliding{
		cfg: wc,
		b:   int64(wc.Bucket / time.Minute),
		n:   int64(wc.Length / wc.Bucket),
		lo:  math.MinInt64,
	}
	if w.b > 1 {
		w.openBucket = make(map[uint32]uint64)
	}
	p.in.register(&w.totals)
	return w
}

func (w *exactSliding) conf() WindowConfig { return w.cfg }

// start returns the first minute of the window as of asOf: the newest bucket
// holds minute asOf-1, and the window is the n newest buckets.
func (w *exactSliding) start(asOf int64) int64 {
	return floorTo(asOf-1, w.b) - (w.n-1)*w.b
}

func (w *exactSliding) advance(p *Partition) {
	ws := w.start(p.asOf)
	if w.b == 1 {
		for _, f := range p.minutes {
			if f.start >= ws {
				break
			}
			if f.start >= w.lo {
				w.sub(f)
			}
		}
		w.lo = ws
		return
	}
	if w.hasOpen && w.openStart < floorTo(p.asOf-1, w.b) {
		w.freeze()
	}
	n := 0
	for n < len(w.ring) && w.ring[n].start < ws {
		w.sub(w.ring[n])
		w.ring[n].release(p.in)
		n++
	}
	if n > 0 {
		w.ring.popFront(n)
	}
}

// sub subtracts an expiring bucket from the totals.
func (w *exactSliding) sub(f *frozen) {
	t := w.totals
	for _, e := range f.ents {
		id, c := uint32(e>>32), e&math.MaxUint32
		if t[id] < c {
			panic("BUG: window: sliding total below an expiring bucket's count")
		}
		t[id] -= c
		w.sum -= c
	}
	for id, c := range f.extra {
		if t[id] < c {
			panic("BUG: window: sliding total below an expiring bucket's count")
		}
		t[id] -= c
		w.sum -= c
	}
}

// freeze turns the open bucket into a closed one.
func (w *exactSliding) freeze() {
	w.ring = append(w.ring, freezeCounts(w.openStart, w.openBucket))
	clear(w.openBucket)
	w.hasOpen = false
}

func (w *exactSliding) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	t := w.totals
	if w.b == 1 {
		for _, e := range f.ents {
			c := e & math.MaxUint32
			t[uint32(e>>32)] += c
			w.sum += c
		}
		for id, c := range f.extra {
			t[id] += c
			w.sum += c
		}
		return
	}
	s := floorTo(f.start, w.b)
	if w.hasOpen && w.openStart < s {
		w.freeze()
	}
	if !w.hasOpen {
		w.hasOpen, w.openStart = true, s
	}
	f.each(func(id uint32, c uint64) {
		t[id] += c
		w.sum += c
		w.addOpen(p, id, c)
	})
}

func (w *exactSliding) addOpen(p *Partition, id uint32, c uint64) {
	old, ok := w.openBucket[id]
	if !ok {
		p.in.ref(id)
	}
	w.openBucket[id] = old + c
}

func (w *exactSliding) accepts(p *Partition, m int64) bool { return m >= w.start(p.asOf) }

func (w *exactSliding) addLate(p *Partition, m int64, id uint32, c, _ uint64) {
	w.totals[id] += c
	w.sum += c
	if w.b == 1 {
		return // the partition added it to the minute ring
	}
	s := floorTo(m, w.b)
	if nb := floorTo(p.asOf-1, w.b); s == nb {
		if !w.hasOpen {
			w.hasOpen, w.openStart = true, nb
		}
		w.addOpen(p, id, c)
		return
	}
	if w.ring.at(s).add(id, c) {
		p.in.ref(id)
	}
}

func (w *exactSliding) top(p *Partition) List {
	l := List{Window: w.cfg.Name, Exact: true, Total: w.sum}
	if !p.started {
		return l
	}
	l.Start, l.End, l.AsOf = minuteTime(w.start(p.asOf)), minuteTime(p.asOf), minuteTime(p.asOf)
	l.Items = topOf(p.mk(), w.scan, p.in.strs)
	return l
}

// scan offers every nonzero total.
func (w *exactSliding) scan(offer func(uint32, uint64)) {
	for id, c := range w.totals {
		if c != 0 {
			offer(uint32(id), c)
		}
	}
}

func (w *exactSliding) stats(s *Stats) {
	s.Bytes += int64(cap(w.totals)) * 8
	for _, f := range w.ring {
		s.Entries += f.entries()
		s.Bytes += f.bytes()
	}
	s.Entries += len(w.openBucket)
	s.Bytes += int64(len(w.openBucket)) * 36 // measured: a grown map[uint32]uint64
}

// exactCalendar is a calendar window counted exactly: one dense slice of
// totals for the open period. Each nonzero total holds a reference on its
// item, since no bucket does.
type exactCalendar struct {
	cfg          WindowConfig
	totals       []uint64
	sum          uint64
	opened       bool
	pstart, pend int64
}

func newExactCalendar(p *Partition, wc WindowConfig) *exactCalendar {
	w := &exactCalendar{cfg: wc}
	p.in.register(&w.totals)
	return w
}

func (w *exactCalendar) conf() WindowConfig { return w.cfg }

func (w *exactCalendar) advance(p *Partition) {
	if w.opened && p.asOf >= w.pend {
		l := w.list(p, true)
		l.Tracked = p.closedTracked(w, l.Start)
		p.closed = append(p.closed, l)
		for id, c := range w.totals {
			if c != 0 {
				w.totals[id] = 0
				p.in.unref(uint32(id))
			}
		}
		w.sum, w.opened = 0, false
	}
}

func (w *exactCalendar) accepts(p *Partition, m int64) bool {
	if w.opened {
		return m >= w.pstart
	}
	return w.cfg.Span.EndMinute(w.cfg.Span.StartMinute(m)) > p.asOf
}

func (w *exactCalendar) ensure(m int64) {
	if !w.opened {
		w.opened = true
		w.pstart = w.cfg.Span.StartMinute(m)
		w.pend = w.cfg.Span.EndMinute(w.pstart)
	}
}

func (w *exactCalendar) add(p *Partition, id uint32, c uint64) {
	if w.totals[id] == 0 {
		p.in.ref(id)
	}
	w.totals[id] += c
	w.sum += c
}

func (w *exactCalendar) addMinute(p *Partition, f *frozen, _, _ []uint64) {
	w.ensure(f.start)
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

func (w *exactCalendar) addLate(p *Partition, m int64, id uint32, c, _ uint64) {
	w.ensure(m)
	w.add(p, id, c)
}

func (w *exactCalendar) top(p *Partition) List { return w.list(p, false) }

func (w *exactCalendar) list(p *Partition, final bool) List {
	l := List{Window: w.cfg.Name, Exact: true, Final: final, Total: w.sum}
	if !p.started {
		return l
	}
	start := w.pstart
	if !w.opened {
		start = w.cfg.Span.StartMinute(p.asOf)
	}
	end := w.cfg.Span.EndMinute(start)
	l.Start, l.End, l.AsOf = minuteTime(start), minuteTime(end), minuteTime(min(p.asOf, end))
	if w.opened {
		l.Items = topOf(p.mk(), func(offer func(uint32, uint64)) {
			for id, c := range w.totals {
				if c != 0 {
					offer(uint32(id), c)
				}
			}
		}, p.in.strs)
	}
	return l
}

func (w *exactCalendar) stats(s *Stats) { s.Bytes += int64(cap(w.totals)) * 8 }
