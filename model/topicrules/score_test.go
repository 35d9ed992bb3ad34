package topicrules

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"trending/internal/setting"
)

// TestRequirementScores reproduces the worked numbers of docs/requirements.md ("Trending
// topics") exactly, to the digits printed there.
func TestRequirementScores(t *testing.T) {
	cfg := DefaultSurgeConfig()
	for _, tc := range []struct {
		name              string
		current, expected float64
		want              float64 // the worked figure
		round             float64 // its rounding
		listed            bool    // passes the floor of 300
	}{
		{"marathon 4,000 vs 200", 4000, 200, 16.2, 0.1, true},
		{"big sport 60,000 vs 55,000", 60000, 55000, 1.09, 0.01, true},
		{"junk 5 vs 0", 5, 0, 1.1, 0.1, false},
		{"new topic 3,000 with no history", 3000, 0, 61, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SurgeRatio(tc.current, tc.expected, cfg.Smoothing)
			if r := math.Round(got/tc.round) * tc.round; math.Abs(r-tc.want) > 1e-9 {
				t.Errorf("SurgeRatio(%v, %v, 50) = %v, rounds to %v, seed says %v", tc.current, tc.expected, got, r, tc.want)
			}
			s, ok := cfg.Score(tc.current, tc.expected)
			if ok != tc.listed {
				t.Fatalf("Score ok = %v, want %v (floor %v)", ok, tc.listed, cfg.Floor)
			}
			if ok && s != got {
				t.Errorf("Score = %v, want the ratio %v", s, got)
			}
		})
	}
	// The exact fractions the worked numbers divide.
	if got := SurgeRatio(4000, 200, 50); got != 4050.0/250 {
		t.Errorf("4050/250: got %v", got)
	}
	if got := SurgeRatio(3000, 0, 50); got != 61 {
		t.Errorf("3050/50: got %v", got)
	}
}

// TestExpected: the same clock hour's mean over 7 days, divided by 4 for 15 minutes.
func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hours  []float64
		window time.Duration
		want   float64
	}{
		{"no history", nil, 15 * time.Minute, 0},
		{"7 equal days", []float64{800, 800, 800, 800, 800, 800, 800}, 15 * time.Minute, 200},
		{"mean then quarter", []float64{700, 900, 600, 1000, 800, 800, 800}, 15 * time.Minute, 200},
		{"two days of history", []float64{400, 1200}, 15 * time.Minute, 200},
		{"hour window", []float64{100, 300}, time.Hour, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expected(tc.hours, tc.window); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Expected = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNoHistoryNeedsVolume: with expected 0 a topic passes enter (3) only with at least
// 2c = 100 mentions, and the floor (300) comes first, so a small new topic never trends.
func TestNoHistoryNeedsVolume(t *testing.T) {
	cfg := DefaultSurgeConfig()
	for _, cur := range []float64{0, 5, 99, 100, 299} {
		if _, ok := cfg.Score(cur, 0); ok {
			t.Errorf("new topic at %v passed the floor", cur)
		}
	}
	s, ok := cfg.Score(300, 0)
	if !ok || s != 7 || s < cfg.Enter {
		t.Errorf("new topic at the floor: score %v ok %v, want 7 (enters)", s, ok)
	}
	// A big, usual topic passes the floor but not enter.
	if s, ok := cfg.Score(60000, 55000); !ok || s >= cfg.Enter {
		t.Errorf("big usual topic: %v %v", s, ok)
	}
}

func TestSurgeConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*SurgeConfig)
		field string // the field the error names; "" means valid
	}{
		{"default", func(*SurgeConfig) {}, ""},
		{"negative smoothing", func(c *SurgeConfig) { c.Smoothing = -1 }, "Smoothing"},
		{"NaN smoothing", func(c *SurgeConfig) { c.Smoothing = math.NaN() }, "Smoothing"},
		{"negative floor", func(c *SurgeConfig) { c.Floor = -5 }, "Floor"},
		{"stay above enter", func(c *SurgeConfig) { c.Enter, c.Stay = 2, 3 }, "Enter"},
		{"stay equals enter", func(c *SurgeConfig) { c.Enter, c.Stay = 2, 2 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultSurgeConfig()
			tc.mod(&cfg)
			checkSetting(t, cfg.Validate(), tc.field)
		})
	}
}

// checkSetting fails unless err is nil for field "" or else a setting error (wrapping
// ErrConfig and setting.ErrConfig) that names exactly field.
func checkSetting(t *testing.T, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Fatalf("Validate = %v, want nil", err)
		}
		return
	}
	if !errors.Is(err, ErrConfig) || !errors.Is(err, setting.ErrConfig) {
		t.Fatalf("Validate = %v, want an error wrapping ErrConfig and setting.ErrConfig", err)
	}
	es := setting.Errors(err)
	if len(es) != 1 || es[0].Field != field {
		t.Fatalf("Validate = %v, want one setting error naming %s", err, field)
	}
}

// TestZeroMeansZero: the defaults live in DefaultSurgeConfig and DefaultWeightConfig. A zero
// field that cannot work is refused by name; a zero floor or new-account age means what it
// says (no floor, no account new) instead of the default.
func TestZeroMeansZero(t *testing.T) {
	if err := DefaultSurgeConfig().Validate(); err != nil {
		t.Fatalf("DefaultSurgeConfig: %v", err)
	}
	if err := DefaultWeightConfig().Validate(); err != nil {
		t.Fatalf("DefaultWeightConfig: %v", err)
	}
	for _, tc := range []struct {
		field string
		err   error
	}{
		{"Smoothing", func() error { c := DefaultSurgeConfig(); c.Smoothing = 0; return c.Validate() }()},
		{"Stay", func() error { c := DefaultSurgeConfig(); c.Stay = 0; return c.Validate() }()},
		{"Enter", func() error { c := DefaultSurgeConfig(); c.Enter = 0; return c.Validate() }()},
		{"ReviewShare", func() error { c := DefaultWeightConfig(); c.ReviewShare = 0; return c.Validate() }()},
		{"ReviewCut", func() error { c := DefaultWeightConfig(); c.ReviewCut = 0; return c.Validate() }()},
	} {
		t.Run(tc.field, func(t *testing.T) { checkSetting(t, tc.err, tc.field) })
	}
	if n := len(setting.Errors((SurgeConfig{}).Validate())); n != 2 {
		t.Errorf("zero SurgeConfig: %d setting errors, want 2 (Smoothing, Stay): %v", n, (SurgeConfig{}).Validate())
	}

	surge := DefaultSurgeConfig()
	surge.Floor = 0
	if err := surge.Validate(); err != nil {
		t.Fatalf("floor 0: %v", err)
	}
	if s, ok := surge.Score(1, 0); !ok || s != SurgeRatio(1, 0, DefaultSmoothing) {
		t.Errorf("floor 0: Score(1, 0) = %v, %v: one mention must be scored, not held to the default floor %d", s, ok, DefaultFloor)
	}

	w := DefaultWeightConfig()
	if !w.IsNew(24*time.Hour) || w.IsNew(60*24*time.Hour) {
		t.Error("default: IsNew must hold below 30 days only")
	}
	w.NewAccountAge = 0
	if err := w.Validate(); err != nil {
		t.Fatalf("new-account age 0: %v", err)
	}
	if w.IsNew(0) || w.IsNew(time.Hour) {
		t.Error("new-account age 0: no account may be new, not the 30-day default")
	}
	w.NewAccountAge = -time.Hour
	checkSetting(t, w.Validate(), "NewAccountAge")
}

func TestParseScore(t *testing.T) {
	for in, want := range map[string]Score{"": Volume, "volume": Volume, "surge": Surge, "decayed": Decayed} {
		if got, err := ParseScore(in); err != nil || got != want {
			t.Errorf("ParseScore(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseScore("ratio"); !errors.Is(err, ErrUnknownScore) {
		t.Errorf("ParseScore(ratio) = %v", err)
	}
}

func TestDecay(t *testing.T) {
	hl := 10 * time.Minute
	for _, tc := range []struct {
		name string
		age  time.Duration
		want float64
	}{
		{"now", 0, 1}, {"one half-life", hl, 0.5}, {"two", 2 * hl, 0.25}, {"future", -time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecayWeight(tc.age, hl); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("DecayWeight(%v) = %v, want %v", tc.age, got, tc.want)
			}
		})
	}
	// 100 now and 100 ten minutes ago: 150.
	counts := make([]float64, 11)
	counts[0], counts[10] = 100, 100
	if got := DecayedSum(counts, hl); math.Abs(got-150) > 1e-9 {
		t.Errorf("DecayedSum = %v, want 150", got)
	}
	// Property: decayed never exceeds the plain sum, and a longer half-life never lowers it.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		c := make([]float64, 15)
		var sum float64
		for i := range c {
			c[i] = float64(rng.IntN(1000))
			sum += c[i]
		}
		a, b := DecayedSum(c, 5*time.Minute), DecayedSum(c, 20*time.Minute)
		if a > b+1e-9 || b > sum+1e-9 {
			t.Fatalf("decay not monotone: 5m %v, 20m %v, sum %v", a, b, sum)
		}
	}
}

// TestHysteresis: enter at 3, stay until below 2, so a topic hovering between does not
// flicker.
func TestHysteresis(t *testing.T) {
	h := NewHysteresis(3, 2)
	steps := []struct {
		score float64
		want  bool
	}{
		{2.9, false}, {3, true}, {2.5, true}, {2, true}, {1.99, false}, {2.5, false}, {3.5, true},
	}
	for i, s := range steps {
		if got := h.Update("t", s.score); got != s.want {
			t.Fatalf("step %d score %v: listed %v, want %v", i, s.score, got, s.want)
		}
		if h.Listed("t") != s.want {
			t.Fatalf("step %d: Listed disagrees with Update", i)
		}
	}
	// Flicker count: a score alternating 2.4 / 3.1 changes membership once, not every step.
	h = NewHysteresis(3, 2)
	changes, was := 0, false
	for i := range 100 {
		s := 2.4
		if i%2 == 1 {
			s = 3.1
		}
		if now := h.Update("x", s); now != was {
			changes++
			was = now
		}
	}
	if changes != 1 {
		t.Errorf("membership changed %d times, want 1", changes)
	}
	h.Retain(func(string) bool { return false })
	if h.Len() != 0 || len(h.Topics()) != 0 {
		t.Errorf("Retain kept topics")
	}
}
