package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"trending/internal/setting"
)

// keyOf is the test key for item id: 11 bytes, like a video id.
func keyOf(id uint64) []byte { return fmt.Appendf(nil, "v%010d", id) }

// mustNew builds a sketch or fails the test.
func mustNew(t testing.TB, cfg Config) *Sketch {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	return s
}

// zipfStream returns n events drawn from a Zipf(s=1.1) law over items
// 0..items-1, with a fixed seed, and the true count of every item.
func zipfStream(seed uint64, items, n int) (events []uint64, truth []uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	z := rand.NewZipf(r, 1.1, 1, uint64(items-1))
	events = make([]uint64, n)
	truth = make([]uint64, items)
	for i := range events {
		id := z.Uint64()
		events[i] = id
		truth[id]++
	}
	return events, truth
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{"default", DefaultConfig(), ""},
		{"width one", Config{Width: 1, Depth: 1}, ""},
		{"largest depth", Config{Width: 1024, Depth: MaxDepth}, ""},
		{"largest grid", Config{Width: 1 << 27, Depth: 1}, ""},
		{"not a power of two", Config{Width: 1000, Depth: 5}, "use 512 or 1024"},
		{"negative width", Config{Width: -8, Depth: 5}, "negative"},
		{"negative depth", Config{Width: 8, Depth: -1}, "use 1..16"},
		{"depth too large", Config{Width: 8, Depth: MaxDepth + 1}, "use 1..16"},
		{"over MaxBytes", Config{Width: 1 << 26, Depth: 3}, "lower width or depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrConfig containing %q", err, tt.wantErr)
			}
			if _, err := New(tt.cfg); !errors.Is(err, ErrConfig) {
				t.Fatalf("New() = %v, want ErrConfig", err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 7
	s := mustNew(t, cfg)
	want := Config{Width: 1 << 18, Depth: 5, Seed: 7}
	if got := s.Config(); got != want {
		t.Fatalf("Config() = %+v, want %+v", got, want)
	}
	if got := DefaultConfig().Bytes(); got != 10485760 {
		t.Fatalf("DefaultConfig().Bytes() = %d, want 10485760 (5 x 2^18 x 8 B, ~10.5 MB)", got)
	}
}

// TestZeroMeansZero: DefaultConfig is where the defaults live. A zero Width or Depth is
// refused by name, not replaced by the default, and a zero Seed or Conservative is kept.
func TestZeroMeansZero(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		fields []string
	}{
		{"zero width", Config{Depth: DefaultDepth}, []string{"Width"}},
		{"zero depth", Config{Width: DefaultWidth}, []string{"Depth"}},
		{"zero value", Config{}, []string{"Width", "Depth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, setting.ErrConfig) || !errors.Is(err, ErrConfig) {
				t.Fatalf("New(%+v) = %v, want an error wrapping setting.ErrConfig and ErrConfig", tc.cfg, err)
			}
			var got []string
			for _, e := range setting.Errors(err) {
				got = append(got, e.Field)
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("New(%+v) names %v, want %v (%v)", tc.cfg, got, tc.fields, err)
			}
		})
	}
	if got := (Config{}).Bytes(); got != 0 {
		t.Fatalf("zero Config Bytes() = %d, want 0: a zero shape has no counters", got)
	}
	s := mustNew(t, Config{Width: 8, Depth: 2})
	if got := s.Config(); got != (Config{Width: 8, Depth: 2}) {
		t.Fatalf("Config() = %+v: zero Seed and Conservative must stay zero", got)
	}
}

// TestNeverBelowTruth is the count-min guarantee's one-sided half: no
// collision can make an estimate low, under either update rule.
func TestNeverBelowTruth(t *testing.T) {
	events, truth := zipfStream(1, 20000, 100000)
	for _, cfg := range []Config{
		{Width: 64, Depth: 3},
		{Width: 256, Depth: 5},
		{Width: 64, Depth: 3, Conservative: true},
		{Width: 256, Depth: 5, Seed: 42, Conservative: true},
	} {
		t.Run(fmt.Sprintf("%dx%d/conservative=%t", cfg.Depth, cfg.Width, cfg.Conservative), func(t *testing.T) {
			s := mustNew(t, cfg)
			for i, id := range events {
				s.Add(keyOf(id), uint64(i%3+1)) // counts > 1 exercise the n in conservative update
			}
			counted := make([]uint64, len(truth))
			for i, id := range events {
				counted[id] += uint64(i%3 + 1)
			}
			var sum uint64
			for id, want := range counted {
				sum += want
				if got := s.Estimate(keyOf(uint64(id))); got < want {
					t.Fatalf("Estimate(%d) = %d, below the truth %d", id, got, want)
				}
			}
			if s.Total() != sum {
				t.Fatalf("Total() = %d, want %d", s.Total(), sum)
			}
		})
	}
}

func TestExactWithoutCollisions(t *testing.T) {
	// 200 keys in 2^20 columns: with this fixed hash no two keys share a
	// cell in every row, so every estimate is exact.
	for _, conservative := range []bool{false, true} {
		s := mustNew(t, Config{Width: 1 << 20, Depth: 4, Conservative: conservative})
		for id := uint64(0); id < 200; id++ {
			s.AddString(string(keyOf(id)), id+1)
			s.Add(keyOf(id), 2)
		}
		for id := uint64(0); id < 200; id++ {
			if got, want := s.EstimateString(string(keyOf(id))), id+3; got != want {
				t.Fatalf("conservative=%t: Estimate(%d) = %d, want exactly %d", conservative, id, got, want)
			}
		}
		if got := s.Estimate([]byte("never added")); got != 0 {
			t.Fatalf("conservative=%t: Estimate(never added) = %d, want 0", conservative, got)
		}
	}
}

// TestStringAndBytesAgree guards the generic hash: a string key and the same
// bytes must land in the same cells.
func TestStringAndBytesAgree(t *testing.T) {
	s := mustNew(t, Config{Width: 1 << 10, Depth: 5, Seed: 3})
	for _, k := range []string{"", "a", "abcd", "12345678", "a key longer than thirty-two bytes, to use the stripe loop"} {
		if s.Hash([]byte(k)) != s.HashString(k) || s.Hash([]byte(k)) != KeyHash(3, []byte(k)) || KeyHashString(3, k) != s.HashString(k) {
			t.Fatalf("Hash(%q) differs between string and []byte", k)
		}
		s.AddString(k, 5)
		if got := s.Estimate([]byte(k)); got < 5 {
			t.Fatalf("Estimate(%q) = %d after AddString 5", k, got)
		}
	}
}

// randomSketch fills a standard sketch with a random stream.
func randomSketch(t testing.TB, r *rand.Rand, cfg Config) *Sketch {
	s := mustNew(t, cfg)
	for range r.IntN(300) {
		s.Add(keyOf(r.Uint64N(1000)), r.Uint64N(50)+1)
	}
	return s
}

func TestMergeSubtractProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 11))
	cfg := Config{Width: 128, Depth: 4, Seed: 9}
	for trial := range 200 {
		a, b, c := randomSketch(t, r, cfg), randomSketch(t, r, cfg), randomSketch(t, r, cfg)

		// Merge then Subtract is the identity: the sliding-window step.
		ab := a.Clone()
		if err := ab.Merge(b); err != nil {
			t.Fatal(err)
		}
		back := ab.Clone()
		if err := back.Subtract(b); err != nil {
			t.Fatalf("trial %d: Subtract after Merge: %v", trial, err)
		}
		if !back.Equal(a) {
			t.Fatalf("trial %d: Merge(a,b) then Subtract(b) != a", trial)
		}

		// Commutative.
		ba := b.Clone()
		if err := ba.Merge(a); err != nil {
			t.Fatal(err)
		}
		if !ab.Equal(ba) {
			t.Fatalf("trial %d: Merge is not commutative", trial)
		}

		// Associative.
		abc := ab.Clone()
		if err := abc.Merge(c); err != nil {
			t.Fatal(err)
		}
		bc := b.Clone()
		if err := bc.Merge(c); err != nil {
			t.Fatal(err)
		}
		a_bc := a.Clone()
		if err := a_bc.Merge(bc); err != nil {
			t.Fatal(err)
		}
		if !abc.Equal(a_bc) {
			t.Fatalf("trial %d: Merge is not associative", trial)
		}
	}
}

// TestMergeEqualsOneStream checks additivity itself: per-bucket sketches
// merged are cell for cell the sketch of the whole stream, which is what lets minute sketches
// sum to a window and the month subtract the day that left it.
func TestMergeEqualsOneStream(t *testing.T) {
	events, _ := zipfStream(3, 5000, 30000)
	cfg := Config{Width: 512, Depth: 5, Seed: 77}
	whole := mustNew(t, cfg)
	window := mustNew(t, cfg)
	buckets := make([]*Sketch, 10)
	for i := range buckets {
		buckets[i] = mustNew(t, cfg)
	}
	for i, id := range events {
		whole.Add(keyOf(id), 1)
		buckets[i%len(buckets)].Add(keyOf(id), 1)
	}
	for _, b := range buckets {
		if err := window.Merge(b); err != nil {
			t.Fatal(err)
		}
	}
	if !window.Equal(whole) {
		t.Fatal("merged buckets differ from the sketch of the whole stream")
	}
	// Slide: drop the first three buckets, compare with a sketch of the rest.
	rest := mustNew(t, cfg)
	for i, id := range events {
		if i%len(buckets) >= 3 {
			rest.Add(keyOf(id), 1)
		}
	}
	for _, b := range buckets[:3] {
		if err := window.Subtract(b); err != nil {
			t.Fatal(err)
		}
	}
	if !window.Equal(rest) {
		t.Fatal("window minus expired buckets differs from the sketch of the remaining events")
	}
}

func TestIncompatible(t *testing.T) {
	base := Config{Width: 64, Depth: 3, Seed: 1}
	tests := []struct {
		name  string
		other *Sketch
	}{
		{"width", mustNew(t, Config{Width: 128, Depth: 3, Seed: 1})},
		{"depth", mustNew(t, Config{Width: 64, Depth: 4, Seed: 1})},
		{"seed", mustNew(t, Config{Width: 64, Depth: 3, Seed: 2})},
		{"nil", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, base)
			s.AddString("x", 3)
			before := s.Clone()
			if tt.other != nil {
				tt.other.AddString("x", 1)
			}
			if err := s.Merge(tt.other); !errors.Is(err, ErrIncompatible) {
				t.Fatalf("Merge = %v, want ErrIncompatible", err)
			}
			if err := s.Subtract(tt.other); !errors.Is(err, ErrIncompatible) {
				t.Fatalf("Subtract = %v, want ErrIncompatible", err)
			}
			if !s.Equal(before) {
				t.Fatal("a failed Merge or Subtract changed the receiver")
			}
		})
	}
}

func TestSubtractErrors(t *testing.T) {
	std := Config{Width: 64, Depth: 3}
	cons := Config{Width: 64, Depth: 3, Conservative: true}
	build := func(cfg Config, keys ...string) *Sketch {
		s := mustNew(t, cfg)
		for _, k := range keys {
			s.AddString(k, 10)
		}
		return s
	}
	tests := []struct {
		name    string
		s, o    *Sketch
		wantErr error
	}{
		{"conservative receiver", build(cons, "a", "b"), build(std, "a"), ErrConservativeSubtract},
		{"conservative operand", build(std, "a", "b"), build(cons, "a"), ErrConservativeSubtract},
		{"total underflow", build(std, "a"), build(std, "a", "b"), ErrUnderflow},
		{"cell underflow", build(std, "a", "b"), build(std, "c"), ErrUnderflow},
		{"subtracted twice", func() *Sketch {
			s := build(std, "a", "b")
			if err := s.Subtract(build(std, "a")); err != nil {
				t.Fatal(err)
			}
			return s
		}(), build(std, "a"), ErrUnderflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.s.Clone()
			if err := tt.s.Subtract(tt.o); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Subtract = %v, want %v", err, tt.wantErr)
			}
			if !tt.s.Equal(before) {
				t.Fatal("a failed Subtract changed the receiver")
			}
		})
	}
}

// TestSubtractRowInvariant: an operand whose cells fit under the receiver's
// but whose total does not match them (it was never merged in; the API can
// build one by merging a conservative sketch into a standard one) must be
// refused, or a row would sum past Total and the encoding would be
// unreadable.
func TestSubtractRowInvariant(t *testing.T) {
	cfg := Config{Width: 8, Depth: 2}
	s := mustNew(t, cfg)
	s.AddString("a", 10)
	o := mustNew(t, cfg)
	o.counters[s.HashString("a")&7] = 1 // row 0 cell of "a"
	o.total = 5
	before := s.Clone()
	if err := s.Subtract(o); !errors.Is(err, ErrUnderflow) {
		t.Fatalf("Subtract = %v, want ErrUnderflow (row 0 would sum to 9 with Total 5)", err)
	}
	if !s.Equal(before) {
		t.Fatal("a failed Subtract changed the receiver")
	}
}

func TestMergeOverflow(t *testing.T) {
	cfg := Config{Width: 8, Depth: 2}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	a.AddString("a", math.MaxUint64-5)
	b.AddString("b", 10)
	before := a.Clone()
	if err := a.Merge(b); !errors.Is(err, ErrOverflow) {
		t.Fatalf("Merge = %v, want ErrOverflow", err)
	}
	if !a.Equal(before) {
		t.Fatal("a failed Merge changed the receiver")
	}
}

func TestAddSaturates(t *testing.T) {
	for _, conservative := range []bool{false, true} {
		s := mustNew(t, Config{Width: 8, Depth: 2, Conservative: conservative})
		s.AddString("a", math.MaxUint64-1)
		s.AddString("a", 5)
		if s.Total() != math.MaxUint64 || s.EstimateString("a") != math.MaxUint64 {
			t.Fatalf("conservative=%t: Total %d, estimate %d, want both to saturate at 2^64-1",
				conservative, s.Total(), s.EstimateString("a"))
		}
		if _, err := s.MarshalBinary(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestConservativeNeverAboveStandard(t *testing.T) {
	events, truth := zipfStream(5, 5000, 50000)
	std := mustNew(t, Config{Width: 128, Depth: 4})
	cu := mustNew(t, Config{Width: 128, Depth: 4, Conservative: true})
	for _, id := range events {
		std.Add(keyOf(id), 1)
		cu.Add(keyOf(id), 1)
	}
	lower := 0
	for id, want := range truth {
		k := keyOf(uint64(id))
		s, c := std.Estimate(k), cu.Estimate(k)
		if c < want || c > s {
			t.Fatalf("item %d: truth %d, conservative %d, standard %d: want truth <= conservative <= standard", id, want, c, s)
		}
		if c < s {
			lower++
		}
	}
	if lower == 0 {
		t.Fatal("conservative update never beat standard update on a crowded sketch")
	}
}

func TestResetCloneCopyFrom(t *testing.T) {
	s := mustNew(t, Config{Width: 64, Depth: 3, Seed: 5, Conservative: true})
	s.AddString("a", 4)
	c := s.Clone()
	c.AddString("b", 1)
	if s.EstimateString("b") != 0 && s.Total() != 4 {
		t.Fatal("Clone shares counters with the original")
	}
	var dst Sketch
	dst.CopyFrom(c)
	if !dst.Equal(c) {
		t.Fatal("CopyFrom did not copy")
	}
	s.Reset()
	if s.Total() != 0 || s.EstimateString("a") != 0 || s.Config() != c.Config() {
		t.Fatal("Reset left counts behind or changed the config")
	}
}

func TestErrorBound(t *testing.T) {
	// The month sketch (docs/requirements.md): 2^18 x 5 over N = 4.7e9 gives ~48,600 at 99.3%.
	b := BoundFor(1<<18, 5, 4_700_000_000)
	if math.Abs(b.MaxOvercount-48734) > 10 || math.Abs(b.Probability-0.99326) > 1e-5 {
		t.Fatalf("BoundFor = %+v, want ~48,734 at 0.99326", b)
	}
	s := mustNew(t, Config{Width: 1024, Depth: 3})
	s.AddString("a", 1024)
	if got := s.ErrorBound(); math.Abs(got.MaxOvercount-math.E) > 1e-9 {
		t.Fatalf("ErrorBound().MaxOvercount = %v, want e", got.MaxOvercount)
	}
	if got := BoundFor(0, 5, 1); !math.IsInf(got.MaxOvercount, 1) {
		t.Fatalf("BoundFor(width 0) = %+v, want +Inf overcount", got)
	}
}

// TestZeroAllocs proves the hot path never allocates, for byte and string
// keys, short and longer than the compiler's 32-byte conversion buffer.
func TestZeroAllocs(t *testing.T) {
	short, long := []byte("dQw4w9WgXcQ"), []byte(strings.Repeat("long key ", 10))
	shortS, longS := string(short), string(long)
	for _, conservative := range []bool{false, true} {
		s := mustNew(t, Config{Width: 1 << 12, Depth: 5, Conservative: conservative})
		var sink uint64
		ops := map[string]func(){
			"Add":            func() { s.Add(short, 1); s.Add(long, 1) },
			"AddString":      func() { s.AddString(shortS, 1); s.AddString(longS, 1) },
			"Estimate":       func() { sink += s.Estimate(short) + s.Estimate(long) },
			"EstimateString": func() { sink += s.EstimateString(shortS) + s.EstimateString(longS) },
		}
		for name, op := range ops {
			if n := testing.AllocsPerRun(1000, op); n != 0 {
				t.Errorf("conservative=%t %s: %v allocs per run, want 0", conservative, name, n)
			}
		}
		_ = sink
	}
}

// TestEstimateWithoutIsSubtract: estimating in a sum without some of its parts gives what
// Subtract of those parts would give, for every key, and leaves the sum unchanged.
func TestEstimateWithoutIsSubtract(t *testing.T) {
	r := rand.New(rand.NewPCG(2026, 12))
	cfg := Config{Width: 64, Depth: 4, Seed: 5}
	for trial := range 100 {
		a, b, c := randomSketch(t, r, cfg), randomSketch(t, r, cfg), randomSketch(t, r, cfg)
		sum := a.Clone()
		if err := sum.Merge(b); err != nil {
			t.Fatal(err)
		}
		if err := sum.Merge(c); err != nil {
			t.Fatal(err)
		}
		before := sum.Clone()
		for k := range uint64(1000) {
			h := sum.Hash(keyOf(k))
			if got, want := sum.EstimateHashWithout(h, b, c), a.EstimateHash(h); got != want {
				t.Fatalf("trial %d key %d: without b and c %d, a alone %d", trial, k, got, want)
			}
			if got, want := sum.EstimateHashWithout(h), sum.EstimateHash(h); got != want {
				t.Fatalf("trial %d key %d: without nothing %d, estimate %d", trial, k, got, want)
			}
		}
		if !sum.Equal(before) {
			t.Fatalf("trial %d: EstimateHashWithout changed the sketch", trial)
		}
	}
}
