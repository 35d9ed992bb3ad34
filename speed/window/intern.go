package window

import (
	"hash/maphash"
	"strings"
)

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
//
// Ids of up to shortMax bytes (most real ones: an 11-byte video id, a
// hashtag) are looked up in short, a table whose slots hold the bytes
// inline: a lookup is usually one cache miss, where a map[string] follows
// the key's pointer to compare it, a second or third miss, which on a busy
// machine was the largest part of an event's cost. Longer ids go to ids.
type interner struct {
	short   shortTable
	ids     map[string]uint32
	strs    []string // handle -> item; "" for a free handle
	refs    []uint32 // handle -> references
	free    []uint32 // free handles, reused last-in first-out
	dense   []*[]uint64
	dense32 []*[]uint32
	// deferred are released buckets still pinned by a snapshot being encoded.
	deferred []*frozen
}

func newInterner() *interner {
	return &interner{short: newShortTable(), ids: make(map[string]uint32)}
}

// reserve makes room for n items without growing again: the short table (at its 3/4
// load), the handle slices and every registered dense slice. Restore calls it before it
// interns a snapshot's items, so that growing (rehashing, copying) is done once.
func (in *interner) reserve(n int) {
	if n <= cap(in.strs) {
		return
	}
	for len(in.short.slots)*3 < n*4 {
		in.short.grow()
	}
	grow := func(s []uint64) []uint64 { return append(make([]uint64, 0, n), s...) }
	in.strs = append(make([]string, 0, n), in.strs...)
	in.refs = append(make([]uint32, 0, n), in.refs...)
	for _, d := range in.dense {
		*d = grow(*d)
	}
	for _, d := range in.dense32 {
		*d = append(make([]uint32, 0, n), (*d)...)
	}
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
	short := len(item) <= shortMax
	var k shortKey
	var h uint64
	if short {
		k = makeShortKey(item)
		h = in.short.hash(&k)
		if id, ok := in.short.get(&k, h); ok {
			return id
		}
	} else if id, ok := in.ids[string(item)]; ok {
		return id
	}
	var s string
	switch v := any(item).(type) {
	case string:
		s = strings.Clone(v) // the caller's string may point into a large message buffer
	case []byte:
		s = string(v)
	}
	id := in.newHandle(s)
	if short {
		in.short.put(&k, h, id)
	} else {
		in.ids[s] = id
	}
	return id
}

// internShortKey is intern for an item of at most shortMax bytes, given as its key and the
// key's hash (in.short.hash; only the low 32 bits are used): Restore hashes a snapshot's
// items on every core, then interns them in the order of their home slots, so that the
// table is read and filled front to back instead of at random (restore_intern.go).
func (in *interner) internShortKey(k *shortKey, h uint64) uint32 {
	if id, ok := in.short.get(k, h); ok {
		return id
	}
	id := in.newHandle(string(k[:k[shortMax]]))
	in.short.put(k, h, id)
	return id
}

// newHandle allocates a handle (a free one first) named s, with no references.
func (in *interner) newHandle(s string) uint32 {
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
	return id
}

// lookup returns the handle of an item already interned, without interning it.
func (in *interner) lookup(item string) (uint32, bool) {
	if len(item) <= shortMax {
		k := makeShortKey(item)
		return in.short.get(&k, in.short.hash(&k))
	}
	id, ok := in.ids[item]
	return id, ok
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
	if s := in.strs[id]; len(s) <= shortMax {
		k := makeShortKey(s)
		in.short.remove(&k, in.short.hash(&k))
	} else {
		delete(in.ids, s)
	}
	in.strs[id] = ""
	in.free = append(in.free, id)
}

// live returns the number of items alive.
func (in *interner) live() int { return in.short.n + len(in.ids) }

// bytes estimates the interner's memory: the short table's slots, the map
// of longer ids (a 24-byte slot for a 16-byte key and a 4-byte value, at
// Go's typical 3/4 load, plus control bytes: ~40 bytes an item, measured),
// the handle slices and the string bytes rounded up to the allocator's
// 8-byte granularity.
func (in *interner) bytes() int64 {
	var sb int64
	for _, s := range in.strs {
		sb += int64(len(s)+7) &^ 7
	}
	n := int64(len(in.ids))
	return n*40 + int64(len(in.short.slots))*shortSlotBytes + int64(cap(in.strs))*16 + int64(cap(in.refs))*4 + int64(cap(in.free))*4 + sb
}

// shortMax is the longest item id kept in the short table.
const shortMax = 15

// shortKey is an id of at most shortMax bytes, zero-padded, with its length
// in the last byte, so that ids differing only by trailing zero bytes
// differ.
type shortKey [shortMax + 1]byte

func makeShortKey[S string | []byte](item S) shortKey {
	var k shortKey
	copy(k[:shortMax], item)
	k[shortMax] = byte(len(item))
	return k
}

// shortTable is an open-addressing hash table (linear probing, backward-
// shift deletion, no tombstones) from shortKey to handle. Each slot keeps
// its hash, so growing and deleting never rehash a key. The hash is
// maphash with a random seed per table, as Go's maps are, so crafted ids
// cannot force long probe runs.
type shortTable struct {
	slots []shortSlot // a power of two long
	n     int         // slots in use
	seed  maphash.Seed
}

type shortSlot struct {
	k   shortKey
	id1 uint32 // handle + 1; 0 marks an empty slot
	h   uint32 // the key's hash (low bits), which picks its home slot
}

// shortSlotBytes is the size of a shortSlot.
const shortSlotBytes = 24

func newShortTable() shortTable {
	return shortTable{slots: make([]shortSlot, 64), seed: maphash.MakeSeed()}
}

func (t *shortTable) hash(k *shortKey) uint64 { return maphash.Bytes(t.seed, k[:]) }

// get returns the handle of k, whose hash is h.
func (t *shortTable) get(k *shortKey, h uint64) (uint32, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := uint32(h) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id1 == 0 {
			return 0, false
		}
		if s.h == uint32(h) && s.k == *k {
			return s.id1 - 1, true
		}
	}
}

// put adds k, which must not be in the table, with handle id. The table
// grows at a load of 3/4.
func (t *shortTable) put(k *shortKey, h uint64, id uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
	}
	t.place(shortSlot{k: *k, id1: id + 1, h: uint32(h)})
	t.n++
}

func (t *shortTable) place(s shortSlot) {
	mask := uint32(len(t.slots) - 1)
	i := s.h & mask
	for t.slots[i].id1 != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *shortTable) grow() {
	old := t.slots
	t.slots = make([]shortSlot, 2*len(old))
	for _, s := range old {
		if s.id1 != 0 {
			t.place(s)
		}
	}
}

// remove deletes k, whose hash is h; it must be in the table. Linear
// probing needs no tombstone: every later slot of the probe run whose home
// is not between the hole and itself moves back into the hole.
func (t *shortTable) remove(k *shortKey, h uint64) {
	mask := uint32(len(t.slots) - 1)
	i := uint32(h) & mask
	for t.slots[i].id1 == 0 || t.slots[i].h != uint32(h) || t.slots[i].k != *k {
		if t.slots[i].id1 == 0 {
			panic("BUG: window: removing an item id the interner does not hold")
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].id1 != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j]: then i is before its home.
		if home := t.slots[j].h & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = shortSlot{}
	t.n--
}
