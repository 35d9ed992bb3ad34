package sketch

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	boom "github.com/tylertreat/BoomFilters"
)

// Benchmarks compare this sketch with BoomFilters' CountMinSketch at the same
// width and depth on the same keys: 2^16 distinct 11-byte ids, cycled.
// Run: go test ./speed/sketch/ -run '^$' -bench . -benchtime 300ms -count 3

const benchKeys = 1 << 16

var (
	keys    = makeKeys()
	strKeys = func() []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = string(k)
		}
		return out
	}()
	sink uint64
)

func makeKeys() [][]byte {
	out := make([][]byte, benchKeys)
	for i := range out {
		out[i] = keyOf(uint64(i) * 2654435761 % 100_000_000)
	}
	return out
}

// newBoom builds BoomFilters' sketch with exactly width columns and depth
// rows. Its constructor takes (epsilon, delta) and sets width =
// ceil(e/epsilon), depth = ceil(ln(1/delta)); half a unit of margin keeps
// floating-point error from rounding up to the next integer. It has no
// Width()/Depth() accessors, so reflection reads the unexported fields to
// prove the shape.
func newBoom(tb testing.TB, width, depth int) *boom.CountMinSketch {
	c := boom.NewCountMinSketch(math.E/(float64(width)-0.5), math.Exp(-(float64(depth) - 0.5)))
	v := reflect.ValueOf(c).Elem()
	if w, d := v.FieldByName("width").Uint(), v.FieldByName("depth").Uint(); w != uint64(width) || d != uint64(depth) {
		tb.Fatalf("BoomFilters sketch is %dx%d, want %dx%d", d, w, depth, width)
	}
	return c
}

func TestBoomShape(t *testing.T) {
	for _, w := range []int{1 << 16, 1 << 18, 1000} {
		for _, d := range []int{1, 5, 7} {
			newBoom(t, w, d)
		}
	}
}

var benchWidths = []int{1 << 16, 1 << 18}

const benchDepth = 5

func BenchmarkAdd(b *testing.B) {
	for _, w := range benchWidths {
		name := fmt.Sprintf("w=2^%d", bitsOf(w))
		b.Run(name+"/ours", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s.Add(keys[i&(benchKeys-1)], 1)
			}
		})
		b.Run(name+"/ours-string", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s.AddString(strKeys[i&(benchKeys-1)], 1)
			}
		})
		b.Run(name+"/ours-conservative", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth, Conservative: true})
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s.Add(keys[i&(benchKeys-1)], 1)
			}
		})
		b.Run(name+"/boom", func(b *testing.B) {
			c := newBoom(b, w, benchDepth)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				c.AddN(keys[i&(benchKeys-1)], 1)
			}
		})
	}
}

func BenchmarkEstimate(b *testing.B) {
	for _, w := range benchWidths {
		name := fmt.Sprintf("w=2^%d", bitsOf(w))
		b.Run(name+"/ours", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			for _, k := range keys {
				s.Add(k, 1)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sink += s.Estimate(keys[i&(benchKeys-1)])
			}
		})
		b.Run(name+"/boom", func(b *testing.B) {
			c := newBoom(b, w, benchDepth)
			for _, k := range keys {
				c.AddN(k, 1)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sink += c.Count(keys[i&(benchKeys-1)])
			}
		})
	}
}

// fullSketch is a 2^18 x 5 sketch holding an hour of one partition's views.
func fullSketch(b *testing.B) *Sketch {
	s := mustNew(b, Config{Width: 1 << 18, Depth: 5})
	events, _ := zipfStream(4, 1_000_000, 1_000_000)
	for _, id := range events {
		s.Add(keyOf(id), 1)
	}
	return s
}

func BenchmarkMerge(b *testing.B) {
	o := fullSketch(b)
	b.Run("ours", func(b *testing.B) {
		s := mustNew(b, o.Config())
		b.SetBytes(int64(o.Config().Bytes()))
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Merge(o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("boom", func(b *testing.B) {
		c, src := newBoom(b, 1<<18, 5), newBoom(b, 1<<18, 5)
		b.SetBytes(int64(o.Config().Bytes()))
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Merge(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSubtract(b *testing.B) {
	o := fullSketch(b)
	s := mustNew(b, o.Config())
	b.SetBytes(int64(o.Config().Bytes()))
	b.ReportAllocs()
	for b.Loop() {
		// Keep the sliding-window shape: merge the bucket in, subtract it.
		b.StopTimer()
		if err := s.Merge(o); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.Subtract(o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarshal encodes a minute bucket (110,000 views) and an hour of one
// partition (1,000,000 views) of the default 2^18 x 5 sketch; the
// encoded-bytes metric is the checkpoint size against 10,485,760 dense.
func BenchmarkMarshal(b *testing.B) {
	minute := mustNew(b, DefaultConfig())
	events, _ := zipfStream(9, 1_000_000, 110_000)
	for _, id := range events {
		minute.Add(keyOf(id), 1)
	}
	for name, s := range map[string]*Sketch{"minute": minute, "hour": fullSketch(b)} {
		b.Run(name, func(b *testing.B) {
			buf, _ := s.AppendBinary(nil)
			b.SetBytes(int64(s.Config().Bytes()))
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = s.AppendBinary(buf[:0])
			}
			// After the loop: b.Loop resets the timer, which drops metrics.
			b.ReportMetric(float64(len(buf)), "encoded-bytes")
		})
		b.Run(name+"/unmarshal-new", func(b *testing.B) {
			buf, _ := s.MarshalBinary()
			b.SetBytes(int64(s.Config().Bytes()))
			b.ReportAllocs()
			for b.Loop() {
				var dst Sketch
				if err := dst.UnmarshalBinary(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/unmarshal", func(b *testing.B) {
			buf, _ := s.MarshalBinary()
			dst := mustNew(b, s.Config())
			b.SetBytes(int64(s.Config().Bytes()))
			b.ReportAllocs()
			for b.Loop() {
				if err := dst.UnmarshalBinary(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func bitsOf(w int) int {
	n := 0
	for w > 1 {
		w >>= 1
		n++
	}
	return n
}

// BenchmarkAddHash is Add without the hash: the floor set by five random
// read-modify-writes into a sketch bigger than L2, which BoomFilters pays
// too. The gap between it and BenchmarkAdd/ours is the hash.
func BenchmarkAddHash(b *testing.B) {
	for _, w := range benchWidths {
		s := mustNew(b, Config{Width: w, Depth: benchDepth})
		hs := make([]uint64, benchKeys)
		for i := range hs {
			hs[i] = s.Hash(keys[i])
		}
		b.Run(fmt.Sprintf("w=2^%d", bitsOf(w)), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				s.AddHash(hs[i&(benchKeys-1)], 1)
			}
		})
	}
}

// BenchmarkHash is XXH3 alone on the 11-byte benchmark keys.
func BenchmarkHash(b *testing.B) {
	s := mustNew(b, Config{Width: 1, Depth: 1})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink += s.Hash(keys[i&(benchKeys-1)])
	}
}

// minuteKeys is a closed minute of one partition: 100,000 distinct 11-byte
// ids with counts 1-5.
const minuteKeys = 100_000

var (
	minuteIDs = func() [][]byte {
		out := make([][]byte, minuteKeys)
		for i := range out {
			out[i] = keyOf(uint64(i)*2654435761%100_000_000 + 7)
		}
		return out
	}()
	minuteCounts = func() []uint64 {
		out := make([]uint64, minuteKeys)
		for i := range out {
			out[i] = 1 + uint64(i*7919%5)
		}
		return out
	}()
)

// BenchmarkAddMinute adds a closed minute's 100,000 distinct keys to a
// sketch: one by one (Add: hash, then five cells), in bulk (AddHashes: hash
// the batch into a buffer, then add it row by row; "prehashed" leaves the
// hashing out, as speed/window does, which hashes once for every sketch
// window), and BoomFilters' AddN on the same keys and counts. One op is the
// whole minute; ns/key divides by 100,000.
func BenchmarkAddMinute(b *testing.B) {
	for _, w := range benchWidths {
		name := fmt.Sprintf("w=2^%d", bitsOf(w))
		perKey := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/minuteKeys, "ns/key")
		}
		b.Run(name+"/one-by-one", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			b.ReportAllocs()
			for b.Loop() {
				for i, k := range minuteIDs {
					s.Add(k, minuteCounts[i])
				}
			}
			perKey(b)
		})
		b.Run(name+"/bulk", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			hs := make([]uint64, minuteKeys)
			b.ReportAllocs()
			for b.Loop() {
				for i, k := range minuteIDs {
					hs[i] = s.Hash(k)
				}
				s.AddHashes(hs, minuteCounts)
			}
			perKey(b)
		})
		b.Run(name+"/bulk-prehashed", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			hs := make([]uint64, minuteKeys)
			for i, k := range minuteIDs {
				hs[i] = s.Hash(k)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.AddHashes(hs, minuteCounts)
			}
			perKey(b)
		})
		b.Run(name+"/one-by-one-prehashed", func(b *testing.B) {
			s := mustNew(b, Config{Width: w, Depth: benchDepth})
			hs := make([]uint64, minuteKeys)
			for i, k := range minuteIDs {
				hs[i] = s.Hash(k)
			}
			b.ReportAllocs()
			for b.Loop() {
				for i, h := range hs {
					s.AddHash(h, minuteCounts[i])
				}
			}
			perKey(b)
		})
		b.Run(name+"/boom", func(b *testing.B) {
			c := newBoom(b, w, benchDepth)
			b.ReportAllocs()
			for b.Loop() {
				for i, k := range minuteIDs {
					c.AddN(k, minuteCounts[i])
				}
			}
			perKey(b)
		})
	}
}
