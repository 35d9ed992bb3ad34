package merge_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"trending/model"
	"trending/model/topk"
	"trending/speed/frequent"
	"trending/speed/merge"
)

// TestMergeFrequent: partitions' frequent lists (each a summary of the items hashed to it,
// reporting its top m*K) merged by the merger: every served item's views lie in
// [Views, ViewsUpper] of the truth, every item with more views than the list's Cutoff is
// served, and the list validates as a frequent speed list.
func TestMergeFrequent(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 5))
			const k, parts = 5, 4
			m, err := merge.New(mergeConfig(k, parts, openStore(t)))
			if err != nil {
				t.Fatal(err)
			}
			sums := make([]*frequent.Summary, parts)
			for i := range sums {
				sums[i], _ = frequent.New(frequent.Config{Capacity: 3 + r.IntN(10)})
			}
			truth := map[string]uint64{}
			z := rand.NewZipf(r, 1.1, 1, 300)
			for range 5000 {
				n := z.Uint64()
				item := fmt.Sprintf("v%03d", n)
				truth[item]++
				sums[n%parts].AddString(item, 1)
			}
			for i, s := range sums {
				pl := s.List(3 * k)
				p := partial("hour", i, t0)
				p.Exact, p.Frequent, p.MaxError, p.Cutoff, p.Items = false, true, pl.MaxError, pl.Missing, nil
				for _, e := range pl.Entries {
					p.Items = append(p.Items, topk.Entry{Item: e.Item, Count: e.Lower})
				}
				m.Offer(p)
			}
			l, _, ok := m.Build(model.Key{Window: "hour"})
			if !ok || !l.Frequent || l.Exact || len(l.Items) != k {
				t.Fatalf("list %+v", l)
			}
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			served := map[string]bool{}
			for _, it := range l.Items {
				served[it.ItemID] = true
				if c := truth[it.ItemID]; c < it.Views || c > it.ViewsUpper {
					t.Fatalf("%s: %d views, served [%d, %d]", it.ItemID, c, it.Views, it.ViewsUpper)
				}
			}
			for item, c := range truth {
				if c > l.Cutoff && !served[item] {
					t.Fatalf("%s: %d views over the cutoff %d, missing", item, c, l.Cutoff)
				}
			}
		})
	}
}
