package topk

import (
	"fmt"
	"hash/maphash"
	"slices"
	"testing"
)

// TestMergeExactWhenPartitioned is the property behind the speed layer's merger (seed 003,
// deep dive 2): when every item lives in exactly one partition, merging each partition's top
// k gives exactly the top k of all items, ties included.
func TestMergeExactWhenPartitioned(t *testing.T) {
	rng, _ := newRand(t)
	seed := maphash.MakeSeed()
	for iter := 0; iter < 500; iter++ {
		n := rng.IntN(2000)
		all := randomEntries(rng, n, []uint64{2, 20, 1000, 1 << 50}[iter%4])
		parts := 1 + rng.IntN(40)
		byHash := iter%2 == 0 // by hash of the item, as Kafka does, or at random
		lists := make([][]Entry, parts)
		for _, e := range all {
			p := rng.IntN(parts)
			if byHash {
				p = int(maphash.String(seed, e.Item) % uint64(parts))
			}
			lists[p] = append(lists[p], e)
		}
		for _, k := range []int{1, 5, 100, n + 1} {
			tops := make([][]Entry, parts)
			for p, l := range lists {
				h := NewHeap(k)
				for _, e := range l {
					h.Offer(e.Item, e.Count)
				}
				tops[p] = h.Sorted()
			}
			got := Merge(k, tops...)
			want := bruteTop(k, all)
			if !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
				t.Fatalf("iter %d n=%d parts=%d k=%d:\nMerge = %v\nwant    %v", iter, n, parts, k, got, want)
			}
		}
	}
}

// TestMergeNotExactWhenSplit documents the precondition with seed 003's counterexample: X's 80
// views split 40/40 over two partitions rank third in each, so X never reaches the merge.
func TestMergeNotExactWhenSplit(t *testing.T) {
	p1 := []Entry{{"A", 60}, {"B", 50}, {"X", 40}}
	p2 := []Entry{{"C", 70}, {"D", 45}, {"X", 40}}
	top2 := func(l []Entry) []Entry { return bruteTop(2, l) }
	got := Merge(2, top2(p1), top2(p2))
	if want := []Entry{{"C", 70}, {"A", 60}}; !slices.Equal(got, want) {
		t.Fatalf("Merge = %v, want %v (the wrong answer the precondition exists to avoid)", got, want)
	}
}

func TestMergeDuplicatesTakeMax(t *testing.T) {
	cases := []struct {
		name  string
		k     int
		lists [][]Entry
		want  []Entry
		dups  []string
	}{
		{"stale and fresh report", 2, [][]Entry{{{"a", 10}, {"b", 5}}, {{"a", 12}, {"c", 7}}},
			[]Entry{{"a", 12}, {"c", 7}}, []string{"a"}},
		{"lower duplicate ignored", 3, [][]Entry{{{"a", 10}}, {{"a", 3}, {"b", 4}}},
			[]Entry{{"a", 10}, {"b", 4}}, []string{"a"}},
		{"duplicate does not take two slots", 2, [][]Entry{{{"a", 10}, {"b", 1}}, {{"a", 9}}},
			[]Entry{{"a", 10}, {"b", 1}}, []string{"a"}},
		{"duplicate in one list", 1, [][]Entry{{{"a", 1}, {"a", 9}}, {{"b", 5}}},
			[]Entry{{"a", 9}}, []string{"a"}},
		{"evicted then back higher", 1, [][]Entry{{{"a", 1}}, {{"b", 5}}, {{"a", 8}}},
			[]Entry{{"a", 8}}, []string{"a"}},
		{"no duplicates", 5, [][]Entry{{{"a", 1}}, {{"b", 2}}}, []Entry{{"b", 2}, {"a", 1}}, nil},
		{"k zero", 0, [][]Entry{{{"a", 1}}}, nil, nil},
		{"k negative", -1, [][]Entry{{{"a", 1}}}, nil, nil},
		{"no lists", 3, nil, []Entry{}, nil},
		{"empty lists", 3, [][]Entry{{}, nil}, []Entry{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Merge(c.k, c.lists...)
			if !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
				t.Fatalf("Merge = %#v, want %#v", got, c.want)
			}
			if d := Duplicates(c.lists...); !slices.Equal(d, c.dups) {
				t.Fatalf("Duplicates = %v, want %v", d, c.dups)
			}
		})
	}
}

// TestMergeDuplicatesProperty checks the max rule against a brute force on random lists
// where items repeat within and across lists, in any order.
func TestMergeDuplicatesProperty(t *testing.T) {
	rng, _ := newRand(t)
	for iter := 0; iter < 2000; iter++ {
		lists := make([][]Entry, 1+rng.IntN(6))
		best := map[string]uint64{}
		for i := range lists {
			for range rng.IntN(12) {
				e := Entry{fmt.Sprint("i", rng.IntN(15)), rng.Uint64N(10)}
				lists[i] = append(lists[i], e)
				best[e.Item] = max(best[e.Item], e.Count)
			}
		}
		k := rng.IntN(10)
		got := Merge(k, lists...)
		want := TopK(k, best)
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d lists=%v:\nMerge = %v\nwant    %v", k, lists, got, want)
		}
	}
}
