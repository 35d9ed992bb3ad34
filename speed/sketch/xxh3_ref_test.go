package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	zeebo "github.com/zeebo/xxh3"
)

// refSeeds are the seeds the reference comparison runs under: zero (the
// default Config.Seed, which takes the unseeded secret on the long path),
// small, golden-ratio and all-ones values, and a few random ones.
var refSeeds = []uint64{0, 1, 2, 0x9e3779b97f4a7c15, 0xffffffffffffffff, 0x8000000000000000}

// TestHashMatchesReference checks our XXH3 against github.com/zeebo/xxh3,
// an independent implementation of the same specification, as string and
// as []byte: every length 0..300 (the 0, 1-3, 4-8, 9-16, 17-128, 129-240
// and over-240 paths and every boundary between them), the lengths around
// the 1024-byte block and the 64-byte stripe, random bytes, several seeds.
// The golden vectors of TestHashGolden are checked against it as well.
func TestHashMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 0x78786833))
	seeds := append([]uint64(nil), refSeeds...)
	for range 4 {
		seeds = append(seeds, rng.Uint64())
	}
	lengths := make([]int, 0, 320)
	for n := 0; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 319, 320, 321, 1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 5000)
	checked := 0
	for _, n := range lengths {
		for trial := range 8 {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			if trial == 0 {
				for i := range p {
					p[i] = 0
				}
			}
			for _, seed := range seeds {
				want := zeebo.HashSeed(p, seed)
				if got := xxh3(p, seed); got != want {
					t.Fatalf("len %d seed %#x: ours([]byte) %#016x, zeebo/xxh3 %#016x", n, seed, got, want)
				}
				if got := xxh3(string(p), seed); got != want {
					t.Fatalf("len %d seed %#x: ours(string) %#016x, zeebo/xxh3 %#016x", n, seed, got, want)
				}
				if got := zeebo.HashStringSeed(string(p), seed); got != want {
					t.Fatalf("len %d seed %#x: zeebo/xxh3 string %#016x, []byte %#016x", n, seed, got, want)
				}
				checked++
			}
		}
	}
	for _, g := range hashGolden() {
		if got := zeebo.HashStringSeed(g.key, g.seed); got != g.want {
			t.Errorf("zeebo/xxh3(%.8q, seed %#x) = %#016x, golden %#016x", g.key, g.seed, got, g.want)
		}
	}
	t.Logf("%d inputs x seeds identical", checked)
	if got := hashDigest(zeebo.HashSeed); got != hashDigestWant {
		t.Errorf("zeebo/xxh3 digest %#016x, want %#016x", got, hashDigestWant)
	}
}

// hashDigestWant pins XXH3 over every length 0..2100 (each path and its
// boundaries, the 64-byte stripe and the 1024-byte block), five seeds: the
// outputs folded into one value by hashDigest. Computed when ours and
// zeebo/xxh3 agreed on all of TestHashMatchesReference's inputs.
const hashDigestWant uint64 = 0xb6cb17077714fa10

func hashDigest(h func([]byte, uint64) uint64) uint64 {
	p := make([]byte, 2100)
	for i := range p {
		p[i] = byte(i*131 + i>>8)
	}
	var d uint64
	for n := range len(p) + 1 {
		for _, seed := range []uint64{0, 1, 0x9e3779b97f4a7c15, 0xffffffffffffffff, uint64(n)} {
			d = (d ^ h(p[:n], seed)) * 0x9E3779B185EBCA87
		}
	}
	return d
}

func TestHashDigest(t *testing.T) {
	if got := hashDigest(xxh3[[]byte]); got != hashDigestWant {
		t.Errorf("ours digest %#016x, want %#016x", got, hashDigestWant)
	}
}

// benchInputs returns 1024 base-62 keys of n bytes, or for n = 0 item-id-like
// keys of mixed 5 to 15 bytes (so the 4-8 and 9-16 paths alternate as they
// do on real ids).
func benchInputs(n int) []string {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	out := make([]string, 1024)
	for i := range out {
		l := n
		if n == 0 {
			l = 5 + rng.IntN(11)
		}
		b := make([]byte, l)
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		out[i] = string(b)
	}
	return out
}

// BenchmarkHashImpl hashes the same inputs with ours and zeebo/xxh3, side by
// side per size and type (ids = 5-15 byte item ids; 0 means that mix).
func BenchmarkHashImpl(b *testing.B) {
	const seed = 0x9e3779b97f4a7c15
	for _, n := range []int{0, 11, 32, 100, 1000} {
		strs := benchInputs(n)
		bs := make([][]byte, len(strs))
		for i, s := range strs {
			bs[i] = []byte(s)
		}
		size := "ids5-15"
		if n > 0 {
			size = fmt.Sprint(n)
		}
		b.Run(size+"/bytes/ours", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += xxh3(bs[i&1023], seed)
			}
		})
		b.Run(size+"/bytes/zeebo", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += zeebo.HashSeed(bs[i&1023], seed)
			}
		})
		b.Run(size+"/string/ours", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += xxh3(strs[i&1023], seed)
			}
		})
		b.Run(size+"/string/zeebo", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += zeebo.HashStringSeed(strs[i&1023], seed)
			}
		})
	}
}

// BenchmarkAddImpl is BenchmarkAdd at 2^18 x 5 with each hash: Add/AddString
// as they are, against AddHash of zeebo/xxh3's hash of the same keys.
func BenchmarkAddImpl(b *testing.B) {
	const w = 1 << 18
	b.Run("bytes/ours", func(b *testing.B) {
		s := mustNew(b, Config{Width: w, Depth: benchDepth})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.Add(keys[i&(benchKeys-1)], 1)
		}
	})
	b.Run("bytes/zeebo", func(b *testing.B) {
		s := mustNew(b, Config{Width: w, Depth: benchDepth})
		seed := s.Config().Seed
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.AddHash(zeebo.HashSeed(keys[i&(benchKeys-1)], seed), 1)
		}
	})
	b.Run("string/ours", func(b *testing.B) {
		s := mustNew(b, Config{Width: w, Depth: benchDepth})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.AddString(strKeys[i&(benchKeys-1)], 1)
		}
	})
	b.Run("string/zeebo", func(b *testing.B) {
		s := mustNew(b, Config{Width: w, Depth: benchDepth})
		seed := s.Config().Seed
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			s.AddHash(zeebo.HashStringSeed(strKeys[i&(benchKeys-1)], seed), 1)
		}
	})
}
