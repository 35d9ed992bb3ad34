package sketch

import "testing"

// TestHashGolden pins the key hash. These values are XXH64 as computed by the
// reference implementation (cross-checked against github.com/cespare/xxhash/v2
// on 200,000 random inputs when this file was written). If this test fails,
// the cells keys land in have changed: every checkpointed sketch is unreadable
// as counts, so the format version must change (docs/format/sketch.md).
func TestHashGolden(t *testing.T) {
	tests := []struct {
		key  string
		seed uint64
		want uint64
	}{
		{"", 0, 0xef46db3751d8e999},
		{"", 1, 0xd5afba1336a3be4b},
		{"", 0x9e3779b97f4a7c15, 0xc4349fc93c010000},
		{"a", 0, 0xd24ec4f1a98c6e5b},
		{"a", 1, 0xdec2bc81c3cd46c6},
		{"abc", 0, 0x44bc2cf5ad770999},
		{"abc", 1, 0xbea9ca8199328908},
		{"abc", 0x9e3779b97f4a7c15, 0x2ed0f59d6b43ac8b},
		{"video:42", 0, 0xaab7b292aa3e696e},
		{"video:42", 1, 0x0363c656d5979422},
		{"dQw4w9WgXcQ", 0, 0x914f4969781d043a},
		{"dQw4w9WgXcQ", 0x9e3779b97f4a7c15, 0x94fc37b3fe2e6850},
		{"0123456789abcdef0123456789abcdef0123456789", 0, 0xa76190c3acf08a1c},
		{"0123456789abcdef0123456789abcdef0123456789", 1, 0x2b8d7720869b31a6},
	}
	for _, tt := range tests {
		if got := xxh64(tt.key, tt.seed); got != tt.want {
			t.Errorf("XXH64(%q, seed %#x) = %#016x, want %#016x", tt.key, tt.seed, got, tt.want)
		}
		if got := xxh64([]byte(tt.key), tt.seed); got != tt.want {
			t.Errorf("XXH64([]byte(%q), seed %#x) = %#016x, want %#016x", tt.key, tt.seed, got, tt.want)
		}
	}
}

// TestColumnsGolden pins the double hashing: the test vector of
// docs/format/sketch.md. Key "video:42", seed 0, width 2^18, depth 5:
// h = 0xaab7b292aa3e696e, h1 = 0xaa3e696e, h2 = 0xaab7b292, h3 = 0x5abfc99d.
func TestColumnsGolden(t *testing.T) {
	s := mustNew(t, Config{Width: 1 << 18, Depth: 5})
	s.AddString("video:42", 7)
	want := []int{158062, 124317, 62726, 235433, 118150}
	for row, col := range want {
		if got := s.counters[row*s.width+col]; got != 7 {
			t.Errorf("row %d column %d = %d, want 7", row, col, got)
		}
	}
	var nonzero int
	for _, v := range s.counters {
		if v != 0 {
			nonzero++
		}
	}
	if nonzero != len(want) {
		t.Errorf("%d nonzero cells, want %d", nonzero, len(want))
	}
}

// TestNoFullRowCollisions guards the quadratic term of the column walk: keys
// whose h1 and h2 agree modulo the width collide in every row under plain
// double hashing (so this test fails for h1 + i*h2); with h3 only about
// 2/width of such pairs do.
func TestNoFullRowCollisions(t *testing.T) {
	const width, depth = 64, 5
	s := mustNew(t, Config{Width: width, Depth: depth})
	cols := func(h uint64) [depth]uint32 {
		var c [depth]uint32
		col, step, step2 := probe(h)
		for i := range c {
			c[i] = col % width
			col += step
			step += step2
		}
		return c
	}
	byPair := map[[2]uint32][]uint64{}
	pairs, full := 0, 0
	for id := range uint64(20000) {
		h := s.Hash(keyOf(id))
		k := [2]uint32{uint32(h) % width, uint32(h>>32) % width}
		for _, other := range byPair[k] {
			pairs++
			if cols(h) == cols(other) {
				full++
			}
		}
		byPair[k] = append(byPair[k], h)
	}
	t.Logf("%d pairs agree on h1 and h2 mod %d; %d of them collide in all %d rows", pairs, width, full, depth)
	if pairs < 1000 {
		t.Fatalf("only %d pairs: the test lost its power", pairs)
	}
	if float64(full) > 0.1*float64(pairs) {
		t.Fatalf("%d of %d pairs collide in every row: the rows are not independent enough", full, pairs)
	}
}
