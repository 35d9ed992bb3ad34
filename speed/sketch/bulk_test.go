package sketch

import (
	"math"
	"math/rand/v2"
	"testing"
)

// oneByOne adds the batch as AddHash, in order: the reference AddHashes must
// equal cell for cell.
func oneByOne(s *Sketch, hs, ns []uint64) {
	for i, h := range hs {
		s.AddHash(h, ns[i])
	}
}

func TestAddHashesIsAddHash(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, cfg := range []Config{
		{Width: 1, Depth: 1},
		{Width: 64, Depth: 1},
		{Width: 64, Depth: 5},
		{Width: 1024, Depth: 4, Seed: 7},
		{Width: 1 << 12, Depth: MaxDepth},
		{Width: 1 << 16, Depth: 5},
		{Width: 1 << 17, Depth: 3}, // the largest rows added row by row
		{Width: 1 << 18, Depth: 5}, // added in blocks
		{Width: 1 << 19, Depth: 1},
		{Width: 64, Depth: 5, Conservative: true},
		{Width: 1024, Depth: 7, Conservative: true, Seed: 3},
	} {
		one, bulk := mustNew(t, cfg), mustNew(t, cfg)
		for round := range 20 {
			n := r.IntN(3000)
			if round == 0 {
				n = 0
			}
			hs, ns := make([]uint64, n), make([]uint64, n)
			for i := range hs {
				// Real key hashes, and some repeats: a key twice in one
				// batch (restored minutes never have that, late batches might).
				hs[i] = one.Hash(keyOf(r.Uint64N(5000)))
				ns[i] = 1 + r.Uint64N(1<<uint(r.IntN(33)))
			}
			oneByOne(one, hs, ns)
			bulk.AddHashes(hs, ns)
			if !one.Equal(bulk) {
				t.Fatalf("%+v round %d (%d keys): AddHashes differs from AddHash one by one", cfg, round, n)
			}
		}
	}
}

// TestAddHashesSaturates: a batch that would pass Total's 2^64-1 is cut on
// the same key, with the same cells, as one by one.
func TestAddHashesSaturates(t *testing.T) {
	for _, cons := range []bool{false, true} {
		cfg := Config{Width: 256, Depth: 3, Conservative: cons}
		one, bulk := mustNew(t, cfg), mustNew(t, cfg)
		hs := []uint64{one.Hash(keyOf(1)), one.Hash(keyOf(2)), one.Hash(keyOf(3)), one.Hash(keyOf(4))}
		for _, ns := range [][]uint64{
			{math.MaxUint64 / 3, 5, 9, 1},
			{math.MaxUint64 / 2, math.MaxUint64 / 2, 3, 2},
			{math.MaxUint64, 1, 1, 1},
		} {
			oneByOne(one, hs, ns)
			bulk.AddHashes(hs, ns)
			if !one.Equal(bulk) {
				t.Fatalf("conservative=%t, counts %v: AddHashes differs from AddHash one by one", cons, ns)
			}
		}
		if one.Total() != math.MaxUint64 {
			t.Fatalf("total %d, want saturated", one.Total())
		}
	}
}

func TestAddHashesLengths(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("AddHashes with len(ns) != len(hs) did not panic")
		}
	}()
	mustNew(t, Config{Width: 8, Depth: 2}).AddHashes([]uint64{1, 2}, []uint64{1})
}

func TestAddHashesZeroAllocs(t *testing.T) {
	s := mustNew(t, Config{Width: 1024, Depth: 5})
	hs, ns := make([]uint64, 100), make([]uint64, 100)
	for i := range hs {
		hs[i], ns[i] = s.Hash(keyOf(uint64(i))), 1
	}
	if a := testing.AllocsPerRun(100, func() { s.AddHashes(hs, ns) }); a != 0 {
		t.Fatalf("AddHashes: %v allocs, want 0", a)
	}
}
