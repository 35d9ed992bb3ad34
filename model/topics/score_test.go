package topics

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
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
		name string
		cfg  SurgeConfig
		ok   bool
	}{
		{"zero is the default", SurgeConfig{}, true},
		{"default", DefaultSurgeConfig(), true},
		{"negative smoothing", SurgeConfig{Smoothing: -1}, false},
		{"NaN smoothing", SurgeConfig{Smoothing: math.NaN()}, false},
		{"negative floor", SurgeConfig{Floor: -5}, false},
		{"stay above enter", SurgeConfig{Enter: 2, Stay: 3}, false},
		{"stay equals enter", SurgeConfig{Enter: 2, Stay: 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
		})
	}
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
