package window

import (
	"math"
	"slices"
	"sort"
)

// frozen is a closed bucket of exact counts: the entries of a minute (or
// hour, or day) that will only change again through a late event. A map
// costs about 40 bytes an entry; an array of packed entries costs 8, which
// is what brings the exact hour and day under the 50 bytes per (minute,
// item) entry the capacity arithmetic assumes (docs/requirements.md).
//
// ents holds handle<<32 | count, every count >= 1, in no particular order:
// nothing looks an item up in a closed bucket (sums and expiry scan it), so
// it is never sorted. A late event, and a count that does not fit in 32
// bits, go to extra instead: an item's count in the bucket is its ents
// count plus its extra count. Late events are rare, so extra is usually
// nil. Each ents entry and each extra key holds one reference on its
// handle.
type frozen struct {
	start int64 // first minute of the bucket, in Unix minutes
	ents  []uint64
	extra map[uint32]uint64
	// piece is the name of the incremental-checkpoint piece that holds ents (which never
	// change once the bucket is built), "" until a checkpoint stored one.
	piece string
	// pins counts the incremental snapshots encoding ents outside the partition's lock:
	// while pinned, release keeps the handles referenced (in.deferred), so their names
	// stay put.
	pins int
}

func pack(id uint32, c uint64) uint64 { return uint64(id)<<32 | c }

// add adds c to id's count and reports whether the bucket now holds a new
// reference to id (the caller references the handle).
func (f *frozen) add(id uint32, c uint64) (newRef bool) {
	if f.extra == nil {
		f.extra = make(map[uint32]uint64)
	}
	old, had := f.extra[id]
	f.extra[id] = old + c
	return !had
}

// put appends a fresh entry, sending a count over 32 bits to extra.
func (f *frozen) put(id uint32, c uint64) {
	if c > math.MaxUint32 {
		f.add(id, c)
		return
	}
	f.ents = append(f.ents, pack(id, c))
}

// each calls fn for every entry; an item may appear twice (ents and extra).
func (f *frozen) each(fn func(id uint32, c uint64)) {
	for _, e := range f.ents {
		fn(uint32(e>>32), e&math.MaxUint32)
	}
	for id, c := range f.extra {
		fn(id, c)
	}
}

// release drops the bucket's references, or, while a snapshot encodes it, leaves that to
// unpin.
func (f *frozen) release(in *interner) {
	if f.pins > 0 {
		in.deferred = append(in.deferred, f)
		return
	}
	for _, e := range f.ents {
		in.unref(uint32(e >> 32))
	}
	for id := range f.extra {
		in.unref(id)
	}
	f.ents, f.extra = nil, nil
}

func (f *frozen) entries() int { return len(f.ents) + len(f.extra) }

// bytes estimates the bucket's memory.
func (f *frozen) bytes() int64 { return int64(cap(f.ents))*8 + int64(len(f.extra))*24 + 48 }

// freezeCounts builds a frozen bucket from a map of handle counts, taking
// over the map's references (one per key).
func freezeCounts(start int64, m map[uint32]uint64) *frozen {
	f := &frozen{start: start, ents: make([]uint64, 0, len(m))}
	for id, c := range m {
		f.put(id, c)
	}
	return f
}

// ring is a list of frozen buckets sorted by start.
type ring []*frozen

// find returns the index of the bucket starting at start.
func (r ring) find(start int64) (int, bool) {
	i := sort.Search(len(r), func(i int) bool { return r[i].start >= start })
	return i, i < len(r) && r[i].start == start
}

// at returns the bucket starting at start, inserting an empty one if none.
func (r *ring) at(start int64) *frozen {
	i, ok := r.find(start)
	if ok {
		return (*r)[i]
	}
	f := &frozen{start: start}
	*r = slices.Insert(*r, i, f)
	return f
}

// popFront removes the first n buckets, without keeping them reachable.
func (r *ring) popFront(n int) {
	clear((*r)[:n])
	*r = (*r)[n:]
	if len(*r) == 0 {
		*r = nil
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorTo(a, b int64) int64 { return floorDiv(a, b) * b }
