package sketch

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func mustFloat(t testing.TB, cfg Config) *Float {
	t.Helper()
	s, err := NewFloat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFloatNeverLow: over random weighted streams, standard and conservative, every key's
// estimate is at least its true sum (up to rounding) and within the count-min bound at the
// total for all but a 1-Probability share of the keys; Total is the sum of every weight.
func TestFloatNeverLow(t *testing.T) {
	for _, cons := range []bool{false, true} {
		s := mustFloat(t, Config{Width: 1 << 8, Depth: 4, Seed: 3, Conservative: cons})
		r := rand.New(rand.NewPCG(1, 2))
		truth := map[string]float64{}
		var total float64
		for range 20000 {
			k := strconv.Itoa(int(r.ExpFloat64() * 300))
			v := r.Float64() * 10
			truth[k] += v
			total += v
			s.AddHash(s.hashString(k), v)
		}
		if math.Abs(s.Total()-total) > 1e-9*total {
			t.Fatalf("conservative %t: total %v, want %v", cons, s.Total(), total)
		}
		b := BoundFor(1<<8, 4, 0)
		over := 0
		for k, v := range truth {
			e := s.EstimateHash(s.hashString(k))
			if e < v*(1-1e-12) {
				t.Fatalf("conservative %t: %s estimate %v below its sum %v", cons, k, e, v)
			}
			if e-v > math.E/(1<<8)*total {
				over++
			}
		}
		if float64(over) > (1-b.Probability)*float64(len(truth))+3 {
			t.Fatalf("conservative %t: %d of %d keys over the bound", cons, over, len(truth))
		}
	}
}

func (s *Float) hashString(k string) uint64 { return KeyHashString(s.cfg.Seed, k) }

// TestFloatScaleExact: scaling by 2^a then 2^b is scaling by 2^(a+b) bit for bit, cells
// under FlushBelow become zero, and a scaled sketch estimates every key scaled.
func TestFloatScaleExact(t *testing.T) {
	cfg := Config{Width: 1 << 6, Depth: 3}
	a, b := mustFloat(t, cfg), mustFloat(t, cfg)
	r := rand.New(rand.NewPCG(4, 5))
	for i := range 500 {
		h, v := r.Uint64(), math.Ldexp(r.Float64()+0.5, r.IntN(100)-40)
		a.AddHash(h, v)
		b.AddHash(h, v)
		if i == 0 {
			a.AddHash(h^1, 0x1p-880) // flushed by the second step
			b.AddHash(h^1, 0x1p-880)
		}
	}
	a.Scale(-7)
	a.Scale(-13)
	b.Scale(-20)
	if !a.Equal(b) {
		t.Fatal("Scale(-7) then Scale(-13) differs from Scale(-20)")
	}
	c := mustFloat(t, cfg)
	c.AddHash(42, 3)
	c.Scale(-1)
	if e := c.EstimateHash(42); e != 1.5 || c.Total() != 1.5 {
		t.Fatalf("3 scaled by 1/2: estimate %v total %v", e, c.Total())
	}
	c.Scale(-1000)
	if c.EstimateHash(42) != 0 || c.Total() != 0 {
		t.Fatal("a cell scaled under FlushBelow is not zero")
	}
}

// TestFloatEncodingGolden pins the format (docs/format/sketch.md, "Float sketches").
func TestFloatEncodingGolden(t *testing.T) {
	s := mustFloat(t, Config{Width: 8, Depth: 2})
	s.AddHash(KeyHashString(0, "V7"), 3)
	s.AddHash(KeyHashString(0, "V2"), 0.5)
	want := []byte{
		0x43, 0x4d, 0x53, 0x46, 0x01, 0x00, 0x03, 0x02, // "CMSF", v1, flags, log2 w = 3, depth 2
		0, 0, 0, 0, 0, 0, 0, 0, // seed 0
		0, 0, 0, 0, 0, 0, 0x0c, 0x40, // total 3.5
		0x00, 0x02, // 3 zero cells
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x84, 0x40, // 3.0 (bits 0x4008000000000000)
		0x00, 0x01, // 2 zero cells
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0xf0, 0x3f, // 0.5 (bits 0x3fe0000000000000)
		0x00, 0x05, // 6 zero cells
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0xf0, 0x3f, // 0.5
		0x00, 0x00, // 1 zero cell
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x84, 0x40, // 3.0
	}
	got, _ := s.AppendBinary(nil)
	if body := got[:len(got)-4]; !bytes.Equal(body, want) {
		t.Fatalf("encoding\n got % x\nwant % x", body, want)
	}
	var back Float
	if err := back.UnmarshalBinary(got); err != nil || !back.Equal(s) {
		t.Fatalf("round trip: %v", err)
	}
}

// FuzzFloatUnmarshal: UnmarshalBinary never panics, leaves the receiver alone on an error
// (which wraps ErrCorrupt), and what it accepts encodes back to the same bytes.
func FuzzFloatUnmarshal(f *testing.F) {
	s := mustFloat(f, Config{Width: 8, Depth: 2})
	s.AddHash(1, 3)
	s.AddHash(99, 0.25)
	b, _ := s.AppendBinary(nil)
	f.Add(b, false)
	f.Add(b, true)
	e, _ := mustFloat(f, Config{Width: 16, Depth: 3, Conservative: true}).AppendBinary(nil)
	f.Add(e, true)
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			data = withCRC(data)
		}
		if len(data) >= 8 && data[6] < 64 && (uint64(1)<<data[6])*uint64(data[7])*8 > 1<<20 {
			return
		}
		r := mustFloat(t, Config{Width: 8, Depth: 2})
		r.AddHash(5, 1)
		before := r.Clone()
		if err := r.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			if !r.Equal(before) {
				t.Fatal("a failed decode changed the receiver")
			}
			return
		}
		again, _ := r.AppendBinary(nil)
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted a non-canonical encoding:\n in % x\nout % x", data, again)
		}
	})
}
