package window

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"

	"trending/speed/sketch"
)

// Snapshots of decayed windows (docs/format/snapshot.md, "Decayed windows"). The epoch and
// the hour of the last sweep or re-estimation are functions of the watermark (advance sets
// both whenever it moves), so they are not stored. A whole snapshot (version 3) holds the
// state inline; an incremental one (version 4) keeps the small part inline and the values or
// the float sketch in a piece of their own, copied under the partition's lock and encoded
// outside it. That piece changes every minute, so each checkpoint stores it again.

// Piece kinds of decayed windows (incremental.go has the others).
const (
	pieceFloat   = 3 // a decayed sketch window's float count-min sketch
	pieceDecayed = 4 // a decayed exact window's values: (item, float64 bits), by item
)

// decayedPiece is the data of a decayed window's piece, captured under the lock.
type decayedPiece struct {
	fsk   *sketch.Float // a copy of the sketch, or
	names []string      // the items with a value and
	vals  []uint64      // their values' bits
}

// encode appends the piece's body after its kind byte.
func (dp *decayedPiece) encode(b []byte) ([]byte, error) {
	if dp.fsk != nil {
		b = append(b, pieceFloat)
		return dp.fsk.AppendBinary(b)
	}
	b = append(b, pieceDecayed)
	idx := make([]int, len(dp.names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, c int) int { return strings.Compare(dp.names[a], dp.names[c]) })
	b = binary.AppendUvarint(b, uint64(len(idx)))
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(len(dp.names[i])))
		b = append(b, dp.names[i]...)
		b = binary.LittleEndian.AppendUint64(b, dp.vals[i])
	}
	return b, nil
}

// parseDecayed checks a decayed window's piece (after its kind byte, at d.off).
func (pp *parsedPiece) parseDecayed(d *decoder, want sketch.Config) {
	switch pp.kind {
	case pieceFloat:
		var s sketch.Float
		if err := s.UnmarshalBinary(d.b[d.off:]); err != nil {
			d.fail("float sketch: %v", err)
			return
		}
		if s.Config().Width != want.Width || s.Config().Depth != want.Depth || s.Config().Seed != want.Seed {
			d.fail("float sketch shape differs from the config")
			return
		}
		pp.fsk = &s
	case pieceDecayed:
		n := d.count(10)
		prev := ""
		for i := range n {
			l := d.count(1)
			off := d.off
			name := d.raw(l)
			v := d.u64()
			if d.err != nil {
				return
			}
			if l == 0 || (i > 0 && string(name) <= prev) || !validValue(math.Float64frombits(v)) {
				d.fail("decayed value %d: empty, out of order or not a positive finite number", i)
				return
			}
			prev = string(name)
			pp.ents = append(pp.ents, pieceEnt{uint32(off), uint32(l), v})
		}
		if d.err == nil && d.off != len(d.b) {
			d.fail("%d bytes after the values", len(d.b)-d.off)
		}
	}
}

// validValue reports whether v can be a stored value: finite and positive.
func validValue(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

func (e *encoder) f64(v float64) { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *encoder) u64(v uint64)  { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

func (d *decoder) u64() uint64 {
	r := d.raw(8)
	if r == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(r)
}

// f64 reads a float that must be finite and not negative.
func (d *decoder) f64() float64 {
	v := math.Float64frombits(d.u64())
	if d.err == nil && !(v == 0 && !math.Signbit(v) || validValue(v)) {
		d.fail("%v is not a finite number >= 0", v)
	}
	return v
}

// encodeState writes the decayed total, then the values: inline (uv(n) then per item
// uv(gap) and 8 bytes of float64 bits), or a reference to their piece.
func (w *decayedExact) encodeState(e *encoder) error {
	e.f64(w.mass)
	if e.inc != nil {
		dp := &decayedPiece{}
		for id, b := range w.values {
			if b != 0 {
				dp.names = append(dp.names, e.inc.p.in.strs[id])
				dp.vals = append(dp.vals, b)
			}
		}
		e.inc.pending = append(e.inc.pending, pendingPiece{decayed: dp})
		e.uv(uint64(len(e.inc.pending)))
		return nil
	}
	type iv struct {
		idx uint32
		v   uint64
	}
	var ivs []iv
	for id, b := range w.values {
		if b != 0 {
			ivs = append(ivs, iv{e.ix(uint32(id)), b})
		}
	}
	slices.SortFunc(ivs, func(a, b iv) int { return int64cmp(int64(a.idx), int64(b.idx)) })
	e.uv(uint64(len(ivs)))
	prev := int64(-1)
	for _, x := range ivs {
		e.uv(uint64(int64(x.idx) - prev - 1))
		e.u64(x.v)
		prev = int64(x.idx)
	}
	return nil
}

func (w *decayedExact) decodeState(d *decoder, p *Partition) {
	w.mass = d.f64()
	set := func(id uint32, v uint64) {
		if w.values[id] != 0 {
			d.fail("%s: item %q has two values", w.cfg.Name, p.in.strs[id])
			return
		}
		p.in.ref(id)
		w.values[id] = v
	}
	n := 0
	if d.inc != nil {
		if pp := d.piece(pieceDecayed); pp != nil {
			for _, x := range pp.ents {
				set(intern(p.in, pp.data[x.off:x.off+x.n]), x.c)
				n++
			}
		}
	} else {
		cnt := d.count(9)
		prev := int64(-1)
		for range cnt {
			gap, v := d.uv(), d.u64()
			if d.err == nil && (gap >= uint64(d.n) || prev+1+int64(gap) >= int64(d.n)) {
				d.fail("%s: value of an item past the table", w.cfg.Name)
			}
			if d.err == nil && !validValue(math.Float64frombits(v)) {
				d.fail("%s: value %v", w.cfg.Name, math.Float64frombits(v))
			}
			if d.err != nil {
				return
			}
			prev += 1 + int64(gap)
			set(uint32(prev), v)
			n++
		}
	}
	w.restored(d, p, n > 0 || w.mass > 0)
}

// restored sets what a decayed window derives from the watermark, and checks that a
// partition that saw no event counted nothing.
func (dc *decay) restored(d *decoder, p *Partition, counted bool, name string, at *int64) {
	if !p.started {
		if counted && d.err == nil {
			d.fail("%s: a partition that saw no event has decayed counts", name)
		}
		return
	}
	dc.epoch = floorTo(p.asOf, epochHalfLives*dc.h)
	*at = floorDiv(p.asOf, 60)
}

func (w *decayedExact) restored(d *decoder, p *Partition, counted bool) {
	w.d.restored(d, p, counted, w.cfg.Name, &w.at)
}

// encodeState writes the float sketch (uv(len) and its encoding inline, or a reference to
// its piece), the adaptive floor's float64 bits and the candidates (uv(n) and gaps).
func (w *decayedSketch) encodeState(e *encoder) error {
	if e.inc != nil {
		e.inc.pending = append(e.inc.pending, pendingPiece{decayed: &decayedPiece{fsk: w.sk.Clone()}})
		e.uv(uint64(len(e.inc.pending)))
	} else {
		blob, err := w.sk.AppendBinary(nil)
		if err != nil {
			return err
		}
		e.uv(uint64(len(blob)))
		e.b = append(e.b, blob...)
	}
	e.f64(w.floor)
	ids := make([]uint32, 0, len(w.cands))
	for id := range w.cands {
		ids = append(ids, e.ix(id))
	}
	slices.Sort(ids)
	e.uv(uint64(len(ids)))
	prev := int64(-1)
	for _, i := range ids {
		e.uv(uint64(int64(i) - prev - 1))
		prev = int64(i)
	}
	return nil
}

func (w *decayedSketch) decodeState(d *decoder, p *Partition) {
	var sk *sketch.Float
	if d.inc != nil {
		if pp := d.piece(pieceFloat); pp != nil {
			sk = pp.fsk
		} else if d.err == nil {
			d.fail("%s: no float sketch piece", w.cfg.Name)
		}
	} else {
		blob := d.raw(d.count(1))
		if d.err == nil {
			sk = &sketch.Float{}
			if err := sk.UnmarshalBinary(blob); err != nil {
				d.fail("%s: float sketch: %v", w.cfg.Name, err)
			}
		}
	}
	if d.err != nil {
		return
	}
	if sk.Config() != w.sk.Config() {
		d.fail("%s: float sketch config %+v, want %+v", w.cfg.Name, sk.Config(), w.sk.Config())
		return
	}
	w.sk = sk
	w.floor = d.f64()
	n := d.count(1)
	prev := int64(-1)
	for range n {
		gap := d.uv()
		if d.err == nil && (gap >= uint64(d.n) || prev+1+int64(gap) >= int64(d.n)) {
			d.fail("%s: candidate index past the table", w.cfg.Name)
		}
		if d.err != nil {
			return
		}
		prev += 1 + int64(gap)
		w.cands[uint32(prev)] = struct{}{}
		p.in.ref(uint32(prev))
	}
	w.d.restored(d, p, w.sk.Total() > 0 || n > 0 || w.floor > 0, w.cfg.Name, &w.at)
}
