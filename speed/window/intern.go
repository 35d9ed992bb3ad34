package window

import "strings"

// interner maps item ids to dense uint32 handles for one partition, so that
// every bucket stores 4-byte handles instead of strings and every exact
// window keeps its running totals in a dense slice indexed by handle. An
// entry is reference-counted by the structures holding it (one reference per
// bucket entry, per candidate-set member, per nonzero calendar total), and
// freed when the last one lets go; freed handles are reused, so the handle
// space stays as large as the items alive in the partition, not as all the
// items ever seen.
//
// Handles are an in-memory detail: snapshots name items by string, in
// sorted order, so the same state encodes to the same bytes whatever the
// handles are.
type interner struct {
	ids     map[string]uint32
	strs    []string // handle -> item; "" for a free handle
	refs    []uint32 // handle -> references
	free    []uint32 // free handles, reused last-in first-out
	dense   []*[]uint64
	dense32 []*[]uint32
}

func newInterner() *interner {
	return &interner{ids: make(map[string]uint32)}
}

// register adds a dense per-handle slice that must grow with the handle
// space.
func (in *interner) register(d *[]uint64) {
	*d = make([]uint64, len(in.strs), cap(in.strs))
	in.dense = append(in.dense, d)
}

// register32 is register for a []uint32.
func (in *interner) register32(d *[]uint32) {
	*d = make([]uint32, len(in.strs), cap(in.strs))
	in.dense32 = append(in.dense32, d)
}

// intern returns the handle of s, allocating one with no references if s is
// new. The caller must reference it (or call releaseIfUnused).
func (in *interner) intern(s string) uint32 { return intern(in, s) }

// intern is the interner's lookup for a string or for bytes still in a
// message buffer. The map index converts without allocating; only a new
// item is copied, so the key never points into the caller's buffer.
func intern[S string | []byte](in *interner, item S) uint32 {
	if id, ok := in.ids[string(item)]; ok {
		return id
	}
	var s string
	switch v := any(item).(type) {
	case string:
		s = strings.Clone(v) // the caller's string may point into a large message buffer
	case []byte:
		s = string(v)
	}
	var id uint32
	if n := len(in.free); n > 0 {
		id = in.free[n-1]
		in.free = in.free[:n-1]
		in.strs[id] = s
	} else {
		id = uint32(len(in.strs))
		in.strs = append(in.strs, s)
		in.refs = append(in.refs, 0)
		for _, d := range in.dense {
			*d = append(*d, 0)
		}
		for _, d := range in.dense32 {
			*d = append(*d, 0)
		}
	}
	in.ids[s] = id
	return id
}

func (in *interner) ref(id uint32) { in.refs[id]++ }

// unref drops one reference and frees the handle when none is left.
func (in *interner) unref(id uint32) {
	r := in.refs[id]
	if r == 0 {
		panic("BUG: window: unref of an unreferenced item handle")
	}
	in.refs[id] = r - 1
	if r == 1 {
		in.drop(id)
	}
}

// releaseIfUnused frees id if nothing references it: an item that was
// interned and then not kept anywhere.
func (in *interner) releaseIfUnused(id uint32) {
	if in.refs[id] == 0 {
		in.drop(id)
	}
}

func (in *interner) drop(id uint32) {
	delete(in.ids, in.strs[id])
	in.strs[id] = ""
	in.free = append(in.free, id)
}

// live returns the number of items alive.
func (in *interner) live() int { return len(in.ids) }

// bytes estimates the interner's memory: the map (a 24-byte slot for a
// 16-byte key and a 4-byte value, at Go's typical 3/4 load, plus control
// bytes: ~40 bytes an item, measured), the handle slices and the string
// bytes rounded up to the allocator's 8-byte granularity.
func (in *interner) bytes() int64 {
	var sb int64
	for _, s := range in.strs {
		sb += int64(len(s)+7) &^ 7
	}
	n := int64(len(in.ids))
	return n*40 + int64(cap(in.strs))*16 + int64(cap(in.refs))*4 + int64(cap(in.free))*4 + sb
}
