package window

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"

	trmodel "trending/model"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// Snapshot format version 3 (versions 1 and 2 are still read); docs/format/snapshot.md is
// the full spec. Version 2 added the late-drop counts of closed calendar periods after the
// closed lists; version 3 adds, after them, the counts since the time boundary
// (Config.SinceDays), behind a flag that says whether the partition keeps them.
const (
	// maxSnapCount bounds every count and window sum in a snapshot, far
	// above any real stream (2^62 views), so that sums re-derived from a
	// hostile snapshot cannot overflow and later adds have room.
	maxSnapCount = 1 << 62
	snapVersion  = 3
	snapV1       = 1 // no late-drop counts: Restore starts them at zero
	snapV2       = 2 // late-drop counts, no counts since the boundary
	snapMagic    = "TWIN"
	crcLen       = 4
	flagStarted  = 1 << 0
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the partition's whole state: watermark, counters,
// open minutes, closed buckets, sketches, candidates and unclaimed closed
// lists, followed by a CRC-32C. Items are named by string in sorted order
// and every set is written sorted, so the same state gives the same bytes
// however it was reached. Running totals and running sketches are left out:
// Restore re-sums them from the buckets.
func (p *Partition) MarshalBinary() ([]byte, error) {
	e := &encoder{}
	e.header(p)
	e.itemsHeld(p.in, p.journalOnly())
	e.openMinutes(p.open)
	e.ring(p.minutes)
	for _, w := range p.wins {
		if err := w.encodeState(e); err != nil {
			return nil, err
		}
	}
	e.closedLists(p)
	e.late(p.late)
	e.since(p.since)
	e.b = binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
	return e.b, nil
}

// snapState is the part of a window kind's state a snapshot carries, written
// and read in the window's turn after the minute ring. Running sums are not
// part of it: derive re-sums them from the buckets.
type snapState interface {
	encodeState(e *encoder) error
	// decodeState reads the state into a window of a fresh partition; a problem
	// sets d.err.
	decodeState(d *decoder, p *Partition)
}

// header writes the magic, version and config fingerprint, then the flags,
// the watermark, the lateness and the counters.
func (e *encoder) header(p *Partition) {
	e.b = append(e.b, snapMagic...)
	e.b = append(e.b, snapVersion)
	fp := p.cfg.fingerprint()
	e.uv(uint64(len(fp)))
	e.b = append(e.b, fp...)

	var flags byte
	if p.started {
		flags |= flagStarted
	}
	e.b = append(e.b, flags)
	e.sv(p.maxSeen)
	e.sv(p.asOf)
	e.uv(uint64(p.lateMs))
	e.uv(p.st.Counted)
	e.uv(p.st.Late)
	e.uv(p.st.TooLate)
	e.uv(p.st.Invalid)
}

// journalOnly returns the items that only sketch journals' single adds hold. A whole
// snapshot stores those sketches whole, not their journals, so it leaves these items out
// of its table (a restore refuses an item that nothing it read holds).
func (p *Partition) journalOnly() map[uint32]bool {
	held := map[uint32]uint32{}
	for _, w := range p.wins {
		var j *journal
		switch w := w.(type) {
		case *sketchAll:
			j = &w.j
		case *sketchCalendar:
			j = &w.j
		}
		if j == nil {
			continue
		}
		for _, o := range j.ops {
			if o.minute == noMinute {
				held[o.id]++
			}
		}
	}
	var only map[uint32]bool
	for id, n := range held {
		if p.in.refs[id] == n {
			if only == nil {
				only = map[uint32]bool{}
			}
			only[id] = true
		}
	}
	return only
}

// items writes the item table, every item alive in sorted order, and sets
// e.idx to map handles to it.
func (e *encoder) items(in *interner) { e.itemsHeld(in, nil) }

// itemsHeld is items without the items in skip.
func (e *encoder) itemsHeld(in *interner, skip map[uint32]bool) {
	live := make([]uint32, 0, in.live())
	for id, s := range in.strs {
		if s != "" && !skip[uint32(id)] {
			live = append(live, uint32(id))
		}
	}
	strs := in.strs
	slices.SortFunc(live, func(a, b uint32) int { return strings.Compare(strs[a], strs[b]) })
	names := make([]string, len(live))
	e.idx = make([]uint32, len(strs))
	for i, id := range live {
		names[i] = strs[id]
		e.idx[id] = uint32(i)
	}
	e.uv(uint64(len(names)))
	for _, s := range names {
		e.str(s)
	}
}

func (e *encoder) openMinutes(open []openMinute) {
	if e.inc != nil && e.inc.p.byHash {
		// An incremental snapshot's table names the open minutes' items first: in the
		// minute by minute in the order of their hash, which is the order of the closed
		// minutes' pieces, so that the references to those pieces' entries mostly
		// increase (itemTable).
		hs := e.inc.p.sortBuf[:0]
		for _, o := range open {
			hs = hs[:0]
			o.each(func(id uint32, _ uint64) { hs = append(hs, hashEnt{e.inc.p.hash(id), uint64(id)}) })
			slices.SortFunc(hs, func(a, b hashEnt) int { return cmp.Compare(a.h, b.h) })
			for _, x := range hs {
				e.ix(uint32(x.v))
			}
		}
		e.inc.p.sortBuf = hs[:0]
	}
	e.uv(uint64(len(open)))
	for _, o := range open {
		e.sv(o.minute)
		e.pairs = e.pairs[:0]
		o.each(func(id uint32, c uint64) { e.pairs = append(e.pairs, pair{e.ix(id), c}) })
		if e.inc != nil {
			e.runEntries()
		} else {
			e.entries()
		}
	}
}

func (w *exactSliding) encodeState(e *encoder) error {
	if w.b == 1 {
		return nil // the minute ring holds its buckets
	}
	e.ring(w.ring)
	if e.inc != nil {
		e.incOpenBucket(w)
		return nil
	}
	e.bool(w.hasOpen)
	if w.hasOpen {
		e.sv(w.openStart)
		e.counts(w.openBucket)
	}
	return nil
}

func (w *exactCalendar) encodeState(e *encoder) error {
	e.bool(w.opened)
	if w.opened {
		e.sv(w.pstart)
		if e.inc != nil && e.inc.derivable(w.pstart) {
			e.bool(true) // derived: Restore sums the totals from the buckets
			return nil
		} else if e.inc != nil {
			e.bool(false)
		}
		e.totals(w.totals)
	}
	return nil
}

func (w *sketchSliding) encodeState(e *encoder) error {
	if e.inc != nil {
		e.incSketchSliding(w)
		return nil
	}
	e.uv(uint64(len(w.buckets)))
	for _, b := range w.buckets {
		e.sv(b.start)
		if err := e.sketch(b.sk); err != nil {
			return err
		}
	}
	e.cands(&w.cands)
	return nil
}

func (w *sketchCalendar) encodeState(e *encoder) error {
	e.bool(w.opened)
	if w.opened && e.inc != nil {
		e.sv(w.pstart)
		e.incJournal(&w.j, w.sk)
	} else if w.opened {
		e.sv(w.pstart)
		if err := e.sketch(w.sk); err != nil {
			return err
		}
	}
	e.cands(&w.cands)
	return nil
}

// encodeState writes the totals themselves: no bucket could re-derive them.
func (w *exactAll) encodeState(e *encoder) error {
	e.bool(w.sum > 0)
	if w.sum > 0 {
		e.totals(w.totals)
	}
	return nil
}

func (w *sketchAll) encodeState(e *encoder) error {
	e.bool(w.sk.Total() > 0)
	if w.sk.Total() > 0 && e.inc != nil {
		e.incJournal(&w.j, w.sk)
	} else if w.sk.Total() > 0 {
		if err := e.sketch(w.sk); err != nil {
			return err
		}
	}
	e.cands(&w.cands)
	return nil
}

// closedLists writes the closed calendar lists not yet taken, naming items by
// string.
func (e *encoder) closedLists(p *Partition) {
	e.uv(uint64(len(p.closed)))
	for _, l := range p.closed {
		wi := slices.IndexFunc(p.wins, func(w window) bool { return w.conf().Name == l.Window })
		e.uv(uint64(wi))
		e.sv(l.Start.Unix() / 60)
		e.uv(l.Total)
		e.uv(uint64(len(l.Items)))
		for _, it := range l.Items {
			e.str(it.Item)
			e.uv(it.Count)
		}
		if p.wins[wi].conf().Mode == windowset.Frequent {
			e.uv(l.MaxError) // a frequent window's bounds (only in snapshots with one)
			e.uv(l.Cutoff)
		}
	}
}

// late writes the late-drop counts (version 2), sorted by (window, start).
func (e *encoder) late(late map[lateKey]lateCount) {
	keys := make([]lateKey, 0, len(late))
	for k := range late {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareLateKeys)
	e.uv(uint64(len(keys)))
	for _, k := range keys {
		lc := late[k]
		e.uv(uint64(k.win))
		e.sv(k.start)
		e.uv(lc.n)
		e.bool(lc.dirty)
	}
}

// since writes the counts since the boundary (version 3), behind a flag that
// says whether the partition keeps them.
func (e *encoder) since(s *since) {
	e.bool(s != nil)
	if s != nil {
		s.encodeState(e)
	}
}

func (s *since) encodeState(e *encoder) {
	e.uv(uint64(s.days))
	e.sv(s.boundary)
	e.sv(s.from)
	e.ring(s.ring)
	e.bool(s.hasOpen)
	if s.hasOpen {
		e.sv(s.openStart)
		e.counts(s.openBucket)
	}
}

type pair struct {
	idx uint32 // index in the item table
	c   uint64
}

type encoder struct {
	b      []byte
	idx    []uint32 // handle -> index in the item table (incremental: index + 1, 0 unassigned)
	packed []uint64
	pairs  []pair
	inc    *incEncoder // nil for a whole snapshot (MarshalBinary)
}

// ix returns the item-table index of a handle. An incremental snapshot assigns indexes in
// order of first use, so its table holds only the items its manifest names.
func (e *encoder) ix(id uint32) uint32 {
	if e.inc == nil {
		return e.idx[id]
	}
	if i := e.idx[id]; i != 0 {
		return i - 1
	}
	e.inc.order = append(e.inc.order, id)
	e.idx[id] = uint32(len(e.inc.order))
	return uint32(len(e.inc.order) - 1)
}

func (e *encoder) uv(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) sv(v int64)  { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) str(s string) {
	e.uv(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// entries writes e.pairs sorted by item, summing duplicates (an item in a
// frozen bucket's array and its side map is one entry): a count, then per
// entry the gap to the previous item index minus one and the count.
func (e *encoder) entries() {
	ps := e.sortedPairs()
	e.uv(uint64(len(ps)))
	e.gapEntries(ps, -1)
}

// sortedPairs sorts e.pairs by item, summing duplicates.
func (e *encoder) sortedPairs() []pair {
	ps := e.pairs
	e.sortPairs(ps)
	n := 0
	for i := range ps {
		if n > 0 && ps[n-1].idx == ps[i].idx {
			ps[n-1].c += ps[i].c
			continue
		}
		ps[n] = ps[i]
		n++
	}
	return ps[:n]
}

// runEntries writes e.pairs as entries does, but as uv(n) uv(run), the counts of the first
// run entries, which are the items 0 to run-1, then the rest as entries: an incremental
// snapshot's first open minute names the first items of its table (version 5).
func (e *encoder) runEntries() {
	ps := e.sortedPairs()
	run := 0
	for run < len(ps) && ps[run].idx == uint32(run) {
		run++
	}
	e.uv(uint64(len(ps)))
	e.uv(uint64(run))
	for _, x := range ps[:run] {
		e.uv(x.c)
	}
	e.gapEntries(ps[run:], int64(run)-1)
}

// gapEntries writes each entry as the gap to the previous item index minus one and the
// count.
func (e *encoder) gapEntries(ps []pair, prev int64) {
	for _, x := range ps {
		e.uv(uint64(int64(x.idx) - prev - 1))
		e.uv(x.c)
		prev = int64(x.idx)
	}
}

// sortPairs sorts by item index. Counts almost always fit in 32 bits; then
// it sorts packed uint64s, several times faster than a comparison sort of
// structs.
func (e *encoder) sortPairs(ps []pair) {
	for _, x := range ps {
		if x.c > math.MaxUint32 {
			slices.SortFunc(ps, func(a, b pair) int { return int64cmp(int64(a.idx), int64(b.idx)) })
			return
		}
	}
	k := e.packed[:0]
	for _, x := range ps {
		k = append(k, uint64(x.idx)<<32|x.c)
	}
	slices.Sort(k)
	for i, v := range k {
		ps[i] = pair{uint32(v >> 32), v & math.MaxUint32}
	}
	e.packed = k
}

func int64cmp(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (e *encoder) frozen(f *frozen) {
	e.pairs = e.pairs[:0]
	f.each(func(id uint32, c uint64) { e.pairs = append(e.pairs, pair{e.ix(id), c}) })
	e.entries()
}

func (e *encoder) ring(r ring) {
	e.uv(uint64(len(r)))
	for _, f := range r {
		e.sv(f.start)
		if e.inc != nil {
			e.incFrozen(f)
			continue
		}
		e.frozen(f)
	}
}

func (e *encoder) counts(m map[uint32]uint64) {
	e.pairs = e.pairs[:0]
	for id, c := range m {
		e.pairs = append(e.pairs, pair{e.ix(id), c})
	}
	e.entries()
}

// totals writes a dense slice of totals indexed by handle, its nonzero
// entries only.
func (e *encoder) totals(t []uint64) {
	e.pairs = e.pairs[:0]
	for id, c := range t {
		if c != 0 {
			e.pairs = append(e.pairs, pair{e.ix(uint32(id)), c})
		}
	}
	e.entries()
}

func (e *encoder) sketch(s *sketch.Sketch) error {
	if e.inc != nil {
		e.uv(e.inc.sketch(s, nil))
		return nil
	}
	lenAt := len(e.b)
	e.b = append(e.b, make([]byte, binary.MaxVarintLen64)...)
	start := len(e.b)
	b, err := s.AppendBinary(e.b)
	if err != nil {
		return fmt.Errorf("encode sketch: %w", err)
	}
	// Move the blob down over the unused part of the length slot.
	n := len(b) - start
	var tmp [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(tmp[:], uint64(n))
	copy(b[lenAt:], tmp[:ln])
	copy(b[lenAt+ln:], b[start:])
	e.b = b[:lenAt+ln+n]
	return nil
}

func (e *encoder) cands(c *candidates) {
	ids := make([]uint32, 0, len(c.set))
	for id := range c.set {
		ids = append(ids, e.ix(id))
	}
	slices.Sort(ids)
	e.uv(uint64(len(ids)))
	prev := int64(-1)
	for _, i := range ids {
		e.uv(uint64(int64(i) - prev - 1))
		prev = int64(i)
	}
	e.uv(c.floor)
	e.sv(c.at)
}

// Restore rebuilds a partition from a MarshalBinary snapshot taken under
// the same window and sketch settings (K, M, the candidate floor and cap and
// the allowed lateness may differ). Malformed input returns an error
// wrapping ErrCorrupt, a snapshot of other windows or sketch shapes one
// wrapping ErrConfigMismatch; Restore never panics on any input.
func Restore(cfg Config, b []byte) (*Partition, error) { return restore(cfg, b, nil) }

// restore is Restore of a whole snapshot (inc nil) or of an incremental one's state.
func restore(cfg Config, b []byte, inc *incDecoder) (*Partition, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if len(b) < len(snapMagic)+1+crcLen {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(b))
	}
	if string(b[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:len(snapMagic)], snapMagic)
	}
	v := b[len(snapMagic)]
	if inc != nil && v != snapV4 && v != snapV5 {
		return nil, fmt.Errorf("%w: format version %d with pieces", ErrCorrupt, v)
	}
	if v != snapVersion && v != snapV2 && v != snapV1 && ((v != snapV4 && v != snapV5) || inc == nil) {
		return nil, fmt.Errorf("%w: format version %d, this build reads %d to %d", ErrCorrupt, v, snapV1, snapVersion)
	}
	body := b[:len(b)-crcLen]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-crcLen:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, want)
	}
	d := &decoder{b: body, off: len(snapMagic) + 1, version: v, inc: inc}
	fp := d.str()
	if d.err == nil && fp != p.cfg.fingerprint() {
		return nil, fmt.Errorf("%w: snapshot has %q, config has %q", ErrConfigMismatch, fp, p.cfg.fingerprint())
	}
	if err := d.partition(p); err != nil {
		return nil, err
	}
	if d.off != len(d.b) {
		return nil, fmt.Errorf("%w: %d bytes after the state", ErrCorrupt, len(d.b)-d.off)
	}
	if inc != nil {
		if err := p.deriveIncremental(inc); err != nil {
			return nil, err
		}
	} else {
		p.dropJournals() // a whole snapshot stored no base: the next checkpoint stores one
	}
	if err := p.derive(); err != nil {
		return nil, err
	}
	// A changed allowed lateness may put the watermark past minutes the
	// snapshot still had open.
	if p.started {
		if target := floorDiv(p.maxSeen-p.lateMs, minuteMs); target > p.asOf {
			p.advanceTo(target)
		}
	}
	return p, nil
}

// decoder reads a snapshot with a sticky error: after the first problem
// every read returns zero values and the error is reported once.
type decoder struct {
	b   []byte
	off int
	err error
	n   int // number of items in the table
	// version is the snapshot's format version.
	version byte
	inc     *incDecoder // the pieces of an incremental snapshot; nil for a whole one
	// the previous item reference of a version-5 table (piece 0: none yet)
	refPiece, refEntry uint64
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: at byte %d: %s", ErrCorrupt, d.off, fmt.Sprintf(format, args...))
	}
}

// uv reads a minimal uvarint.
func (d *decoder) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 || (n > 1 && d.b[d.off+n-1] == 0) {
		d.fail("bad varint")
		return 0
	}
	d.off += n
	return v
}

// sv reads a minimal zigzag varint.
func (d *decoder) sv() int64 {
	u := d.uv()
	return int64(u>>1) ^ -int64(u&1)
}

// count reads a length that cannot exceed the bytes left, each element
// taking at least min bytes: the guard against a huge allocation.
func (d *decoder) count(min int) int {
	v := d.uv()
	if d.err == nil && v > uint64((len(d.b)-d.off)/min) {
		d.fail("count %d larger than the input", v)
		return 0
	}
	return int(v)
}

func (d *decoder) raw(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail("%d bytes past the end", n)
		return nil
	}
	r := d.b[d.off : d.off+n]
	d.off += n
	return r
}

func (d *decoder) str() string { return string(d.raw(d.count(1))) }

func (d *decoder) byte1() byte {
	r := d.raw(1)
	if r == nil {
		return 0
	}
	return r[0]
}

func (d *decoder) bool() bool {
	switch v := d.byte1(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bool byte %d", v)
		return false
	}
}

// entries reads item-index entries and calls fn for each; counts are >= 1.
func (d *decoder) entries(fn func(idx uint32, c uint64)) {
	n := d.count(2)
	d.gapEntries(n, -1, fn)
	if n == 0 {
		d.fail("empty bucket")
	}
}

// runEntries reads what encoder.runEntries wrote.
func (d *decoder) runEntries(fn func(idx uint32, c uint64)) {
	n := d.count(1)
	run := d.uv()
	if d.err == nil && (run > uint64(n) || run > uint64(d.n)) {
		d.fail("a run of %d entries of %d, in a table of %d", run, n, d.n)
	}
	if d.err != nil {
		return
	}
	for i := range int(run) {
		c := d.uv()
		if d.err != nil {
			return
		}
		if c == 0 || c > maxSnapCount {
			d.fail("count %d out of range", c)
			return
		}
		fn(uint32(i), c)
	}
	d.gapEntries(n-int(run), int64(run)-1, fn)
	if n == 0 {
		d.fail("empty bucket")
	}
}

// gapEntries reads n entries of gap and count after item index prev.
func (d *decoder) gapEntries(n int, prev int64, fn func(idx uint32, c uint64)) {
	for range n {
		gap, c := d.uv(), d.uv()
		if d.err != nil {
			return
		}
		if gap >= uint64(d.n) || prev+1+int64(gap) >= int64(d.n) {
			d.fail("item index past the table of %d", d.n)
			return
		}
		if c == 0 || c > maxSnapCount {
			d.fail("count %d out of range", c)
			return
		}
		prev += 1 + int64(gap)
		fn(uint32(prev), c)
	}
}

// frozen reads a closed bucket; handles equal item indexes after restore.
func (d *decoder) frozen(p *Partition, start int64) *frozen {
	f := &frozen{start: start}
	d.entries(func(id uint32, c uint64) {
		p.in.ref(id)
		if c > math.MaxUint32 {
			if f.extra == nil {
				f.extra = make(map[uint32]uint64)
			}
			f.extra[id] = c
			return
		}
		f.ents = append(f.ents, pack(id, c))
	})
	return f
}

// ring reads a ring of buckets whose starts must be strictly increasing,
// multiples of b and within [lo, hi).
func (d *decoder) ring(p *Partition, b, lo, hi int64) ring {
	n := d.count(3)
	var r ring
	for range n {
		s := d.sv()
		if d.err == nil && (s < lo || s >= hi || floorTo(s, b) != s || (len(r) > 0 && s <= r[len(r)-1].start)) {
			d.fail("bucket at minute %d outside [%d, %d) or out of order", s, lo, hi)
		}
		if d.err != nil {
			return r
		}
		if d.inc != nil {
			r = append(r, d.incFrozen(p, s))
			continue
		}
		r = append(r, d.frozen(p, s))
	}
	return r
}

// counts reads a map of counts (an open minute or an open bucket), each
// holding a reference on its item.
func (d *decoder) counts(p *Partition, m map[uint32]uint64) {
	d.entries(func(id uint32, c uint64) {
		p.in.ref(id)
		m[id] = c
	})
}

// totals reads the nonzero entries of a dense slice of totals indexed by
// handle, each holding a reference on its item, and adds them to *sum, which
// must stay within maxSnapCount.
func (d *decoder) totals(p *Partition, name string, t []uint64, sum *uint64) {
	d.entries(func(id uint32, c uint64) {
		p.in.ref(id)
		t[id] = c
		*sum += c
		if *sum > maxSnapCount {
			d.fail("%s: total over %d", name, uint64(maxSnapCount))
		}
	})
}

func (d *decoder) sketch(p *Partition, conservative bool) *sketch.Sketch {
	if d.inc != nil {
		return d.incSketch(p, conservative)
	}
	blob := d.raw(d.count(1))
	if d.err != nil {
		return nil
	}
	want := p.cfg.Sketch
	want.Conservative = conservative
	// Check the shape before decoding: a few bytes could otherwise ask for
	// a gigabyte of zero counters.
	if len(blob) < 16 || blob[7] != byte(want.Depth) || 1<<min(blob[6], 62) != want.Width ||
		binary.LittleEndian.Uint64(blob[8:16]) != want.Seed {
		d.fail("sketch shape differs from the config")
		return nil
	}
	var s sketch.Sketch
	if err := s.UnmarshalBinary(blob); err != nil {
		d.fail("sketch: %v", err)
		return nil
	}
	if s.Config() != want {
		d.fail("sketch config %+v, want %+v", s.Config(), want)
		return nil
	}
	if s.Total() == 0 {
		d.fail("empty sketch")
		return nil
	}
	return &s
}

func (d *decoder) cands(p *Partition, c *candidates) {
	n := d.count(1)
	prev := int64(-1)
	for range n {
		gap := d.uv()
		if d.err == nil && (gap >= uint64(d.n) || prev+1+int64(gap) >= int64(d.n)) {
			d.fail("candidate index past the table")
		}
		if d.err != nil {
			return
		}
		prev += 1 + int64(gap)
		c.set[uint32(prev)] = struct{}{}
		p.in.ref(uint32(prev))
	}
	c.floor = d.uv()
	c.at = d.sv()
}

// calendarStart reads an open calendar period's start and checks it is a
// period start whose period holds a closed minute and has not ended.
func (d *decoder) calendarStart(p *Partition, span trmodel.Period) (start, end int64) {
	s := d.sv()
	if d.err != nil {
		return 0, 0
	}
	if s < minEventMs/minuteMs || s >= maxEventMs/minuteMs || span.StartMinute(s) != s || s >= p.asOf || span.EndMinute(s) <= p.asOf {
		d.fail("calendar period at minute %d is not open as of %d", s, p.asOf)
		return 0, 0
	}
	return s, span.EndMinute(s)
}

// partition decodes everything after the fingerprint into p.
func (d *decoder) partition(p *Partition) error {
	d.header(p)
	d.items(p)
	d.openMinutes(p)
	p.minutes = d.ring(p, 1, p.asOf-p.keep, p.asOf)
	for _, w := range p.wins {
		if d.err != nil {
			return d.err
		}
		w.decodeState(d, p)
	}
	d.closedLists(p)
	if d.version >= snapV2 {
		d.late(p)
	}
	drop := d.since(p)
	d.checkPiecesUsed()
	if d.err != nil {
		return d.err
	}
	for id := range d.n {
		if p.in.refs[id] == 0 {
			d.fail("item %q is in the table but held by nothing", p.in.strs[id])
			return d.err
		}
	}
	if drop != nil {
		for _, f := range drop.ring {
			f.release(p.in)
		}
		for id := range drop.openBucket {
			p.in.unref(id)
		}
	}
	return nil
}

// header reads the flags, the watermark, the lateness it was taken under and
// the counters, and checks they agree.
func (d *decoder) header(p *Partition) {
	flags := d.byte1()
	if flags&^flagStarted != 0 {
		d.fail("unknown flags %#x", flags)
	}
	p.started = flags&flagStarted != 0
	p.maxSeen, p.asOf = d.sv(), d.sv()
	late := d.uv()
	p.st.Counted, p.st.Late, p.st.TooLate, p.st.Invalid = d.uv(), d.uv(), d.uv(), d.uv()
	if d.err != nil {
		return
	}
	if late > uint64(MaxLateness.Milliseconds()) {
		d.fail("allowed lateness %d ms over the limit", late)
	}
	// The watermark minute never trails the largest event time by more
	// than the lateness in force when the snapshot was taken (it can lead
	// it after a restart with a longer lateness).
	if p.started {
		if p.maxSeen < minEventMs || p.maxSeen >= maxEventMs || p.asOf > p.maxSeen/minuteMs ||
			p.asOf < floorDiv(p.maxSeen-int64(late), minuteMs) {
			d.fail("watermark minute %d, largest event time %d and lateness %d ms are inconsistent", p.asOf, p.maxSeen, late)
		}
	} else if p.maxSeen != 0 || p.asOf != 0 {
		d.fail("a partition that saw no event has a watermark")
	}
}

// items reads the item table: strictly increasing, non-empty; interned in
// order, so the handle of item i is i.
func (d *decoder) items(p *Partition) {
	if d.inc != nil {
		// The number of items alive when the snapshot was taken: grow the interner once.
		// A hint only (bounded by what the pieces could name), never trusted further.
		hint := d.uv()
		limit := uint64(d.inc.entries) + uint64(len(d.b)-d.off)
		p.in.reserve(int(min(hint, limit)))
	}
	d.n = d.count(2)
	prev := ""
	for i := range d.n {
		var s string
		if d.version == snapV5 {
			s = d.itemRef()
		} else {
			s = d.str()
		}
		// An incremental snapshot's table is in order of first use: unique, not sorted.
		if d.err == nil && (s == "" || (d.inc == nil && i > 0 && s <= prev)) {
			d.fail("item %d not in strictly increasing order", i)
		}
		if d.err != nil {
			return
		}
		if id := p.in.intern(s); id != uint32(i) {
			d.fail("item %d named twice", i)
			return
		}
		prev = s
	}
	if d.n > 0 && !p.started {
		d.fail("a partition that saw no event holds items")
	}
	if d.inc != nil && d.err == nil {
		d.inc.internPieces(p)
	}
}

// itemRef reads an item of a version-5 table: uv(0) and the name; uv(1), the entry after
// the previous reference's in the same piece; uv(2) uv(gap), the entry gap+2 after it; or
// uv(2+piece) uv(entry), the item of an entry of an exact piece of the snapshot.
func (d *decoder) itemRef() string {
	tag := d.uv()
	if tag == 0 {
		return d.str()
	}
	var r, j uint64
	if tag <= 2 {
		var gap uint64
		if tag == 2 {
			gap = 1 + d.uv()
		}
		if d.err == nil && (d.refPiece == 0 || gap >= 1<<32) {
			d.fail("item reference relative to no previous one")
		}
		r, j = d.refPiece, d.refEntry+1+gap
	} else {
		r, j = tag-2, d.uv()
	}
	if d.err != nil {
		return ""
	}
	d.refPiece, d.refEntry = r, j
	if r > uint64(len(d.inc.pieces)) || d.inc.pieces[r-1].kind != pieceExact || j >= uint64(len(d.inc.pieces[r-1].ents)) {
		d.fail("item reference to entry %d of piece %d: no such exact piece entry", j, r)
		return ""
	}
	pp := &d.inc.pieces[r-1]
	x := pp.ents[j]
	return string(pp.data[x.off : x.off+x.n])
}

// openMinutes reads the minutes not yet closed: at or after the watermark
// minute, strictly increasing.
func (d *decoder) openMinutes(p *Partition) {
	nOpen := d.count(3)
	for range nOpen {
		m := d.sv()
		if d.err == nil && (m < p.asOf || m >= maxEventMs/minuteMs || (len(p.open) > 0 && m <= p.open[len(p.open)-1].minute)) {
			d.fail("open minute %d before the watermark minute %d or out of order", m, p.asOf)
		}
		if d.err != nil {
			return
		}
		// Restored open minutes count in map form; new minutes get gens.
		counts := make(map[uint32]uint64)
		if d.version == snapV5 {
			d.runEntries(func(id uint32, c uint64) {
				p.in.ref(id)
				counts[id] = c
			})
		} else {
			d.counts(p, counts)
		}
		p.open = append(p.open, openMinute{minute: m, counts: counts})
	}
}

func (w *exactSliding) decodeState(d *decoder, p *Partition) {
	if w.b == 1 {
		return // the minute ring holds its buckets
	}
	nb := floorTo(p.asOf-1, w.b)
	w.ring = d.ring(p, w.b, w.start(p.asOf), nb)
	if d.inc != nil {
		d.incOpenBucket(p, w, nb)
		return
	}
	if d.bool() {
		w.hasOpen, w.openStart = true, d.sv()
		if d.err == nil && w.openStart != nb {
			d.fail("%s: open bucket %d, want %d", w.cfg.Name, w.openStart, nb)
		}
		d.counts(p, w.openBucket)
	}
}

func (w *exactCalendar) decodeState(d *decoder, p *Partition) {
	if d.bool() {
		w.opened = true
		w.pstart, w.pend = d.calendarStart(p, w.cfg.Span)
		if d.inc != nil && d.bool() {
			d.inc.derive = append(d.inc.derive, w)
			return
		}
		d.totals(p, w.cfg.Name, w.totals, &w.sum)
	}
}

func (w *sketchSliding) decodeState(d *decoder, p *Partition) {
	if d.inc != nil {
		d.incSketchSliding(p, w)
		return
	}
	n := d.count(5)
	if n > 0 && !p.started {
		d.fail("a partition that saw no event has sketch buckets")
	}
	ws, nb := w.start(p.asOf), floorTo(p.asOf-1, w.b)
	for range n {
		s := d.sv()
		if d.err == nil && (s < ws || s > nb || floorTo(s, w.b) != s || (len(w.buckets) > 0 && s <= w.buckets[len(w.buckets)-1].start)) {
			d.fail("%s: bucket at minute %d outside [%d, %d] or out of order", w.cfg.Name, s, ws, nb)
		}
		sk := d.sketch(p, false)
		if d.err != nil {
			return
		}
		w.buckets = append(w.buckets, sbucket{start: s, sk: sk})
	}
	d.cands(p, &w.cands)
}

func (w *sketchCalendar) decodeState(d *decoder, p *Partition) {
	if d.bool() {
		w.opened = true
		w.pstart, w.pend = d.calendarStart(p, w.cfg.Span)
		if d.inc != nil {
			w.sk, w.j = d.incJournal(p, w.sk, p.cfg.Sketch.Conservative)
			if d.err == nil && w.sk.Total() == 0 {
				d.fail("%s: empty sketch", w.cfg.Name)
			}
		} else if sk := d.sketch(p, p.cfg.Sketch.Conservative); sk != nil {
			w.sk = sk
		}
	}
	d.cands(p, &w.cands)
	if d.err == nil && !w.opened && (len(w.cands.set) > 0 || w.cands.floor != 0) {
		d.fail("%s: candidates of a closed period", w.cfg.Name)
	}
}

func (w *exactAll) decodeState(d *decoder, p *Partition) {
	if d.bool() {
		d.totals(p, w.cfg.Name, w.totals, &w.sum)
	}
}

func (w *sketchAll) decodeState(d *decoder, p *Partition) {
	counted := d.bool()
	if counted {
		if !p.started && d.err == nil {
			d.fail("%s: a partition that saw no event has a sketch", w.cfg.Name)
		}
		if d.inc != nil {
			w.sk, w.j = d.incJournal(p, w.sk, p.cfg.Sketch.Conservative)
			if d.err == nil && w.sk.Total() == 0 {
				d.fail("%s: empty sketch", w.cfg.Name)
			}
		} else if sk := d.sketch(p, p.cfg.Sketch.Conservative); sk != nil {
			w.sk = sk
		}
	}
	d.cands(p, &w.cands)
	if d.err == nil && !counted && (len(w.cands.set) > 0 || w.cands.floor != 0) {
		d.fail("%s: candidates without counts", w.cfg.Name)
	}
}

// closedLists reads the closed calendar lists not yet taken: each of a
// calendar window, for a period that has ended.
func (d *decoder) closedLists(p *Partition) {
	nClosed := d.count(4)
	for range nClosed {
		wi := d.uv()
		if d.err == nil && (wi >= uint64(len(p.wins)) || p.wins[wi].conf().Kind != windowset.Calendar) {
			d.fail("closed list of window %d, not a calendar window", wi)
		}
		start, total := d.sv(), d.uv()
		if d.err != nil {
			return
		}
		wc := p.wins[wi].conf()
		if start < minEventMs/minuteMs || start >= maxEventMs/minuteMs || wc.Span.StartMinute(start) != start || wc.Span.EndMinute(start) > p.asOf {
			d.fail("closed %s list at minute %d is not a closed period", wc.Name, start)
			return
		}
		end := wc.Span.EndMinute(start)
		l := List{Window: wc.Name, Start: minuteTime(start), End: minuteTime(end), AsOf: minuteTime(end),
			Final: true, Exact: wc.Mode == windowset.Exact, Total: total}
		if !l.Exact {
			b := sketch.BoundFor(p.cfg.Sketch.Width, p.cfg.Sketch.Depth, total)
			l.Bound = &b
		}
		n := d.count(2)
		for range n {
			item, c := d.str(), d.uv()
			if d.err != nil {
				return
			}
			l.Items = append(l.Items, topk.Entry{Item: item, Count: c})
		}
		if wc.Mode == windowset.Frequent {
			l.Frequent, l.Bound = true, nil
			l.MaxError, l.Cutoff = d.uv(), d.uv()
			if d.err == nil && (l.Cutoff < l.MaxError || l.MaxError > total) {
				d.fail("closed %s list: cutoff %d under its offset %d, or offset over total %d", wc.Name, l.Cutoff, l.MaxError, total)
			}
		}
		p.closed = append(p.closed, l)
	}
}

// late reads the late-drop counts: strictly increasing (window, start), each a closed
// period of a calendar window, with a count of at least one.
func (d *decoder) late(p *Partition) {
	n := d.count(4)
	prev := lateKey{win: -1}
	for range n {
		wi, start, c, dirty := d.uv(), d.sv(), d.uv(), d.bool()
		if d.err != nil {
			return
		}
		if wi >= uint64(len(p.wins)) || p.wins[wi].conf().Kind != windowset.Calendar {
			d.fail("late-drop count of window %d, not a calendar window", wi)
			return
		}
		wc := p.wins[wi].conf()
		k := lateKey{int(wi), start}
		switch {
		case start < minEventMs/minuteMs || start >= maxEventMs/minuteMs || wc.Span.StartMinute(start) != start || wc.Span.EndMinute(start) > p.asOf:
			d.fail("late-drop count of %s at minute %d, not a closed period", wc.Name, start)
		case compareLateKeys(prev, k) >= 0:
			d.fail("late-drop counts out of order at %s minute %d", wc.Name, start)
		case c == 0 || c > maxSnapCount:
			d.fail("late-drop count %d of %s at minute %d", c, wc.Name, start)
		}
		if d.err != nil {
			return
		}
		p.late[k] = lateCount{n: c, dirty: dirty}
		prev = k
	}
}

// since reads the counts since the boundary (version 3). A partition that
// keeps none reads them and lets them go: since returns them, for the caller
// to release once every item's references are checked. One that keeps them
// but restores an older snapshot (or one written without them) has complete
// counts only from the first day start at or after the snapshot's watermark.
func (d *decoder) since(p *Partition) (drop *since) {
	if d.version >= snapVersion && d.bool() {
		s := p.since
		if s == nil {
			s = &since{openBucket: map[uint32]uint64{}}
			drop = s
		}
		s.decodeState(d, p)
	} else if p.since != nil && p.started {
		p.since.from = ceilDay(p.asOf)
	}
	return drop
}

// decodeState checks the section against the SinceDays it was written under,
// so that a snapshot Restore accepts is canonical; derive then applies the
// configured days (s.days, unless s is one to let go).
func (s *since) decodeState(d *decoder, p *Partition) {
	days := d.uv()
	if d.err == nil && (days < 1 || days > MaxSinceDays) {
		d.fail("since: %d days kept", days)
	}
	cur := s.days
	s.days = int64(days)
	s.boundary, s.from = d.sv(), d.sv()
	if d.err == nil && s.boundary != noMinute && (s.boundary < minEventMs/minuteMs || s.boundary >= maxEventMs/minuteMs || floorTo(s.boundary, dayMinutes) != s.boundary) {
		d.fail("since: boundary %d is not a day start in range", s.boundary)
	}
	if d.err == nil && ((!p.started && s.from != minEventMs/minuteMs) || (p.started && (s.from < s.keep(p.asOf) || s.from > ceilDay(p.asOf)))) {
		d.fail("since: counts complete from minute %d, inconsistent with the watermark", s.from)
	}
	nb := floorTo(p.asOf-1, dayMinutes)
	lo := s.lo(p.asOf)
	if !p.started {
		lo = nb // nothing counted yet
	}
	s.ring = d.ring(p, dayMinutes, lo, max(nb, lo))
	if d.bool() {
		s.hasOpen, s.openStart = true, d.sv()
		if d.err == nil && (s.openStart != nb || nb < lo || !p.started) {
			d.fail("since: open bucket %d, want %d", s.openStart, nb)
		}
		d.counts(p, s.openBucket)
	}
	if cur != 0 {
		s.days = cur
	}
}

// derive rebuilds what snapshots leave out: the exact windows' running
// totals and the sketch windows' running sketches, summed from their
// buckets.
func (p *Partition) derive() error {
	// Each window sums into its own totals or sketch, reading the buckets: on every core.
	var fns []func() error
	for _, w := range p.wins {
		switch w := w.(type) {
		case *exactSliding:
			fns = append(fns, func() error { return w.derive(p) })
		case *sketchSliding:
			fns = append(fns, w.derive)
		}
	}
	if s := p.since; s != nil {
		fns = append(fns, s.derive)
	}
	if err := runAll(fns...); err != nil {
		return err
	}
	if s := p.since; s != nil && p.started {
		s.advance(p) // SinceDays may have shrunk
	}
	return nil
}

// derive sums the window's totals from its buckets: the minutes of the
// partition's minute ring inside the window when the buckets are minutes,
// else its own ring and open bucket.
func (w *exactSliding) derive(p *Partition) error {
	if !p.started {
		return nil
	}
	// Every count is at most maxSnapCount, so checking the sum after
	// each addition keeps every total under 2^63: no wrap-around.
	bad := false
	add := func(id uint32, c uint64) {
		w.totals[id] += c
		w.sum += c
		bad = bad || w.sum > maxSnapCount
	}
	ws := w.start(p.asOf)
	if w.b == 1 {
		w.lo = ws
		for _, f := range p.minutes {
			if f.start >= ws {
				f.each(add)
			}
		}
	} else {
		for _, f := range w.ring {
			f.each(add)
		}
		for id, c := range w.openBucket {
			add(id, c)
		}
	}
	if bad {
		return fmt.Errorf("%w: %s: window total over %d", ErrCorrupt, w.cfg.Name, uint64(maxSnapCount))
	}
	return nil
}

// derive sums the window's running sketch from its bucket sketches.
func (w *sketchSliding) derive() error {
	for _, b := range w.buckets {
		if err := w.running.Merge(b.sk); err != nil {
			return fmt.Errorf("%w: %s: sum of bucket sketches: %v", ErrCorrupt, w.cfg.Name, err)
		}
	}
	return nil
}

// derive sums the totals since the boundary from the day buckets and the
// open day.
func (s *since) derive() error {
	bad := false
	add := func(id uint32, c uint64) {
		s.totals[id] += c
		s.sum += c
		bad = bad || s.sum > maxSnapCount
	}
	for _, f := range s.ring {
		f.each(add)
	}
	for id, c := range s.openBucket {
		add(id, c)
	}
	if bad {
		return fmt.Errorf("%w: since: total over %d", ErrCorrupt, uint64(maxSnapCount))
	}
	return nil
}
