// Package topk owns ranking: the total order on (item, count) entries, the bounded heap that
// keeps the K best of a scan, and the merge of per-partition top lists into the global one.
//
// The order is count descending, then item ascending, everywhere: speed workers, the merger,
// the batch layer and tests all rank ties the same way, so two correct computations of a top
// list are byte-for-byte equal and can be compared.
//
// The merge is exact when items are partitioned, each item's whole count living in exactly one
// list: an item in the global top K is beaten by at most K-1 items anywhere, so by at most K-1
// in its own partition, so it is in that partition's top K and reaches the merge
// (docs/requirements.md, "The exact merge"). When one item's count is split over partitions
// this is false, and Merge cannot detect it; partition by item id.
//
// In detail (DESIGN.md's file map has the line): the ranking order (count desc, then item
// asc), a bounded top-K heap, the exact merge of per-partition lists; `scored.go`:
// `Scored` (item, real score: a decayed window's entries), its order and merge, `ScoreKey`
// (a non-negative float's bits order as the float, so the count heap ranks scores)
package topk

import (
	"cmp"
	"slices"
	"strings"
)

// Entry is an item and its count.
type Entry struct {
	Item  string
	Count uint64
}

// Less reports whether a ranks before b: a higher count, or the same count and a smaller
// item (byte-wise). It is a strict total order on distinct entries.
func Less(a, b Entry) bool {
	return a.Count > b.Count || (a.Count == b.Count && a.Item < b.Item)
}

// Compare is Less as a three-way comparison for slices.SortFunc: negative when a ranks
// before b.
func Compare(a, b Entry) int {
	if c := cmp.Compare(b.Count, a.Count); c != 0 {
		return c
	}
	return strings.Compare(a.Item, b.Item)
}

// Sort sorts entries best first.
func Sort(entries []Entry) { slices.SortFunc(entries, Compare) }

// Heap keeps the K best entries offered to it: a min-heap whose root is the worst entry kept,
// so most offers during a scan are rejected by one comparison with the root. It does not
// deduplicate: offer each item at most once per scan (a scan of a count map does). The zero
// value is not usable; call NewHeap. A Heap is not safe for concurrent use.
type Heap struct {
	k int
	e []Entry
}

// NewHeap returns a heap that keeps the k best entries. A k <= 0 gives a heap that keeps
// nothing, so an empty list rather than a panic follows from a zero limit; limits are
// validated where they are configured.
func NewHeap(k int) *Heap {
	return &Heap{k: k, e: make([]Entry, 0, max(0, min(k, 4096)))}
}

// K returns the heap's bound.
func (h *Heap) K() int { return h.k }

// Len returns the number of entries kept, at most K.
func (h *Heap) Len() int { return len(h.e) }

// Full reports whether the heap holds K entries, so that Min is a real floor: an entry that
// does not rank before Min cannot enter.
func (h *Heap) Full() bool { return h.k > 0 && len(h.e) == h.k }

// Offer considers one entry. It costs one comparison when the entry is rejected and
// O(log K) when it is kept, and never allocates once the heap has grown to K.
func (h *Heap) Offer(item string, count uint64) {
	if len(h.e) < h.k {
		h.e = append(h.e, Entry{item, count})
		h.up(len(h.e) - 1)
		return
	}
	if h.k <= 0 {
		return
	}
	r := &h.e[0]
	if count < r.Count || (count == r.Count && item >= r.Item) {
		return
	}
	*r = Entry{item, count}
	h.down(0)
}

// Min returns the worst entry kept: once the heap is Full, the K-th best so far, which is the
// floor a candidate must beat. ok is false when the heap is empty.
func (h *Heap) Min() (e Entry, ok bool) {
	if len(h.e) == 0 {
		return Entry{}, false
	}
	return h.e[0], true
}

// Sorted returns a new slice of the entries kept, best first. The heap is unchanged and may
// go on taking offers.
func (h *Heap) Sorted() []Entry {
	out := slices.Clone(h.e)
	Sort(out)
	return out
}

// Reset empties the heap and keeps its memory, for the next scan.
func (h *Heap) Reset() {
	clear(h.e) // drop the item strings for the GC
	h.e = h.e[:0]
}

// worse reports whether e[i] ranks after e[j]: the heap order, worst at the root.
func (h *Heap) worse(i, j int) bool { return Less(h.e[j], h.e[i]) }

func (h *Heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(i, p) {
			return
		}
		h.e[i], h.e[p] = h.e[p], h.e[i]
		i = p
	}
}

func (h *Heap) down(i int) {
	n := len(h.e)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.worse(c+1, c) {
			c++
		}
		if !h.worse(c, i) {
			return
		}
		h.e[i], h.e[c] = h.e[c], h.e[i]
		i = c
	}
}

// TopK returns the k best entries of a count map, best first; nil when k <= 0.
func TopK(k int, counts map[string]uint64) []Entry {
	if k <= 0 {
		return nil
	}
	h := NewHeap(min(k, len(counts)))
	for item, c := range counts {
		h.Offer(item, c)
	}
	return h.Sorted()
}
