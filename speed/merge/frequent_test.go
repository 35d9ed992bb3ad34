package merge_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"trending/model"
	"trending/model/moderation"
	"trending/model/topk"
	"trending/speed/frequent"
	"trending/speed/merge"
)

// TestMergeFrequent: partitions' frequent lists (each a summary of the items hashed to it,
// and of shares of two salted items spread over every partition, reporting its top m*K and
// the salted items' lower bounds) merged by one merger and by two levels of mergers: every
// served item's views lie in [Views, ViewsUpper] of the truth, every item with more views
// than the list's Cutoff is served, and the list validates as a frequent speed list.
func TestMergeFrequent(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 5))
			const k = 5
			parts := 2 + r.IntN(6)
			sums := make([]*frequent.Summary, parts)
			for i := range sums {
				sums[i], _ = frequent.New(frequent.Config{Capacity: 3 + r.IntN(10)})
			}
			truth := map[string]uint64{}
			z := rand.NewZipf(r, 1.1, 1, 300)
			hot := []string{"HOT-a", "HOT-b"}
			for range 5000 {
				n := z.Uint64()
				item, part := fmt.Sprintf("v%03d", n), int(n)%parts
				if n < 2 && r.IntN(2) == 0 { // a salted item: its events on any partition
					item, part = hot[n], r.IntN(parts)
				}
				truth[item]++
				sums[part].AddString(item, 1)
			}
			var ps []model.Partial
			for i, s := range sums {
				pl := s.List(3 * k)
				p := partial("hour", i, t0)
				p.Exact, p.Frequent, p.MaxError, p.Cutoff, p.Items = false, true, pl.MaxError, pl.Missing, nil
				for _, e := range pl.Entries {
					p.Items = append(p.Items, topk.Entry{Item: e.Item, Count: e.Lower})
				}
				for _, h := range hot {
					if c := s.Lower(h); c > 0 {
						p.Salted = append(p.Salted, model.SaltedCount{Item: h, Count: c})
					}
				}
				ps = append(ps, p)
			}
			one, err := merge.New(mergeConfig(k, parts, openStore(t)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				one.Offer(p)
			}
			l, _, ok := one.Build(model.Key{Window: "hour"})
			if !ok {
				t.Fatal("no list")
			}
			checkFrequentList(t, "one level", l, k, truth)
			groups := 1 + r.IntN(parts)
			top, err := merge.New(mergeConfig(k, parts, openStore(t)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range twoLevels(t, k, groups, ps, t0) {
				top.Offer(p)
			}
			l2, _, _ := top.Build(model.Key{Window: "hour"})
			checkFrequentList(t, fmt.Sprintf("two levels, %d groups", groups), l2, k, truth)
		})
	}
}

func checkFrequentList(t *testing.T, what string, l model.List, k int, truth map[string]uint64) {
	t.Helper()
	if !l.Frequent || l.Exact || len(l.Items) != k {
		t.Fatalf("%s: list %+v", what, l)
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	served := map[string]bool{}
	for _, it := range l.Items {
		served[it.ItemID] = true
		if c := truth[it.ItemID]; c < it.Views || c > it.ViewsUpper {
			t.Fatalf("%s: %s: %d views, served [%d, %d]", what, it.ItemID, c, it.Views, it.ViewsUpper)
		}
	}
	for item, c := range truth {
		if c > l.Cutoff && !served[item] {
			t.Fatalf("%s: %s: %d views over the cutoff %d, missing", what, item, c, l.Cutoff)
		}
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

// TestMergeFrequentModeration: a frequent list drops the items moderation removed and fills
// up to K with the next; its guarantee, of the items not removed, still holds: every such
// item of the truth over the cutoff is listed, and each listed item's bounds hold.
func TestMergeFrequentModeration(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	const k, parts = 5, 3
	sums := make([]*frequent.Summary, parts)
	for i := range sums {
		sums[i], _ = frequent.New(frequent.Config{Capacity: 8})
	}
	truth := map[string]uint64{}
	z := rand.NewZipf(r, 1.2, 1, 200)
	for range 4000 {
		n := z.Uint64()
		item := fmt.Sprintf("v%03d", n)
		truth[item]++
		sums[n%parts].AddString(item, 1)
	}
	removed := moderation.NewSet("v000", "v002")
	cfg := mergeConfig(k, parts, openStore(t))
	cfg.Removed = func() *moderation.Set { return removed }
	m, err := merge.New(cfg)
	if err != nil {
		t.Fatal(err)
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
	l, _, _ := m.Build(model.Key{Window: "hour"})
	kept := map[string]uint64{}
	for item, n := range truth {
		if !removed.Has(item) {
			kept[item] = n
		}
	}
	for _, it := range l.Items {
		if removed.Has(it.ItemID) {
			t.Fatalf("removed %s listed", it.ItemID)
		}
	}
	checkFrequentList(t, "moderated", l, k, kept)

	// The merge reads K plus the removed items' count, here none of them ranked: the items
	// read and cut raise the cutoff to their upper bounds (Y may have 49+10 views).
	two := moderation.NewSet("R1", "R2")
	cfg = mergeConfig(1, 1, openStore(t))
	cfg.Removed = func() *moderation.Set { return two }
	m, _ = merge.New(cfg)
	p := partial("hour", 0, t0, e("X", 50), e("Y", 49), e("Z", 48))
	p.Exact, p.Frequent, p.MaxError, p.Cutoff = false, true, 10, 10
	m.Offer(p)
	l, _, _ = m.Build(model.Key{Window: "hour"})
	if len(l.Items) != 1 || l.Items[0].ItemID != "X" || l.Cutoff != 59 {
		t.Fatalf("list %+v cutoff %d: want X and the cutoff 59", l.Items, l.Cutoff)
	}
}
