package frequent

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
)

// TestMergeListsGuarantee splits a stream over partitions by key, builds
// each partition's summary from buckets merged in random order, merges the
// partitions' top lists, and checks the served guarantee against the exact
// counts: every listed item's truth lies in [lower, upper], and every item
// with more than Cutoff views is listed.
func TestMergeListsGuarantee(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 5))
		parts, m, k := 1+r.IntN(8), []int{8, 40, 200}[seed%3], 1+r.IntN(30)
		n := 1 + r.IntN(3*k) // a partition may report fewer than k
		truth := map[string]uint64{}
		sums := make([]*Summary, parts)
		for p := range sums {
			sums[p] = mustNew(t, m)
		}
		for range 2 + r.IntN(20) { // buckets
			keys, counts, _ := zipfStream(r, 100+r.IntN(3000), 100+r.IntN(20000), 1.01+r.Float64(), 1+r.IntN(5))
			bucket := make([]*Summary, parts)
			for p := range bucket {
				bucket[p] = mustNew(t, m)
			}
			for i, key := range keys {
				h := fnv.New32a()
				h.Write([]byte(key))
				bucket[int(h.Sum32()%uint32(parts))].AddString(key, counts[i])
				truth[key] += counts[i]
			}
			for p := range bucket {
				if err := sums[p].Merge(bucket[p]); err != nil {
					t.Fatal(err)
				}
				sums[p].Compact()
			}
		}
		pls := make([]PartList, parts)
		for p, s := range sums {
			pls[p] = s.List(n)
		}
		got := MergeLists(k, pls...)
		t.Run(fmt.Sprintf("seed=%d/parts=%d/m=%d/k=%d", seed, parts, m, k), func(t *testing.T) {
			listed := map[string]bool{}
			for _, e := range got.Entries {
				listed[e.Item] = true
				if f := truth[e.Item]; f < e.Lower || f > e.Upper {
					t.Fatalf("%s: true %d outside [%d, %d]", e.Item, f, e.Lower, e.Upper)
				}
			}
			for item, f := range truth {
				if f > got.Cutoff && !listed[item] {
					t.Fatalf("%s has %d views, over the cutoff %d, and is not listed", item, f, got.Cutoff)
				}
			}
			if len(got.Entries) > k {
				t.Fatalf("%d entries for k %d", len(got.Entries), k)
			}
		})
	}
}

// TestMergeListsShortReport: a partition that reports fewer items than it
// holds bounds the rest by its lowest reported counter, not by its offset.
func TestMergeListsShortReport(t *testing.T) {
	s := mustNew(t, 4)
	for i, n := range []uint64{50, 40, 30, 20} {
		s.AddString(fmt.Sprintf("V%d", i+1), n)
	}
	got := MergeLists(5, s.List(2))
	if len(got.Entries) != 2 || got.Cutoff != 40 {
		t.Fatalf("merged %+v, want V1, V2 and cutoff 40 (V3 has 30 views and is not listed)", got)
	}
}
