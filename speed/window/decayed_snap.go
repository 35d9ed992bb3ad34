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
// state inline. An incremental one (version 4) keeps the small part inline and the rest in
// pieces copied under the partition's lock and encoded outside it: an exact window's values
// as a base piece (every value, stored once) and a delta piece (the values changed and the
// items forgotten since the base), a new base whenever the epoch moved or the delta would
// hold more than half the values; a sketch window's float sketch whole, every checkpoint.

// Piece kinds of decayed windows (incremental.go has the others).
const (
	pieceFloat        = 3 // a decayed sketch window's float count-min sketch
	pieceDecayed      = 4 // a decayed exact window's values: (item, float64 bits), by item
	pieceDecayedDelta = 5 // the items forgotten, then the values changed, since a base
)

// decayedPiece is the data of a decayed window's piece, captured under the lock.
type decayedPiece struct {
	fsk   *sketch.Float // a copy of the sketch, or
	names []string      // the items with a value (all, or those changed since the base) and
	vals  []uint64      // their values' bits
	gone  []string      // a delta: the items forgotten since the base
	delta bool
	// A piece of every value, which becomes the window's base once stored: the generation
	// it covers and the epoch its values are against.
	w     *decayedExact
	gen   uint64
	epoch int64
}

// release drops the captured data once encoded.
func (dp *decayedPiece) release() { dp.fsk, dp.names, dp.vals, dp.gone = nil, nil, nil, nil }

// stored records that the piece was stored under name (Partition.Stored).
func (dp *decayedPiece) stored(name string) {
	if dp.w != nil && !dp.delta {
		dp.w.ck.storedBase(name, dp.gen, dp.epoch)
	}
}

// encode appends the piece's kind byte and body.
func (dp *decayedPiece) encode(b []byte) ([]byte, error) {
	if dp.fsk != nil {
		b = append(b, pieceFloat)
		return dp.fsk.AppendBinary(b)
	}
	idx := make([]int, len(dp.names))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, c int) int { return strings.Compare(dp.names[a], dp.names[c]) })
	if dp.delta {
		b = append(b, pieceDecayedDelta)
		gone := slices.Clone(dp.gone)
		slices.Sort(gone)
		gone = slices.Compact(gone)
		b = binary.AppendUvarint(b, uint64(len(gone)))
		for _, g := range gone {
			b = binary.AppendUvarint(b, uint64(len(g)))
			b = append(b, g...)
		}
	} else {
		b = append(b, pieceDecayed)
	}
	b = binary.AppendUvarint(b, uint64(len(idx)))
	for _, i := range idx {
		b = binary.AppendUvarint(b, uint64(len(dp.names[i])))
		b = append(b, dp.names[i]...)
		b = binary.LittleEndian.AppendUint64(b, dp.vals[i])
	}
	return b, nil
}

// forgotten records an item forgotten in the current generation, for the next delta. The
// list is dropped (and the base with it: the next checkpoint stores every value) when it
// outgrows what a base would cost.
func (ck *decayedCkpt) forgotten(name string) {
	ck.gone = append(ck.gone, goneItem{name, ck.gen})
	if len(ck.gone) > 1<<16 && len(ck.gone) > len(ck.mark) {
		ck.gone, ck.base = nil, ""
	}
}

// storedBase records a stored piece of every value, as of generation gen and epoch.
func (ck *decayedCkpt) storedBase(name string, gen uint64, epoch int64) {
	if gen <= ck.baseGen && ck.base != "" {
		return // an older one stored late
	}
	ck.base, ck.baseGen, ck.baseEpoch = name, gen, epoch
	n := 0
	for _, g := range ck.gone {
		if g.gen > gen {
			ck.gone[n] = g
			n++
		}
	}
	clear(ck.gone[n:])
	ck.gone = ck.gone[:n]
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
	case pieceDecayed, pieceDecayedDelta:
		if pp.kind == pieceDecayedDelta {
			n := d.count(2)
			prev := ""
			for i := range n {
				l := d.count(1)
				off := d.off
				name := d.raw(l)
				if d.err != nil {
					return
				}
				if l == 0 || (i > 0 && string(name) <= prev) {
					d.fail("forgotten item %d: empty or out of order", i)
					return
				}
				prev = string(name)
				pp.gone = append(pp.gone, pieceEnt{uint32(off), uint32(l), 0})
			}
		}
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
// uv(gap) and 8 bytes of float64 bits), or in pieces (see encodeIncremental).
func (w *decayedExact) encodeState(e *encoder) error {
	e.f64(w.mass)
	if e.inc != nil {
		w.encodeIncremental(e)
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

// encodeIncremental writes uv(1) and references to the base and a delta piece, when a base
// against the current epoch is stored and the delta holds at most half the values; else
// uv(2) and a reference to a piece of every value, which becomes the base once stored.
func (w *decayedExact) encodeIncremental(e *encoder) {
	ck, strs := &w.ck, e.inc.p.in.strs
	if ck.base != "" && ck.baseEpoch == w.d.epoch {
		dp := &decayedPiece{delta: true}
		live := 0
		for id, b := range w.values {
			if b == 0 {
				continue
			}
			live++
			if ck.mark[id] > ck.baseGen {
				dp.names, dp.vals = append(dp.names, strs[id]), append(dp.vals, b)
			}
		}
		for _, g := range ck.gone {
			if g.gen > ck.baseGen {
				dp.gone = append(dp.gone, g.name)
			}
		}
		if len(dp.names)+len(dp.gone) <= live/2 {
			e.uv(1)
			e.inc.pending = append(e.inc.pending, pendingPiece{name: ck.base}, pendingPiece{decayed: dp})
			e.uv(uint64(len(e.inc.pending) - 1))
			e.uv(uint64(len(e.inc.pending)))
			return
		}
	}
	dp := &decayedPiece{w: w, gen: ck.gen, epoch: w.d.epoch}
	for id, b := range w.values {
		if b != 0 {
			dp.names, dp.vals = append(dp.names, strs[id]), append(dp.vals, b)
		}
	}
	ck.gen++
	e.uv(2)
	e.inc.pending = append(e.inc.pending, pendingPiece{decayed: dp})
	e.uv(uint64(len(e.inc.pending)))
}

func (w *decayedExact) decodeState(d *decoder, p *Partition) {
	w.mass = d.f64()
	set := func(id uint32, v uint64, gen uint64) {
		if w.values[id] == 0 {
			p.in.ref(id)
		}
		w.values[id], w.ck.mark[id] = v, gen
	}
	n := 0
	if d.inc != nil {
		n = w.decodeIncremental(d, p, set)
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
			set(uint32(prev), v, 1)
			n++
		}
	}
	w.restored(d, p, n > 0 || w.mass > 0)
	if w.ck.base != "" {
		w.ck.baseEpoch = w.d.epoch
	}
}

// decodeIncremental reads what encodeIncremental wrote: the base's values (generation 1,
// covered by the base, which stays the window's base), then a delta's forgotten items and
// changed values (generation 2, for the next delta). It returns how many values it set.
func (w *decayedExact) decodeIncremental(d *decoder, p *Partition, set func(uint32, uint64, uint64)) int {
	mode := d.uv()
	if d.err == nil && mode != 1 && mode != 2 {
		d.fail("%s: values flag %d", w.cfg.Name, mode)
	}
	base := d.piece(pieceDecayed)
	if base == nil {
		if d.err == nil {
			d.fail("%s: no values piece", w.cfg.Name)
		}
		return 0
	}
	n := 0
	for _, x := range base.ents {
		set(intern(p.in, base.data[x.off:x.off+x.n]), x.c, 1)
		n++
	}
	w.ck = decayedCkpt{mark: w.ck.mark, gen: 2, base: base.name, baseGen: 1}
	if mode != 1 {
		return n
	}
	delta := d.piece(pieceDecayedDelta)
	if delta == nil {
		if d.err == nil {
			d.fail("%s: no delta piece", w.cfg.Name)
		}
		return n
	}
	for _, x := range delta.gone {
		name := delta.data[x.off : x.off+x.n]
		if id, ok := p.in.lookup(string(name)); ok && w.values[id] != 0 {
			w.values[id], w.ck.mark[id] = 0, 0
			p.in.unref(id)
		}
		w.ck.gone = append(w.ck.gone, goneItem{string(name), 2})
	}
	for _, x := range delta.ents {
		set(intern(p.in, delta.data[x.off:x.off+x.n]), x.c, 2)
		n++
	}
	return n
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
