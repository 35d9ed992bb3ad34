package window

import (
	"fmt"
	"math"
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
// items themselves, so the dense scan of the totals is the same as Top's and only the
// changed items are looked at twice. Sketch windows add the open minutes' exact counts to
// their candidates' estimates and estimate without the buckets that would expire
// (Sketch.EstimateHashWithout); an open item that is no candidate becomes one when its
// minute closes, as today. Closing a minute adds all its items to the sketch at once, so a
// candidate's live estimate is at most the one it will have then. A calendar window adds
// the open minutes of its current period only.

// overlay is what closing every open minute now would do, shared by the windows of one call.
type overlay struct {
	upTo int64     // the asOf once the open minutes closed: the minute after the newest
	asOf time.Time // the newest event time counted
}

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
	ov := overlay{upTo: p.asOf, asOf: time.UnixMilli(max(p.maxSeen, p.asOf*minuteMs)).UTC()}
	if n := len(p.open); n > 0 {
		ov.upTo = p.open[n-1].minute + 1
	}
	l := w.live(p, &ov)
	if w.conf().Kind != Calendar {
		l.AsOf, l.End = ov.asOf, ov.asOf
	}
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
	raw := topOf(n+len(d), func(offer func(uint32, uint64)) {
		for id, c := range totals {
			if c != 0 {
				offer(uint32(id), c)
			}
		}
	}, p.in.strs)
	h := topk.NewHeap(n)
	for _, e := range raw {
		if id, ok := p.in.lookup(e.Item); ok {
			if _, changed := d[id]; changed {
				continue
			}
		}
		h.Offer(e.Item, e.Count)
	}
	for id, dc := range d {
		var c int64
		if int(id) < len(totals) {
			c = int64(totals[id])
		}
		if c += dc; c > 0 {
			h.Offer(p.in.strs[id], uint64(c))
		}
	}
	return h.Sorted()
}

// addSum applies a signed change to a window's total.
func addSum(sum uint64, d int64) uint64 {
	if d < 0 && uint64(-d) > sum {
		panic("BUG: window: live total below zero")
	}
	return uint64(int64(sum) + d)
}

func (w *exactSliding) live(p *Partition, ov *overlay) List {
	l := w.top(p)
	if ov.upTo == p.asOf {
		return l
	}
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, p.asOf, ov.upTo)
	ws := w.start(ov.upTo)
	if w.b == 1 {
		for _, f := range p.minutes {
			if f.start >= ws {
				break
			}
			if f.start >= w.lo {
				dsum -= subtract(d, f)
			}
		}
	} else {
		for _, f := range w.ring {
			if f.start >= ws {
				break
			}
			dsum -= subtract(d, f)
		}
		if w.hasPartial && w.pstart < ws {
			for id, c := range w.partial {
				d[id] -= int64(c)
				dsum -= int64(c)
			}
		}
	}
	l.Start, l.Total = minuteTime(ws), addSum(w.sum, dsum)
	l.Items = p.topChanged(w.totals, d)
	return l
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

func (w *exactCalendar) live(p *Partition, ov *overlay) List {
	l := w.top(p)
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	l.Start, l.End, l.AsOf = minuteTime(start), minuteTime(end), calendarAsOf(ov, end)
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, max(start, p.asOf), min(end, ov.upTo))
	if len(d) == 0 {
		return l
	}
	totals := w.totals
	if !w.opened {
		totals = nil
	}
	l.Total, l.Items = addSum(w.sum, dsum), p.topChanged(totals, d)
	return l
}

// calendarAsOf is the newest event time a calendar period's live list counts: the
// overlay's, or the period's end once the open minutes reach past it (minutes of the next
// period wait for it to open).
func calendarAsOf(ov *overlay, end int64) time.Time {
	if e := minuteTime(end); !ov.asOf.Before(e) {
		return e
	}
	return ov.asOf
}

func (w *exactAll) live(p *Partition, ov *overlay) List {
	l := w.top(p)
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, p.asOf, ov.upTo)
	if len(d) == 0 {
		return l
	}
	l.Total, l.Items = addSum(w.sum, dsum), p.topChanged(w.totals, d)
	return l
}

// live is c's list on sk with the open minutes of [lo, hi) added to the candidates'
// estimates and to the window's N, and the buckets in without (which sk holds) taken off.
func (c *candidates) live(p *Partition, sk *sketch.Sketch, lo, hi int64, without ...*sketch.Sketch) List {
	d := make(map[uint32]int64)
	dsum := p.openCounts(d, lo, hi)
	for _, o := range without {
		dsum -= int64(o.Total())
	}
	l := List{Exact: false, Total: addSum(sk.Total(), dsum)}
	b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, l.Total)
	l.Bound = &b
	l.Items = topOf(p.mk(), func(offer func(uint32, uint64)) {
		for id := range c.set {
			e := sk.EstimateHashWithout(p.hash(id), without...)
			if dc := d[id]; dc > 0 {
				e = min(e+uint64(dc), math.MaxUint64)
			}
			if e > 0 {
				offer(id, e)
			}
		}
	}, p.in.strs)
	return l
}

func (w *sketchSliding) live(p *Partition, ov *overlay) List {
	if ov.upTo == p.asOf {
		return w.top(p)
	}
	ws := w.start(ov.upTo)
	var expiring []*sketch.Sketch
	for _, b := range w.buckets {
		if b.start >= ws {
			break
		}
		expiring = append(expiring, b.sk)
	}
	l := w.cands.live(p, w.running, p.asOf, ov.upTo, expiring...)
	l.Window = w.cfg.Name
	l.Start = minuteTime(ws)
	return l
}

func (w *sketchCalendar) live(p *Partition, ov *overlay) List {
	l := w.top(p)
	start, end := p.livePeriod(w.cfg.Span, w.opened, w.pstart)
	l.Start, l.End, l.AsOf = minuteTime(start), minuteTime(end), calendarAsOf(ov, end)
	lo, hi := max(start, p.asOf), min(end, ov.upTo)
	if lo >= hi {
		return l
	}
	lv := w.cands.live(p, w.sk, lo, hi)
	l.Total, l.Bound, l.Items = lv.Total, lv.Bound, lv.Items
	return l
}

func (w *sketchAll) live(p *Partition, ov *overlay) List {
	if ov.upTo == p.asOf {
		return w.top(p)
	}
	l := w.cands.live(p, w.sk, p.asOf, ov.upTo)
	l.Window = w.cfg.Name
	allTimeBounds(p, &l)
	return l
}
