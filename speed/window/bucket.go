package window

import (
	"math"
	"slices"
	"sort"
)

// frozen is a closed bucket of exact counts: the entries of a minute (or
// hour, or day) that will only change again through a late event. A map
// costs about 40 bytes an entry; a sorted array of packed entries costs 8,
// which is what brings the exact hour and day under seed 000's 50 bytes per
// (minute, item) entry.
//
// ents holds handle<<32 | count, sorted by handle, every count >= 1. Late
// events that hit an entry add to it in place while the count fits in 32
// bits; a late event for an item not in the bucket, or one that would
// overflow the 32-bit count, goes to extra instead (rare: building a new
// sorted array per straggler would cost O(n) each). An item's count in the
// bucket is its ents count plus its extra count. Each ents entry and each
// extra key holds one reference on its handle.
type frozen struct {
	start int64 // first minute of the bucket, in Unix minutes
	ents  []uint64
	extra map[uint32]uint64
}

func pack(id uint32, c uint64) uint64 { return uint64(id)<<32 | c }

// add adds c to id's count and reports whether the bucket now holds a new
// reference to id (the caller references the handle).
func (f *frozen) add(id uint32, c uint64) (newRef bool) {
	i, ok := f.find(id)
	if ok {
		if old := f.ents[i] & math.MaxUint32; old+c <= math.MaxUint32 {
			f.ents[i] += c
			return false
		}
	}
	if f.extra == nil {
		f.extra = make(map[uint32]uint64)
	}
	old, had := f.extra[id]
	f.extra[id] = old + c
	return !had
}

// find returns the index of id in ents.
func (f *frozen) find(id uint32) (int, bool) {
	key := uint64(id) << 32
	i := sort.Search(len(f.ents), func(i int) bool { return f.ents[i] >= key })
	return i, i < len(f.ents) && uint32(f.ents[i]>>32) == id
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

// release drops the bucket's references.
func (f *frozen) release(in *interner) {
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
		if c > math.MaxUint32 {
			if f.extra == nil {
				f.extra = make(map[uint32]uint64)
			}
			f.extra[id] = c
			continue
		}
		f.ents = append(f.ents, pack(id, c))
	}
	slices.Sort(f.ents)
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
