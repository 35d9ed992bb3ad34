package merge_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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

// TestMergeFrequentSalted: a salted item's shares are summed, its lower bound from what the
// partitions report (a listed count, else a Salted one), its upper bound from the most each
// partition's share can be (listed: count plus the offset; else the partition's cutoff);
// left out, the list's cutoff covers its upper bound.
func TestMergeFrequentSalted(t *testing.T) {
	p0 := partial("hour", 0, t0, e("S", 50), e("A", 40))
	p0.Exact, p0.Frequent, p0.MaxError, p0.Cutoff = false, true, 5, 5
	p0.Salted = []model.SaltedCount{{Item: "S", Count: 45}}
	p1 := partial("hour", 1, t0, e("B", 30))
	p1.Exact, p1.Frequent, p1.MaxError, p1.Cutoff = false, true, 4, 34
	p1.Salted = []model.SaltedCount{{Item: "S", Count: 20}}
	m, _ := merge.New(mergeConfig(2, 2, openStore(t)))
	m.Offer(p0)
	m.Offer(p1)
	l, _, _ := m.Build(model.Key{Window: "hour"})
	if len(l.Items) != 2 || l.Items[0].ItemID != "S" || l.Items[0].Views != 70 || l.Items[0].ViewsUpper != 89 || l.Items[1].ItemID != "A" || l.Cutoff != 45 {
		t.Fatalf("list %+v, cutoff %d", l.Items, l.Cutoff)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}

	// S small, left out: the cutoff covers its upper bound, 1+5 on partition 0 and partition
	// 1's cutoff 104.
	p0 = partial("hour", 0, t0.Add(time.Minute), e("A", 40), e("S", 1))
	p0.Exact, p0.Frequent, p0.MaxError, p0.Cutoff = false, true, 5, 5
	p0.Salted = []model.SaltedCount{{Item: "S", Count: 1}}
	p1 = partial("hour", 1, t0.Add(time.Minute), e("B", 100))
	p1.Exact, p1.Frequent, p1.MaxError, p1.Cutoff = false, true, 4, 104
	p1.Salted = []model.SaltedCount{{Item: "S", Count: 1}}
	m, _ = merge.New(mergeConfig(1, 2, openStore(t)))
	m.Offer(p0)
	m.Offer(p1)
	l, _, _ = m.Build(model.Key{Window: "hour"})
	if len(l.Items) != 1 || l.Items[0].ItemID != "B" || l.Cutoff != 110 {
		t.Fatalf("list %+v, cutoff %d: want B and the cutoff 110 covering S", l.Items, l.Cutoff)
	}
}
