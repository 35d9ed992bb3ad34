package topk

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func newRand(t testing.TB) (*rand.Rand, uint64) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>1)), seed
}

// bruteTop is the reference: sort everything, take k.
func bruteTop(k int, entries []Entry) []Entry {
	if k <= 0 {
		return nil
	}
	all := slices.Clone(entries)
	slices.SortFunc(all, func(a, b Entry) int {
		switch {
		case Less(a, b):
			return -1
		case Less(b, a):
			return 1
		}
		return 0
	})
	return all[:min(k, len(all))]
}

// randomEntries returns n distinct items with counts drawn from [0, maxCount), so small
// maxCount gives many ties.
func randomEntries(rng *rand.Rand, n int, maxCount uint64) []Entry {
	out := make([]Entry, n)
	for i := range out {
		// Unique names (the index is a suffix), random order: items are partitioned, so a
		// name must never repeat. The old rng*1000+i form collided once i passed 1000.
		out[i] = Entry{Item: fmt.Sprintf("v%06d-%04d", rng.IntN(1_000_000), i), Count: rng.Uint64N(maxCount)}
	}
	return out
}

func TestLess(t *testing.T) {
	cases := []struct {
		a, b Entry
		want bool
	}{
		{Entry{"a", 5}, Entry{"b", 4}, true},
		{Entry{"b", 5}, Entry{"a", 4}, true},
		{Entry{"a", 4}, Entry{"b", 5}, false},
		{Entry{"a", 5}, Entry{"b", 5}, true},
		{Entry{"b", 5}, Entry{"a", 5}, false},
		{Entry{"a", 5}, Entry{"a", 5}, false},
		{Entry{"A", 5}, Entry{"a", 5}, true}, // byte order, not locale
		{Entry{"", 0}, Entry{"a", 0}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v<%v", c.a, c.b), func(t *testing.T) {
			if got := Less(c.a, c.b); got != c.want {
				t.Fatalf("Less = %v, want %v", got, c.want)
			}
			if got := Compare(c.a, c.b) < 0; got != c.want {
				t.Fatalf("Compare < 0 = %v, want %v", got, c.want)
			}
			if c.a != c.b && Less(c.a, c.b) == Less(c.b, c.a) {
				t.Fatalf("not a total order")
			}
		})
	}
}

// TestHeapMatchesSort is the heap's property test: for random inputs with many ties and
// every interesting k, Sorted equals sort-and-take-k, and Min is the k-th best.
func TestHeapMatchesSort(t *testing.T) {
	rng, _ := newRand(t)
	for iter := 0; iter < 300; iter++ {
		n := rng.IntN(300)
		entries := randomEntries(rng, n, []uint64{3, 50, 1 << 40}[iter%3])
		for _, k := range []int{-1, 0, 1, 2, 10, n / 2, n, n + 5} {
			h := NewHeap(k)
			for _, e := range entries {
				h.Offer(e.Item, e.Count)
			}
			want := bruteTop(k, entries)
			got := h.Sorted()
			if len(want) == 0 && len(got) == 0 {
				if _, ok := h.Min(); ok || h.Len() != 0 || h.Full() && k > 0 {
					t.Fatalf("k=%d n=%d: empty heap reports entries", k, n)
				}
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("k=%d n=%d: Sorted = %v, want %v", k, n, got, want)
			}
			if m, ok := h.Min(); !ok || m != want[len(want)-1] {
				t.Fatalf("k=%d n=%d: Min = %v, %v, want %v", k, n, m, ok, want[len(want)-1])
			}
			if h.Full() != (n >= k) {
				t.Fatalf("k=%d n=%d: Full = %v", k, n, h.Full())
			}
		}
	}
}

func TestHeapSortedKeepsHeap(t *testing.T) {
	h := NewHeap(3)
	for i, c := range []uint64{5, 1, 9, 7} {
		h.Offer(fmt.Sprint("i", i), c)
	}
	first := h.Sorted()
	if again := h.Sorted(); !slices.Equal(first, again) {
		t.Fatalf("Sorted changed the heap: %v then %v", first, again)
	}
	h.Offer("late", 8)
	want := []Entry{{"i2", 9}, {"late", 8}, {"i3", 7}}
	if got := h.Sorted(); !slices.Equal(got, want) {
		t.Fatalf("after Sorted and Offer: %v, want %v", got, want)
	}
	first[0].Count = 0 // the returned slice is the caller's
	if got := h.Sorted(); !slices.Equal(got, want) {
		t.Fatalf("Sorted shares memory with the heap")
	}
}

func TestHeapReset(t *testing.T) {
	h := NewHeap(2)
	h.Offer("a", 10)
	h.Offer("b", 20)
	h.Reset()
	if h.Len() != 0 || h.Full() {
		t.Fatalf("Reset left %d entries", h.Len())
	}
	if _, ok := h.Min(); ok {
		t.Fatalf("Min after Reset")
	}
	h.Offer("c", 1)
	if got := h.Sorted(); !slices.Equal(got, []Entry{{"c", 1}}) {
		t.Fatalf("after Reset: %v", got)
	}
}

func TestHeapOfferDoesNotAllocate(t *testing.T) {
	h := NewHeap(100)
	for i := range 100 {
		h.Offer(fmt.Sprint(i), uint64(1000+i))
	}
	items := []string{"x", "y"}
	rejected := testing.AllocsPerRun(1000, func() { h.Offer(items[0], 5) })
	i := uint64(2000)
	accepted := testing.AllocsPerRun(1000, func() { i++; h.Offer(items[1], i) })
	if rejected != 0 || accepted != 0 {
		t.Fatalf("allocs per Offer: rejected %v, accepted %v; want 0", rejected, accepted)
	}
}

func TestTopK(t *testing.T) {
	counts := map[string]uint64{"a": 3, "b": 5, "c": 5, "d": 1}
	cases := []struct {
		k    int
		want []Entry
	}{
		{-3, nil},
		{0, nil},
		{1, []Entry{{"b", 5}}},
		{3, []Entry{{"b", 5}, {"c", 5}, {"a", 3}}},
		{10, []Entry{{"b", 5}, {"c", 5}, {"a", 3}, {"d", 1}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint("k=", c.k), func(t *testing.T) {
			if got := TopK(c.k, counts); !slices.Equal(got, c.want) {
				t.Fatalf("TopK = %v, want %v", got, c.want)
			}
		})
	}
	if got := TopK(5, nil); len(got) != 0 {
		t.Fatalf("TopK of nothing = %v", got)
	}
}
