package topk

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func benchItems(n int) []Entry {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Entry, n)
	for i := range out {
		// Zipf-like counts, as views are: most items small, a few huge.
		out[i] = Entry{Item: fmt.Sprintf("video-%08d", i), Count: uint64(1e9 / (1 + rng.Float64()*float64(n)))}
	}
	return out
}

// BenchmarkOffer scans 1M items into a heap per op, as a speed worker does each minute per
// window. "random" is the usual case (most offers rejected at the root); "ascending" is the
// worst case, every offer kept.
func BenchmarkOffer(b *testing.B) {
	items := benchItems(1_000_000)
	asc := make([]Entry, len(items))
	for i := range asc {
		asc[i] = Entry{items[i].Item, uint64(i)}
	}
	for _, k := range []int{100, 1000} {
		for _, in := range []struct {
			name    string
			entries []Entry
		}{{"random", items}, {"ascending", asc}} {
			b.Run(fmt.Sprintf("k=%d/%s/1M", k, in.name), func(b *testing.B) {
				b.ReportAllocs()
				h := NewHeap(k)
				for b.Loop() {
					h.Reset()
					for _, e := range in.entries {
						h.Offer(e.Item, e.Count)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.entries)), "ns/offer")
			})
		}
	}
}

// BenchmarkMerge merges 32 partitions' top 300 (m=3 times K=100) into the top 100, as the
// merger does each minute per window; "sort" is the sort-everything baseline in the same run.
func BenchmarkMerge(b *testing.B) {
	items := benchItems(32 * 300)
	lists := make([][]Entry, 32)
	for i, e := range items {
		lists[i%32] = append(lists[i%32], e)
	}
	for _, l := range lists {
		Sort(l)
	}
	b.Run("merge/32x300/k=100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Merge(100, lists...)
		}
	})
	b.Run("sort/32x300/k=100", func(b *testing.B) {
		b.ReportAllocs()
		all := make([]Entry, 0, len(items))
		for b.Loop() {
			all = all[:0]
			for _, l := range lists {
				all = append(all, l...)
			}
			Sort(all)
			_ = all[:100]
		}
	})
}
