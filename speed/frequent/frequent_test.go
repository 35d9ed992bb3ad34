package frequent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// zipfStream returns n (item, count) events over items V1..Vitems drawn by
// Zipf(s), counts 1..maxCount, and the exact counts.
func zipfStream(r *rand.Rand, n, items int, s float64, maxCount int) ([]string, []uint64, map[string]uint64) {
	z := rand.NewZipf(r, s, 1, uint64(items-1))
	keys := make([]string, n)
	counts := make([]uint64, n)
	truth := map[string]uint64{}
	for i := range keys {
		keys[i] = fmt.Sprintf("V%d", z.Uint64()+1)
		counts[i] = uint64(1 + r.IntN(maxCount))
		truth[keys[i]] += counts[i]
	}
	return keys, counts, truth
}

// checkBounds fails t unless every item's truth lies in [Lower, Upper], every
// item above MaxError has a counter, the offset is within N/(m+1), and N is
// the truth's total.
func checkBounds(t *testing.T, what string, s *Summary, truth map[string]uint64) {
	t.Helper()
	var total, kept uint64
	for item, f := range truth {
		total += f
		if lo, up := s.Lower(item), s.Upper(item); lo > f || up < f {
			t.Fatalf("%s: %s true %d outside [%d, %d]", what, item, f, lo, up)
		}
		if _, ok := s.counter(item); f > s.MaxError() && !ok {
			t.Fatalf("%s: %s has %d views, over MaxError %d, and no counter", what, item, f, s.MaxError())
		}
	}
	for i, item := range s.items {
		c := s.vals[i]
		if truth[item] == 0 {
			t.Fatalf("%s: counter %d for %s, never added", what, c, item)
		}
		kept += c
	}
	if s.Total() != total {
		t.Fatalf("%s: total %d, truth %d", what, s.Total(), total)
	}
	if s.MaxError()*uint64(s.Capacity()+1) > total-kept {
		t.Fatalf("%s: offset %d x (m+1) = %d over N-C = %d", what, s.MaxError(), s.MaxError()*uint64(s.Capacity()+1), total-kept)
	}
	if s.MaxError() > AprioriBound(s.Capacity(), total) {
		t.Fatalf("%s: offset %d over N/(m+1) = %d", what, s.MaxError(), AprioriBound(s.Capacity(), total))
	}
}

func mustNew(t testing.TB, m int) *Summary {
	t.Helper()
	s, err := New(Config{Capacity: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAddBounds(t *testing.T) {
	for _, tc := range []struct {
		m, n, items int
		s           float64
		maxCount    int
	}{
		{1, 500, 10, 1.1, 1},
		{4, 2000, 100, 1.1, 5},
		{64, 50000, 10000, 1.05, 3},
		{64, 50000, 100000, 1.5, 1},
		{500, 100000, 1000000, 1.1, 20},
	} {
		t.Run(fmt.Sprintf("m=%d/n=%d/s=%v", tc.m, tc.n, tc.s), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.n)))
			keys, counts, truth := zipfStream(r, tc.n, tc.items, tc.s, tc.maxCount)
			s := mustNew(t, tc.m)
			for i, k := range keys {
				if i%2 == 0 {
					s.AddString(k, counts[i])
				} else {
					s.Add([]byte(k), counts[i])
				}
			}
			checkBounds(t, "added", s, truth)
			s.Compact()
			if s.Len() > tc.m {
				t.Fatalf("Compact left %d counters, capacity %d", s.Len(), tc.m)
			}
			checkBounds(t, "compacted", s, truth)
		})
	}
}

// TestMergeBoundsAnyOrder is the case ClickHouse's topK gets wrong: minute
// buckets (and partitions) merged in random orders and tree shapes, and
// every item's truth stays inside its bounds, every item above the bound is
// present, and the offset stays within N/(m+1) of the merged total.
func TestMergeBoundsAnyOrder(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 11))
		m := []int{1, 3, 16, 100}[seed%4]
		nb := 2 + r.IntN(40)
		truth := map[string]uint64{}
		type ev struct {
			k string
			n uint64
		}
		var streams [][]ev
		for b := range nb {
			keys, counts, _ := zipfStream(r, 200+r.IntN(2000), 50+r.IntN(5000), 1.01+r.Float64(), 1+r.IntN(10))
			var st []ev
			for i, k := range keys {
				st = append(st, ev{k, counts[i]})
			}
			// A per-bucket hot item: heavy in a few buckets, absent from others.
			if r.IntN(3) == 0 {
				st = append(st, ev{fmt.Sprintf("H%d", b%4), uint64(1 + r.IntN(3000))})
			}
			r.Shuffle(len(st), func(i, j int) { st[i], st[j] = st[j], st[i] })
			for _, e := range st {
				truth[e.k] += e.n
			}
			streams = append(streams, st)
		}
		t.Run(fmt.Sprintf("seed=%d/m=%d/buckets=%d", seed, m, nb), func(t *testing.T) {
			build := func() []*Summary {
				var out []*Summary
				for _, st := range streams {
					s := mustNew(t, m)
					for _, e := range st {
						s.AddString(e.k, e.n)
					}
					if r.IntN(2) == 0 {
						s.Compact()
					}
					out = append(out, s)
				}
				return out
			}
			// Order 1: left to right. Order 2: shuffled. Order 3: random
			// tree (pairs merged until one is left).
			left := build()
			acc := left[0]
			for _, s := range left[1:] {
				if err := acc.Merge(s); err != nil {
					t.Fatal(err)
				}
			}
			checkBounds(t, "left fold", acc, truth)
			acc.Compact()
			checkBounds(t, "left fold compacted", acc, truth)

			sh := build()
			r.Shuffle(len(sh), func(i, j int) { sh[i], sh[j] = sh[j], sh[i] })
			acc2 := mustNew(t, m)
			for _, s := range sh {
				if err := acc2.Merge(s); err != nil {
					t.Fatal(err)
				}
				if r.IntN(3) == 0 {
					acc2.Compact()
				}
			}
			checkBounds(t, "shuffled", acc2, truth)

			tree := build()
			for len(tree) > 1 {
				i := r.IntN(len(tree))
				j := r.IntN(len(tree) - 1)
				if j >= i {
					j++
				}
				if err := tree[i].Merge(tree[j]); err != nil {
					t.Fatal(err)
				}
				tree[i].Compact()
				tree = slices.Delete(tree, j, j+1)
			}
			checkBounds(t, "random tree", tree[0], truth)
		})
	}
}

// TestMergeBeatsPerBucketTop is the shape of ClickHouse issue #73507: an item
// that is never in any bucket's top list but is the window's leader. Merging
// per-bucket top lists loses it; merging summaries does not.
func TestMergeBeatsPerBucketTop(t *testing.T) {
	const m = 4
	acc := mustNew(t, m)
	truth := map[string]uint64{}
	for b := range 24 {
		s := mustNew(t, m)
		// Every hour a different local star with 100 views, and X with 60.
		star := fmt.Sprintf("star%d", b)
		s.AddString(star, 100)
		s.AddString("X", 60)
		truth[star] += 100
		truth["X"] += 60
		if err := acc.Merge(s); err != nil {
			t.Fatal(err)
		}
	}
	acc.Compact()
	checkBounds(t, "day", acc, truth)
	if top := acc.Top(1); len(top) != 1 || top[0].Item != "X" {
		t.Fatalf("top of the day = %+v, want X (1440 views against 100 each)", top)
	}
}

func TestDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys, counts, _ := zipfStream(r, 20000, 5000, 1.1, 4)
	var encs [][]byte
	for range 3 {
		s := mustNew(t, 50)
		for i, k := range keys {
			s.AddString(k, counts[i])
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		encs = append(encs, b)
	}
	for _, b := range encs[1:] {
		if string(b) != string(encs[0]) {
			t.Fatal("the same stream gave different summaries")
		}
	}
}

func TestTopOrderAndFrequent(t *testing.T) {
	s := mustNew(t, 2)
	for _, e := range []struct {
		k string
		n uint64
	}{{"b", 10}, {"a", 10}, {"c", 3}, {"d", 1}, {"e", 7}} {
		s.AddString(e.k, e.n)
	}
	// 5 items over 2m = 4: compacted by the 3rd largest (7): a=3, b=3, D=7.
	if got := s.Top(0); !slices.Equal(got, []Entry{{"a", 3, 10}, {"b", 3, 10}}) {
		t.Fatalf("Top = %+v", got)
	}
	if s.MaxError() != 7 {
		t.Fatalf("MaxError = %d, want 7", s.MaxError())
	}
	if got := s.Frequent(9, NoFalseNegatives); len(got) != 2 {
		t.Fatalf("NoFalseNegatives(9) = %+v", got)
	}
	if got := s.Frequent(3, NoFalsePositives); len(got) != 0 {
		t.Fatalf("NoFalsePositives(3) = %+v", got)
	}
}

func TestKthLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n := 1 + r.IntN(60)
		vals := make([]uint64, n)
		for i := range vals {
			vals[i] = uint64(r.IntN(8))
		}
		k := 1 + r.IntN(n)
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		if got, want := kthLargest(vals, k), sorted[n-k]; got != want {
			t.Fatalf("kthLargest(%v, %d) = %d, want %d", sorted, k, got, want)
		}
	}
}

func TestConfigAndMergeErrors(t *testing.T) {
	for _, c := range []int{0, -1, MaxCapacity + 1} {
		if _, err := New(Config{Capacity: c}); !errors.Is(err, ErrConfig) {
			t.Errorf("capacity %d: %v", c, err)
		}
	}
	a, b := mustNew(t, 4), mustNew(t, 5)
	if err := a.Merge(b); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("merge of capacities 4 and 5: %v", err)
	}
	if err := a.Merge(nil); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("merge of nil: %v", err)
	}
}

func TestCapacityFor(t *testing.T) {
	for _, tc := range []struct {
		total, maxErr uint64
		want          int
	}{
		{1000, 10, 100}, {1000, 1000, 1}, {1000, 5000, 1}, {6_600_000, 1000, 6600}, {1 << 40, 1, MaxCapacity + 1},
	} {
		got := CapacityFor(tc.total, tc.maxErr)
		if got != tc.want {
			t.Errorf("CapacityFor(%d, %d) = %d, want %d", tc.total, tc.maxErr, got, tc.want)
		}
		if got <= MaxCapacity && AprioriBound(got, tc.total) > tc.maxErr {
			t.Errorf("CapacityFor(%d, %d) = %d: bound %d", tc.total, tc.maxErr, got, AprioriBound(got, tc.total))
		}
	}
}
