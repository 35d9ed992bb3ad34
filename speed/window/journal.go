package window

import (
	"cmp"
	"slices"

	"trending/speed/sketch"
)

// journal records what reached a calendar or all-time sketch since its base, the sketch as
// some earlier incremental checkpoint stored it, so that a checkpoint can store the base's
// name and the journal instead of the whole sketch, which changes every minute. Conservative
// update depends on the order of updates, so the journal keeps them in order: a closed
// minute's packed entries (which the minute ring keeps, in the order the sketch took them)
// and single adds. Replaying it onto the base gives the same cells.
//
// The journal can only name minutes the minute ring still holds: when its oldest minute
// would leave the ring it is dropped (invalid), and the next checkpoint stores the whole
// sketch as the new base. A checkpoint does that on its own a little earlier (rebaseSlack),
// so that a base is written about once per minute-ring length, not every minute.
//
// The journal records every update while the partition keeps a minute ring, even while no
// base is known (after a restore from a whole snapshot, or once dropped): a checkpoint that
// stores the whole sketch as the new base counts the updates it includes, and the updates
// after it, until the store confirms, must still be there.
type journal struct {
	valid bool   // a base is known: the sketch is base plus ops
	base  string // the stored piece holding the base; "" for an empty base
	ops   []jop
	epoch uint64 // bumped whenever ops lose a prefix, so a late Stored is ignored
}

// jop is one update: a closed minute's packed entries (id unused), or one add of c to
// item id (minute == noMinute), which holds a reference on id.
type jop struct {
	minute int64
	id     uint32
	c      uint64
}

// rebaseSlack is how many minutes before the journal's oldest minute leaves the minute ring
// a checkpoint stores a new base instead.
func (p *Partition) rebaseSlack() int64 { return min(10, p.keep/2) }

func newJournal(p *Partition) journal { return journal{valid: p.keep > 0} }

// minute records a closed minute as addFrozen adds it: the packed entries, then the side
// entries (counts over 32 bits) by hash.
func (j *journal) minute(p *Partition, f *frozen) {
	if p.keep == 0 {
		return // nothing to replay minutes from: every checkpoint stores the sketch
	}
	if len(j.ops) > 0 && j.oldest() < p.asOf-p.keep {
		j.drop(p)
	}
	j.ops = append(j.ops, jop{minute: f.start})
	if len(f.extra) > 0 {
		xs := make([]hashEnt, 0, len(f.extra)) // v holds the handle
		for id := range f.extra {
			xs = append(xs, hashEnt{p.hash(id), uint64(id)})
		}
		slices.SortFunc(xs, func(a, b hashEnt) int { return cmp.Compare(a.h, b.h) })
		for _, x := range xs {
			j.add(p, uint32(x.v), f.extra[uint32(x.v)])
		}
	}
}

// add records one add of c to id.
func (j *journal) add(p *Partition, id uint32, c uint64) {
	if p.keep == 0 {
		return
	}
	p.in.ref(id)
	j.ops = append(j.ops, jop{minute: noMinute, id: id, c: c})
}

// oldest returns the first minute the journal names, or the largest minute if none.
func (j *journal) oldest() int64 {
	for _, o := range j.ops {
		if o.minute != noMinute {
			return o.minute
		}
	}
	return 1<<63 - 1
}

// release drops the references of ops.
func releaseOps(p *Partition, ops []jop) {
	for _, o := range ops {
		if o.minute == noMinute {
			p.in.unref(o.id)
		}
	}
}

// drop makes the journal invalid until a checkpoint stores a new base.
func (j *journal) drop(p *Partition) {
	releaseOps(p, j.ops)
	j.ops, j.valid, j.base = nil, false, ""
	j.epoch++
}

// reset starts the journal afresh for an emptied sketch.
func (j *journal) reset(p *Partition) {
	releaseOps(p, j.ops)
	j.ops, j.valid, j.base = nil, p.keep > 0, ""
	j.epoch++
}

// stored records that a checkpoint stored the sketch as it was after the first n ops as
// piece name, unless the journal changed base since the capture.
func (j *journal) stored(p *Partition, name string, epoch uint64, n int) {
	if j.epoch != epoch || n > len(j.ops) {
		return
	}
	releaseOps(p, j.ops[:n])
	j.ops = slices.Clone(j.ops[n:])
	j.base, j.valid = name, true
	j.epoch++
}

// incJournal writes a calendar or all-time sketch: 1 then the base (0: empty, else a piece
// reference) and the journal, when the journal is usable; else 2 and the whole sketch as a
// new piece, which becomes the base once stored.
func (e *encoder) incJournal(j *journal, sk *sketch.Sketch) {
	p := e.inc.p
	if j.valid && p.keep > 0 && j.oldest() >= p.asOf-p.keep+p.rebaseSlack() {
		e.uv(1)
		if j.base == "" {
			e.uv(0)
		} else {
			e.inc.pending = append(e.inc.pending, pendingPiece{name: j.base})
			e.uv(uint64(len(e.inc.pending)))
		}
		e.uv(uint64(len(j.ops)))
		for _, o := range j.ops {
			if o.minute != noMinute {
				e.uv(0)
				e.sv(o.minute)
				continue
			}
			e.uv(1 + uint64(e.ix(o.id)))
			e.uv(o.c)
		}
		return
	}
	e.uv(2)
	e.inc.pending = append(e.inc.pending, pendingPiece{sk: sk.Clone(), j: j, jepoch: j.epoch, jops: len(j.ops)})
	e.uv(uint64(len(e.inc.pending)))
}

// incJournal reads what encoder.incJournal wrote into sk (a fresh, empty sketch of the
// window) and returns the sketch and its journal.
func (d *decoder) incJournal(p *Partition, sk *sketch.Sketch, conservative bool) (*sketch.Sketch, journal) {
	j := newJournal(p)
	switch d.uv() {
	case 1:
		if base, name := d.incSketchPieceOpt(p, conservative); base != nil {
			sk, j.base = base, name
		}
		n := d.count(2)
		var hs, ns []uint64
		for range n {
			tag := d.uv()
			if d.err != nil {
				return sk, j
			}
			if tag == 0 {
				m := d.sv()
				i, ok := p.minutes.find(m)
				if d.err == nil && !ok {
					d.fail("journal names minute %d, not in the minute ring", m)
				}
				if d.err != nil {
					return sk, j
				}
				f := p.minutes[i]
				hs, ns = hs[:0], ns[:0]
				for _, x := range f.ents {
					hs, ns = append(hs, p.hash(uint32(x>>32))), append(ns, x&0xffffffff)
				}
				addMany(sk, hs, ns)
				j.ops = append(j.ops, jop{minute: m})
				continue
			}
			idx, c := tag-1, d.uv()
			if d.err == nil && (idx >= uint64(d.n) || c == 0 || c > maxSnapCount) {
				d.fail("journal add of item %d, count %d", idx, c)
			}
			if d.err != nil {
				return sk, j
			}
			sk.AddHash(p.hash(uint32(idx)), c)
			p.in.ref(uint32(idx))
			j.ops = append(j.ops, jop{minute: noMinute, id: uint32(idx), c: c})
		}
		if d.err == nil && (!j.valid || j.oldest() < p.asOf-p.keep) {
			d.fail("a journal the minute ring does not cover")
		}
	case 2:
		base, name := d.incSketchPiece(p, conservative)
		if base != nil {
			sk = base
			if j.valid {
				j.base = name
			}
		}
	default:
		d.fail("sketch journal flag")
	}
	return sk, j
}

// incSketchPieceOpt reads a sketch piece reference that may be 0 (none).
func (d *decoder) incSketchPieceOpt(p *Partition, conservative bool) (*sketch.Sketch, string) {
	if d.err != nil || d.off >= len(d.b) || d.b[d.off] != 0 {
		return d.incSketchPiece(p, conservative)
	}
	d.off++
	return nil, ""
}
