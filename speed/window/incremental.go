package window

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"sync"

	"trending/speed/sketch"
)

// Incremental snapshots (format version 4, docs/format/snapshot.md): the state split into
// immutable pieces and a small manifest state that references them by index.
//
// A closed exact bucket's entries never change once it is built (a late event goes to its
// side map), so each is one piece, encoded once and named by the hash of its bytes; the
// side map stays in the manifest. A sliding window's bucket sketch is a piece too, encoded
// again only when it changed. The calendar and all-time sketches change every minute: each
// is a stored base plus a journal of its updates since (journal.go), stored whole about
// once an hour (copied under the lock, encoded outside it). Accumulators that
// the kept buckets determine are not stored at all: an open hourly bucket is the sum of
// the minute ring's minutes since the hour began, an exact calendar period's totals are
// the sum of the buckets since it began, and a sliding sketch window's open bucket is the
// sketch of those sums (standard update adds, so the order does not matter). Restore sums
// them again.
//
// SnapshotIncremental runs under the partition's lock and costs a copy of the open state:
// the manifest's entries, views of the new pieces (their buckets pinned) and copies of the
// sketches to store; Encode (the pieces' bytes and hashes) runs outside it.

const (
	snapV4      = 4 // the item table names every item by string
	snapV5      = 5 // the item table may name an item by its entry in a minute piece
	pieceMagic  = "TPCE"
	pieceV1     = 1
	pieceExact  = 1
	pieceSketch = 2
)

// Piece is an immutable part of an incremental snapshot, named by its bytes: the first 16
// bytes of their SHA-256, in hex (what speed/checkpoint stores it under). Data is nil for a
// piece a previous checkpoint stored (see Partition.Stored).
type Piece struct {
	Name string
	Data []byte
}

func pieceName(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// IncrementalSnapshot is a partition's state captured by SnapshotIncremental, to be encoded
// by Encode without the partition's lock.
type IncrementalSnapshot struct {
	head, body []byte // the state before and after the item table
	pending    []pendingPiece
	encoded    bool
	unpinned   bool
	// the item table (written by Encode): the items' handles and names as captured, and
	// the exact pieces (position, entries) that can name them by reference
	alive int
	order []uint32
	names []string
	refs  []refPiece
}

// refPiece is an exact piece, at position pos (1-based) in the
// snapshot's piece list, whose entries (immutable once the bucket closed) are ents.
type refPiece struct {
	pos  int
	ents []uint64
}

// pendingPiece is a piece of a snapshot: one already stored (name set), or the data to
// encode one, and where to record its name once a checkpoint stored it.
type pendingPiece struct {
	name string
	// an exact bucket's entries, read through strs (a view of the item table taken under
	// the lock; the bucket is pinned, so the handles it names keep their names)
	start  int64
	ents   []uint64
	strs   []string
	pinned bool
	// or a sketch (a copy)
	sk   *sketch.Sketch
	data []byte
	// where the name goes (Stored)
	f      *frozen
	sw     *sketchSliding
	sver   uint64
	j      *journal // a new base: after jops ops of journal epoch jepoch
	jepoch uint64
	jops   int
	exact  bool
	// or a decayed window's state (decayed_snap.go)
	decayed *decayedPiece
}

// incEncoder is the encoder's incremental mode.
type incEncoder struct {
	p       *Partition
	order   []uint32 // item handles in table order (first use)
	pending []pendingPiece
}

// SnapshotIncremental captures the state for an incremental checkpoint. The caller must own
// the partition (hold its lock); the snapshot is then encoded by Encode on any goroutine.
// After the checkpoint is saved, Stored records which pieces are stored, so that the next
// snapshot references them instead of encoding them again.
func (p *Partition) SnapshotIncremental() (*IncrementalSnapshot, error) {
	if n := len(p.in.strs); len(p.incIdx) < n {
		p.incIdx = make([]uint32, n, cap(p.in.strs))
	}
	e := &encoder{idx: p.incIdx, inc: &incEncoder{p: p}}
	e.openMinutes(p.open)
	e.ring(p.minutes)
	nMin := len(e.inc.pending) // the minute ring's pieces come first
	for _, w := range p.wins {
		if err := w.encodeState(e); err != nil {
			p.unpin(&IncrementalSnapshot{pending: e.inc.pending})
			clear(p.incIdx)
			return nil, err
		}
	}
	e.closedLists(p)
	e.late(p.late)
	e.since(p.since)
	h := &encoder{}
	h.header(p)
	h.b[len(snapMagic)] = snapV5
	s := &IncrementalSnapshot{head: h.b, body: e.b, pending: e.inc.pending, alive: p.in.live(),
		order: e.inc.order, names: make([]string, len(e.inc.order))}
	for i, id := range e.inc.order {
		s.names[i] = p.in.strs[id]
		p.incIdx[id] = 0 // leave the index clear for the next snapshot
	}
	// The exact pieces, searched in this order: the minute ring's newest first, then the
	// other rings' (hourly, daily), newest first.
	add := func(lo, hi int) {
		for i := hi - 1; i >= lo; i-- {
			if pp := &s.pending[i]; pp.exact && pp.f != nil && len(pp.f.ents) > 0 {
				s.refs = append(s.refs, refPiece{pos: i + 1, ents: pp.f.ents})
			}
		}
	}
	add(0, nMin)
	add(nMin, len(s.pending))
	return s, nil
}

// itemTable writes the manifest's item table (version 5): uv(alive) uv(n) then per item
// either a reference to an entry of one of the snapshot's exact pieces: uv(2+piece)
// uv(entry); uv(1) for the entry after the previous reference's in the same piece, uv(2)
// uv(gap) for the entry gap+2 after it (the open minutes' items come first, in hash order,
// the order of the minute pieces, so most take one or two bytes where the name takes about
// ten: most items the manifest names,
// those of the open minutes and the candidates, were counted in an earlier minute of the
// ring or hour of the day); or uv(0) and the name. It runs outside the partition's lock: the
// handles and pieces' entries are as captured (a closed bucket's entries never change).
func (s *IncrementalSnapshot) itemTable(h *encoder) {
	h.uv(uint64(s.alive))
	h.uv(uint64(len(s.order)))
	type ref struct{ pos, entry uint32 }
	found := make([]ref, len(s.order))
	if len(s.refs) > 0 && len(s.order) > 0 {
		// A bitset of the wanted handles' low bits rejects most entries before the map.
		const setBits = 1 << 20
		set := make([]uint64, setBits/64)
		want := make(map[uint32]int32, len(s.order))
		for i, id := range s.order {
			set[id%setBits/64] |= 1 << (id % 64)
			want[id] = int32(i)
		}
		left := len(s.order)
		for _, rp := range s.refs {
			if left == 0 {
				break
			}
			for j, x := range rp.ents {
				id := uint32(x >> 32)
				if set[id%setBits/64]&(1<<(id%64)) == 0 {
					continue
				}
				if i, ok := want[id]; ok && found[i].pos == 0 {
					found[i] = ref{uint32(rp.pos), uint32(j)}
					left--
				}
			}
		}
	}
	var prev ref
	for i, r := range found {
		if r.pos != 0 {
			switch {
			case r.pos == prev.pos && r.entry == prev.entry+1:
				h.uv(1)
			case r.pos == prev.pos && r.entry > prev.entry:
				h.uv(2)
				h.uv(uint64(r.entry - prev.entry - 2))
			default:
				h.uv(2 + uint64(r.pos))
				h.uv(uint64(r.entry))
			}
			prev = r
		} else {
			h.uv(0)
			h.str(s.names[i])
		}
	}
	s.order, s.names, s.refs = nil, nil, nil
}

// Encode returns the manifest state and the pieces it references, in the order its
// indexes count them; pieces stored by an earlier checkpoint have a name and no data. It
// encodes the new pieces on every core, and must be called once.
func (s *IncrementalSnapshot) Encode() (state []byte, pieces []Piece, err error) {
	if s.encoded {
		panic("BUG: window: IncrementalSnapshot encoded twice")
	}
	s.encoded = true
	var wg sync.WaitGroup
	work := make(chan int)
	errs := make([]error, len(s.pending))
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				errs[i] = s.pending[i].encode()
			}
		}()
	}
	for i := range s.pending {
		if s.pending[i].name == "" {
			work <- i
		}
	}
	close(work)
	wg.Wait()
	pieces = make([]Piece, len(s.pending))
	for i := range s.pending {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		pp := &s.pending[i]
		pieces[i] = Piece{Name: pp.name, Data: pp.data}
	}
	h := &encoder{b: s.head}
	s.itemTable(h)
	state = append(h.b, s.body...)
	state = binary.LittleEndian.AppendUint32(state, crc32Checksum(state))
	s.head, s.body = nil, nil
	return state, pieces, nil
}

func (pp *pendingPiece) encode() error {
	b := append([]byte(pieceMagic), pieceV1)
	if pp.decayed != nil {
		var err error
		if b, err = pp.decayed.encode(b); err != nil {
			return err
		}
		pp.decayed.release()
		pp.data, pp.name = b, pieceName(b)
		return nil
	}
	if pp.exact {
		b = append(b, pieceExact)
		b = binary.AppendVarint(b, pp.start)
		b = binary.AppendUvarint(b, uint64(len(pp.ents)))
		for _, x := range pp.ents {
			s := pp.strs[uint32(x>>32)]
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
			b = binary.AppendUvarint(b, x&math.MaxUint32)
		}
		pp.ents, pp.strs = nil, nil
	} else {
		b = append(b, pieceSketch)
		var err error
		if b, err = pp.sk.AppendBinary(b); err != nil {
			return fmt.Errorf("encode sketch piece: %w", err)
		}
		pp.sk = nil
	}
	pp.data, pp.name = b, pieceName(b)
	return nil
}

// Stored records that a checkpoint holding s's pieces was saved: the buckets still as they
// were captured reference their piece from now on. The caller must own the partition, and
// must call Stored or Abandon once for every snapshot it took.
func (p *Partition) Stored(s *IncrementalSnapshot) {
	p.unpin(s)
	for i := range s.pending {
		pp := &s.pending[i]
		switch {
		case pp.f != nil:
			pp.f.piece = pp.name
		case pp.j != nil:
			pp.j.stored(p, pp.name, pp.jepoch, pp.jops)
		case pp.decayed != nil:
			pp.decayed.stored(pp.name)
		case pp.sw != nil:
			for j := range pp.sw.buckets {
				if b := &pp.sw.buckets[j]; b.ver == pp.sver && b.start == pp.start {
					b.piece = pp.name
				}
			}
		}
	}
}

// Abandon lets go of a snapshot whose checkpoint was not saved (or that was never encoded).
// The caller must own the partition.
func (p *Partition) Abandon(s *IncrementalSnapshot) { p.unpin(s) }

// unpin lets go of the buckets s pinned, releasing those that expired meanwhile.
func (p *Partition) unpin(s *IncrementalSnapshot) {
	if s.unpinned {
		return
	}
	s.unpinned = true
	for i := range s.pending {
		if pp := &s.pending[i]; pp.pinned {
			pp.f.pins--
			pp.pinned = false
		}
	}
	keep := p.in.deferred[:0]
	for _, f := range p.in.deferred {
		if f.pins > 0 {
			keep = append(keep, f)
			continue
		}
		f.release(p.in)
	}
	clear(p.in.deferred[len(keep):])
	p.in.deferred = keep
}

// ForgetStored makes the next snapshot encode every piece again: for a store that lost
// pieces (speed/checkpoint.ErrMissingPiece).
func (p *Partition) ForgetStored() {
	forget := func(r ring) {
		for _, f := range r {
			f.piece = ""
		}
	}
	forget(p.minutes)
	for _, w := range p.wins {
		switch w := w.(type) {
		case *exactSliding:
			forget(w.ring)
		case *sketchSliding:
			for j := range w.buckets {
				w.buckets[j].piece = ""
			}
		case *decayedExact:
			w.ck.base = ""
		}
	}
	if p.since != nil {
		forget(p.since.ring)
	}
	p.dropJournals()
}

// dropJournals makes every calendar and all-time sketch's next checkpoint store it whole.
func (p *Partition) dropJournals() {
	for _, w := range p.wins {
		switch w := w.(type) {
		case *sketchCalendar:
			w.j.drop(p)
		case *sketchAll:
			w.j.drop(p)
		}
	}
}

// incFrozen writes a closed bucket as a reference to the piece of its entries (0: none,
// else index + 1) and its side map of late counts.
func (e *encoder) incFrozen(f *frozen) {
	if len(f.ents) == 0 {
		e.uv(0)
	} else {
		pp := pendingPiece{name: f.piece, f: f, exact: true, start: f.start}
		if f.piece == "" {
			// Pin the bucket: its entries never change and, pinned, its handles keep their
			// names, so Encode reads them without the lock from this view of the table.
			f.pins++
			pp.ents, pp.strs, pp.pinned = f.ents, e.inc.p.in.strs, true
		}
		e.inc.pending = append(e.inc.pending, pp)
		e.uv(uint64(len(e.inc.pending)))
	}
	e.pairs = e.pairs[:0]
	for id, c := range f.extra {
		e.pairs = append(e.pairs, pair{e.ix(id), c})
	}
	e.entries()
}

// sketch adds a sketch piece (a copy of sk unless sb says it is stored) and returns its
// reference.
func (inc *incEncoder) sketch(sk *sketch.Sketch, sb *sbucketRef) uint64 {
	pp := pendingPiece{}
	if sb != nil {
		pp.sw, pp.start, pp.sver, pp.name = sb.w, sb.b.start, sb.b.ver, sb.b.piece
	}
	if pp.name == "" {
		pp.sk = sk.Clone()
	}
	inc.pending = append(inc.pending, pp)
	return uint64(len(inc.pending))
}

type sbucketRef struct {
	w *sketchSliding
	b *sbucket
}

// covered reports whether the kept exact buckets determine the counts of [start, asOf):
// the minute ring reaches back to start, or an hourly (or daily) ring whose buckets align
// with start does.
func (inc *incEncoder) derivable(start int64) bool {
	_, ok := inc.p.source(start)
	return ok
}

// source returns a function that offers every exact count of the minutes [start, asOf) from
// the kept buckets, preferring the coarsest ring that covers them, and false if none does.
// An open bucket it reads must be in place (restored or derived) before the call.
func (p *Partition) source(start int64) (func(fn func(id uint32, c uint64)), bool) {
	var best *exactSliding
	for _, w := range p.wins {
		if w, ok := w.(*exactSliding); ok && w.b > 1 && floorTo(start, w.b) == start && w.start(p.asOf) <= start && (best == nil || w.b > best.b) {
			best = w
		}
	}
	if best != nil && (best.b > 1 || p.keep == 0) {
		w := best
		return func(fn func(uint32, uint64)) {
			for _, f := range w.ring {
				if f.start >= start {
					f.each(fn)
				}
			}
			for id, c := range w.openBucket {
				fn(id, c)
			}
		}, true
	}
	if p.keep > 0 && p.asOf-p.keep <= start {
		return func(fn func(uint32, uint64)) {
			for _, f := range p.minutes {
				if f.start >= start {
					f.each(fn)
				}
			}
		}, true
	}
	return nil, false
}

// incOpenBucket writes an hourly (or daily) window's open bucket: 0 none, 1 stored (as
// version 3 does), 2 the sum of the minute ring's minutes since it began.
func (e *encoder) incOpenBucket(w *exactSliding) {
	p := e.inc.p
	switch {
	case !w.hasOpen:
		e.uv(0)
	case p.keep > 0 && p.asOf-p.keep <= w.openStart:
		e.uv(2)
	default:
		e.uv(1)
		e.sv(w.openStart)
		e.counts(w.openBucket)
	}
}

// incSketchSliding writes a sliding sketch window's buckets as pieces, the open one derived
// when the exact buckets determine it, then its candidates.
func (e *encoder) incSketchSliding(w *sketchSliding) {
	p := e.inc.p
	bs := w.buckets
	derived := false
	if n := len(bs); n > 0 && bs[n-1].start == floorTo(p.asOf-1, w.b) && e.inc.derivable(bs[n-1].start) {
		bs, derived = bs[:n-1], true
	}
	e.uv(uint64(len(bs)))
	for i := range bs {
		e.sv(bs[i].start)
		e.uv(e.inc.sketch(bs[i].sk, &sbucketRef{w, &bs[i]}))
	}
	e.bool(derived)
	e.cands(&w.cands)
}

// incDecoder is the decoder's incremental mode: the pieces, parsed.
type incDecoder struct {
	entries int // of all exact pieces
	pieces  []parsedPiece
	used    []bool
	// what Restore derives once everything is read
	openBuckets []*exactSliding
	derive      []*exactCalendar
	openSk      []*sketchSliding
}

type parsedPiece struct {
	name  string
	kind  byte
	start int64
	data  []byte
	ents  []pieceEnt // exact; a decayed window's values (c the float64 bits)
	gone  []pieceEnt // a decayed delta's forgotten items (c unused)
	sk    *sketch.Sketch
	fsk   *sketch.Float // a decayed sketch window's
	err   error
	ids   []uint32 // exact: each entry's handle, once interned (nil: intern when read)
}

type pieceEnt struct {
	off, n uint32 // the item's bytes in data
	c      uint64
}

// parse checks a piece and splits it into entries or decodes its sketch, which must have the
// configured shape.
func (pp *parsedPiece) parse(want sketch.Config) {
	b := pp.data
	if len(b) < len(pieceMagic)+2 || string(b[:len(pieceMagic)]) != pieceMagic || b[len(pieceMagic)] != pieceV1 {
		pp.err = fmt.Errorf("%w: piece %s: bad magic or version", ErrCorrupt, pp.name)
		return
	}
	pp.kind = b[len(pieceMagic)+1]
	d := &decoder{b: b, off: len(pieceMagic) + 2}
	switch pp.kind {
	case pieceExact:
		pp.start = d.sv()
		n := d.count(3)
		pp.ents = make([]pieceEnt, 0, n)
		for range n {
			l := d.count(1)
			off := d.off
			d.raw(l)
			c := d.uv()
			if d.err != nil {
				break
			}
			if l == 0 || c == 0 || c > math.MaxUint32 {
				d.fail("entry of %d bytes with count %d", l, c)
				break
			}
			pp.ents = append(pp.ents, pieceEnt{uint32(off), uint32(l), c})
		}
		if d.err == nil && n == 0 {
			d.fail("empty bucket piece")
		}
		if d.err == nil && d.off != len(b) {
			d.fail("%d bytes after the entries", len(b)-d.off)
		}
	case pieceSketch:
		// Check the shape before decoding: a few bytes could otherwise ask for a gigabyte
		// of zero counters.
		blob := b[d.off:]
		if len(blob) < 16 || blob[7] != byte(want.Depth) || 1<<min(blob[6], 62) != want.Width ||
			binary.LittleEndian.Uint64(blob[8:16]) != want.Seed {
			d.fail("sketch shape differs from the config")
			break
		}
		var s sketch.Sketch
		if err := s.UnmarshalBinary(blob); err != nil {
			d.fail("sketch: %v", err)
		}
		pp.sk = &s
	case pieceFloat, pieceDecayed, pieceDecayedDelta:
		pp.parseDecayed(d, want)
	default:
		d.fail("piece kind %d", pp.kind)
	}
	if d.err != nil {
		pp.err = fmt.Errorf("piece %s: %w", pp.name, d.err)
	}
}

// piece reads a reference (0: none) and returns the piece it names, which must be of the
// kind wanted, marking it used; a piece is referenced once.
func (d *decoder) piece(kind byte) *parsedPiece {
	r := d.uv()
	if d.err != nil || r == 0 {
		return nil
	}
	if r > uint64(len(d.inc.pieces)) || d.inc.used[r-1] || d.inc.pieces[r-1].kind != kind {
		d.fail("piece reference %d: none of kind %d, or used twice", r, kind)
		return nil
	}
	d.inc.used[r-1] = true
	return &d.inc.pieces[r-1]
}

// incFrozen reads a closed bucket: its piece (0: none) and its side map.
func (d *decoder) incFrozen(p *Partition, start int64) *frozen {
	f := &frozen{start: start}
	if pp := d.piece(pieceExact); pp != nil {
		if pp.start != start {
			d.fail("bucket at minute %d holds the piece of minute %d", start, pp.start)
			return f
		}
		f.ents = make([]uint64, 0, len(pp.ents))
		for i, x := range pp.ents {
			var id uint32
			if pp.ids != nil {
				id = pp.ids[i]
			} else {
				id = intern(p.in, pp.data[x.off:x.off+x.n])
			}
			p.in.ref(id)
			f.ents = append(f.ents, pack(id, x.c))
		}
		f.piece = pp.name
		if dupEnts(p, f.ents) {
			d.fail("piece %s names an item twice", pp.name)
			return f
		}
	}
	if d.err != nil {
		return f
	}
	n := d.count(2)
	prev := int64(-1)
	for range n {
		gap, c := d.uv(), d.uv()
		if d.err != nil {
			return f
		}
		if gap >= uint64(d.n) || prev+1+int64(gap) >= int64(d.n) || c == 0 || c > maxSnapCount {
			d.fail("side entry past the table or count %d out of range", c)
			return f
		}
		prev += 1 + int64(gap)
		if f.extra == nil {
			f.extra = make(map[uint32]uint64)
		}
		f.extra[uint32(prev)] = c
		p.in.ref(uint32(prev))
	}
	if len(f.ents) == 0 && len(f.extra) == 0 {
		d.fail("empty bucket at minute %d", start)
	}
	return f
}

// dupEnts reports whether a bucket's entries name a handle twice, using the interner's
// dense scratch marks.
func dupEnts(p *Partition, ents []uint64) bool {
	if n := len(p.in.strs); len(p.incIdx) < n {
		p.incIdx = append(p.incIdx, make([]uint32, n-len(p.incIdx))...)
	}
	dup := false
	for _, x := range ents {
		id := uint32(x >> 32)
		if p.incIdx[id] != 0 {
			dup = true
		}
		p.incIdx[id] = 1
	}
	for _, x := range ents {
		p.incIdx[uint32(x>>32)] = 0
	}
	return dup
}

// incSketch reads a reference to a sketch piece and checks its shape.
func (d *decoder) incSketch(p *Partition, conservative bool) *sketch.Sketch {
	sk, _ := d.incSketchPiece(p, conservative)
	return sk
}

// incSketchPiece is incSketch, also returning the piece's name.
func (d *decoder) incSketchPiece(p *Partition, conservative bool) (*sketch.Sketch, string) {
	pp := d.piece(pieceSketch)
	if pp == nil {
		if d.err == nil {
			d.fail("no sketch piece")
		}
		return nil, ""
	}
	want := p.cfg.Sketch
	want.Conservative = conservative
	if pp.sk.Config() != want {
		d.fail("sketch piece config %+v, want %+v", pp.sk.Config(), want)
		return nil, ""
	}
	if pp.sk.Total() == 0 {
		d.fail("empty sketch")
		return nil, ""
	}
	return pp.sk, pp.name
}

// incOpenBucket reads an hourly (or daily) window's open bucket (see encoder.incOpenBucket).
func (d *decoder) incOpenBucket(p *Partition, w *exactSliding, nb int64) {
	switch d.uv() {
	case 0:
	case 1:
		w.hasOpen, w.openStart = true, d.sv()
		if d.err == nil && w.openStart != nb {
			d.fail("%s: open bucket %d, want %d", w.cfg.Name, w.openStart, nb)
		}
		d.counts(p, w.openBucket)
	case 2:
		if !p.started || p.keep == 0 || p.asOf-p.keep > nb {
			d.fail("%s: a derived open bucket the minute ring does not cover", w.cfg.Name)
			return
		}
		w.openStart = nb
		d.inc.openBuckets = append(d.inc.openBuckets, w)
	default:
		d.fail("%s: open bucket flag", w.cfg.Name)
	}
}

func (d *decoder) incSketchSliding(p *Partition, w *sketchSliding) {
	n := d.count(2)
	if n > 0 && !p.started {
		d.fail("a partition that saw no event has sketch buckets")
	}
	ws, nb := w.start(p.asOf), floorTo(p.asOf-1, w.b)
	for range n {
		s := d.sv()
		if d.err == nil && (s < ws || s > nb || floorTo(s, w.b) != s || (len(w.buckets) > 0 && s <= w.buckets[len(w.buckets)-1].start)) {
			d.fail("%s: bucket at minute %d outside [%d, %d] or out of order", w.cfg.Name, s, ws, nb)
		}
		sk, name := d.incSketchPiece(p, false)
		if d.err != nil {
			return
		}
		p.skVer++
		w.buckets = append(w.buckets, sbucket{start: s, sk: sk, piece: name, ver: p.skVer})
	}
	if d.bool() {
		if d.err == nil && (!p.started || (len(w.buckets) > 0 && w.buckets[len(w.buckets)-1].start >= nb)) {
			d.fail("%s: a derived open bucket after a stored one", w.cfg.Name)
		}
		if _, ok := p.source(nb); d.err == nil && !ok {
			d.fail("%s: a derived open bucket the exact buckets do not cover", w.cfg.Name)
		}
		d.inc.openSk = append(d.inc.openSk, w)
	}
	d.cands(p, &w.cands)
}

// deriveIncremental sums what an incremental snapshot left out, in dependency order: the
// open buckets from the minute ring, then the calendar totals and the open sketch
// buckets from the buckets.
func (p *Partition) deriveIncremental(inc *incDecoder) error {
	for _, w := range inc.openBuckets {
		for _, f := range p.minutes {
			if f.start >= w.openStart {
				f.each(func(id uint32, c uint64) { w.addOpen(p, id, c) })
			}
		}
		if len(w.openBucket) == 0 {
			return fmt.Errorf("%w: %s: derived open bucket is empty", ErrCorrupt, w.cfg.Name)
		}
		w.hasOpen = true
	}
	// The calendar totals (which reference their items) and the open sketch buckets (which
	// only read the buckets and the item names) on two cores.
	return runAll(func() error { return p.deriveCalendars(inc) }, func() error { return p.deriveOpenSketches(inc) })
}

func (p *Partition) deriveCalendars(inc *incDecoder) error {
	for _, w := range inc.derive {
		src, ok := p.source(w.pstart)
		if !ok {
			return fmt.Errorf("%w: %s: derived totals the buckets do not cover", ErrCorrupt, w.cfg.Name)
		}
		src(func(id uint32, c uint64) { w.add(p, id, c) })
		if w.sum == 0 {
			return fmt.Errorf("%w: %s: derived totals are empty", ErrCorrupt, w.cfg.Name)
		}
		if w.sum > maxSnapCount {
			return fmt.Errorf("%w: %s: total over %d", ErrCorrupt, w.cfg.Name, uint64(maxSnapCount))
		}
	}
	return nil
}

func (p *Partition) deriveOpenSketches(inc *incDecoder) error {
	for _, w := range inc.openSk {
		nb := floorTo(p.asOf-1, w.b)
		src, _ := p.source(nb)
		// Sum per item first (in a dense slice by handle: a map of a million items was a
		// third of the restore's derive time): the sketch then takes each item once, in any
		// order (standard update adds). The hashes are computed on every core.
		sums := make([]uint64, len(p.in.strs))
		var ids []uint32
		src(func(id uint32, c uint64) {
			if c == 0 {
				return
			}
			if sums[id] == 0 {
				ids = append(ids, id)
			}
			sums[id] += c
		})
		if len(ids) == 0 {
			return fmt.Errorf("%w: %s: derived open bucket is empty", ErrCorrupt, w.cfg.Name)
		}
		hs, ns := make([]uint64, len(ids)), make([]uint64, len(ids))
		parallel(len(ids), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				hs[i], ns[i] = p.hash(ids[i]), sums[ids[i]]
			}
		})
		bk := w.bucket(p, nb)
		addMany(bk, hs, ns)
	}
	return nil
}

// RestoreIncremental rebuilds a partition from an incremental snapshot's state and its
// pieces (SnapshotIncremental, Encode), or from a whole snapshot (MarshalBinary; pieces
// nil). The checks are Restore's; a piece that is malformed, missing, unused or referenced
// twice is an ErrCorrupt.
func RestoreIncremental(cfg Config, state []byte, pieces []Piece) (*Partition, error) {
	if len(state) <= len(snapMagic) || (state[len(snapMagic)] != snapV4 && state[len(snapMagic)] != snapV5) {
		if len(pieces) > 0 {
			return nil, fmt.Errorf("%w: a whole snapshot with %d pieces", ErrCorrupt, len(pieces))
		}
		return Restore(cfg, state)
	}
	inc := &incDecoder{pieces: make([]parsedPiece, len(pieces)), used: make([]bool, len(pieces))}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, pc := range pieces {
		inc.pieces[i] = parsedPiece{name: pc.Name, data: pc.Data}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			inc.pieces[i].parse(cfg.Sketch)
			<-sem
		}()
	}
	wg.Wait()
	for i := range inc.pieces {
		if inc.pieces[i].err != nil {
			return nil, inc.pieces[i].err
		}
		inc.entries += len(inc.pieces[i].ents)
	}
	return restore(cfg, state, inc)
}

func crc32Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// checkPiecesUsed fails a snapshot that lists a piece it never references.
func (d *decoder) checkPiecesUsed() {
	if d.inc == nil || d.err != nil {
		return
	}
	for i, u := range d.inc.used {
		if !u {
			d.fail("piece %s is never referenced", d.inc.pieces[i].name)
			return
		}
	}
}
