package window

import (
	"fmt"

	"trending/speed/frequent"
)

// Snapshot sections of frequent windows (docs/format/snapshot.md, "Frequent windows"),
// present only when the fingerprint names a frequent window, so snapshots of other
// configurations are unchanged. Each summary is written inline, whole or incremental
// snapshot alike, as uv(len) and its own checksummed encoding (docs/format/frequent.md).

func (e *encoder) summary(s *frequent.Summary) error {
	b, err := s.AppendBinary(nil)
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	e.uv(uint64(len(b)))
	e.b = append(e.b, b...)
	return nil
}

// summary reads a summary of capacity m.
func (d *decoder) summary(name string, m int) *frequent.Summary {
	b := d.raw(d.count(1))
	if d.err != nil {
		return nil
	}
	s := new(frequent.Summary)
	if err := s.UnmarshalBinary(b); err != nil {
		d.fail("%s: %v", name, err)
		return nil
	}
	if s.Capacity() != m || s.Len() > m {
		d.fail("%s: summary of capacity %d with %d counters, want capacity %d compacted", name, s.Capacity(), s.Len(), m)
		return nil
	}
	return s
}

// encodeState writes the buckets in the two-stacks window, oldest first (sv(start) and the
// summary each), how many of them are in its front stack, the running newest bucket
// (bool, sv(start), summary) and the late buckets (uv(n), then sv(start) and the summary).
func (w *freqSliding) encodeState(e *encoder) error {
	starts, sums, nFront := w.win.Buckets()
	e.uv(uint64(len(starts)))
	for i, s := range sums {
		e.sv(starts[i])
		if err := e.summary(s); err != nil {
			return err
		}
	}
	e.uv(uint64(nFront))
	e.bool(w.part != nil)
	if w.part != nil {
		e.sv(w.pstart)
		if err := e.summary(w.part); err != nil {
			return err
		}
	}
	e.uv(uint64(len(w.late)))
	for _, b := range w.late {
		e.sv(b.start)
		if err := e.summary(b.s); err != nil {
			return err
		}
	}
	return nil
}

func (w *freqSliding) decodeState(d *decoder, p *Partition) {
	ws, nb := w.start(p.asOf), floorTo(p.asOf-1, w.b)
	bucketStart := func(what string, prev int64) int64 {
		s := d.sv()
		if d.err == nil && (!p.started || s < ws || s > nb || floorTo(s, w.b) != s || s <= prev) {
			d.fail("%s: %s bucket at minute %d outside [%d, %d] or out of order", w.cfg.Name, what, s, ws, nb)
		}
		return s
	}
	n := d.count(2)
	starts, sums := make([]int64, 0, n), make([]*frequent.Summary, 0, n)
	prev := int64(noMinute)
	for range n {
		s := bucketStart("window", prev)
		sum := d.summary(w.cfg.Name, w.cfg.Capacity)
		if d.err != nil {
			return
		}
		starts, sums, prev = append(starts, s), append(sums, sum), s
	}
	nFront := d.uv()
	if d.err == nil && nFront > uint64(n) {
		d.fail("%s: %d of %d buckets in front", w.cfg.Name, nFront, n)
		return
	}
	if d.err != nil {
		return
	}
	fw, err := frequent.RestoreWindow(frequent.Config{Capacity: w.cfg.Capacity}, starts, sums, int(nFront))
	if err != nil {
		d.fail("%s: %v", w.cfg.Name, err)
		return
	}
	w.win = fw
	if n > 0 {
		w.last = starts[n-1]
	}
	if d.bool() {
		w.pstart = bucketStart("running", prev)
		w.part = d.summary(w.cfg.Name, w.cfg.Capacity)
		if d.err == nil && p.asOf >= w.pstart+w.b {
			d.fail("%s: running bucket at minute %d is complete", w.cfg.Name, w.pstart)
		}
	}
	nl := d.count(2)
	prevLate := int64(noMinute)
	for range nl {
		s := bucketStart("late", prevLate)
		sum := d.summary(w.cfg.Name, w.cfg.Capacity)
		if d.err != nil {
			return
		}
		if (w.part != nil && s >= w.pstart) || (w.part == nil && s > w.last) {
			d.fail("%s: late bucket at minute %d not before the running bucket or after the window's newest", w.cfg.Name, s)
			return
		}
		w.late, prevLate = append(w.late, fbucket{s, sum}), s
	}
}

// encodeState writes whether the period is open (a calendar window: bool, then sv(start))
// and the running summary when it holds a count.
func (w *freqRunning) encodeState(e *encoder) error {
	if !w.all {
		e.bool(w.opened)
		if !w.opened {
			return nil
		}
		e.sv(w.pstart)
	}
	e.bool(w.s.Total() > 0)
	if w.s.Total() > 0 {
		return e.summary(w.s)
	}
	return nil
}

func (w *freqRunning) decodeState(d *decoder, p *Partition) {
	if !w.all {
		if !d.bool() {
			return
		}
		w.opened = true
		w.pstart, w.pend = d.calendarStart(p, w.cfg.Span)
	}
	if d.bool() {
		if !p.started && d.err == nil {
			d.fail("%s: a partition that saw no event has a summary", w.cfg.Name)
		}
		if s := d.summary(w.cfg.Name, w.cfg.Capacity); s != nil {
			if s.Total() == 0 {
				d.fail("%s: empty summary", w.cfg.Name)
			}
			w.s = s
		}
	}
}
