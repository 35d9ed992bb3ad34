package topics

import (
	"trending/model/topicrules"

	"errors"
	"math"
	"testing"
	"time"
)

// TestRequirementSizing checks every figure of the trending-topics sizing in docs/requirements.md,
// to the digits printed there and in docs/topics.md.
func TestRequirementSizing(t *testing.T) {
	s, err := ComputeSizing(DefaultSizingInput())
	if err != nil {
		t.Fatal(err)
	}
	const MB = 1e6
	for _, tc := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"minute sketch 1.31 MB", s.MinuteSketchBytes / MB, 1.31, 0.005},
		{"60 buckets about 79 MB", s.RingBytes / MB, 79, 0.5},
		{"e/65,536 about 0.0000415", s.PerCountError, 0.0000415, 0.00000005},
		{"99.3%", s.Probability, 0.993, 0.0005},
		{"about 32,500 counts a minute", s.CountsPerMinute, 32500, 50},
		{"about 1.35 mentions a minute", s.OvercountMinute, 1.35, 0.005},
		{"15 minutes about 20", s.OvercountWindow, 20, 0.5},
		{"floor of 300 might read 320", s.FloorReads, 320, 0.5},
		{"4,000 reads at most 0.5% high", s.BigTopicError, 0.005, 0.0005},
		{"21,504 hourly sketches", float64(s.BaselineSketches), 21504, 0},
		{"about 28 GB of baselines", s.BaselineBytes / 1e9, 28, 0.5},
		{"baseline bound the same 20", s.BaselineOvercount, 20, 0.5},
		{"baseline in memory 9 sketches + 168 bitmaps = 18.7 MB", s.BaselineMemoryBytes / MB, 18.7, 0.05},
		{"4.0 GB of hourly sketches a day to the store", s.BaselineStoreBytesPerDay / 1e9, 4.03, 0.005},
		{"3,072 PUTs a day", float64(s.BaselinePutsPerDay), 3072, 0},
		{"21,504 GETs a day", float64(s.BaselineGetsPerDay), 21504, 0},
		{"244,000 pairs", s.DedupePairs, 244000, 500},
		{"3.9 MB of pairs", s.DedupeBytes / MB, 3.9, 0.05},
		{"65 KB of lists", s.ListsBytes / 1e3, 65, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > tc.tol {
				t.Errorf("got %v, want %v within %v", tc.got, tc.want, tc.tol)
			}
		})
	}
	// Doubling the keys doubles the error; doubling the width halves it back.
	if r := s.OvercountMinute / s.SingleKeyOvercountMinute; r != 2 {
		t.Errorf("two keys per event: error ratio %v, want 2", r)
	}
	in := DefaultSizingInput()
	in.Width, in.KeysPerEvent = 1<<15, 1
	half, _ := ComputeSizing(in)
	if math.Abs(half.OvercountMinute-s.OvercountMinute) > 1e-12 {
		t.Errorf("half width, one key: %v vs %v", half.OvercountMinute, s.OvercountMinute)
	}
}

// TestSizingMatchesState: the State's real bound agrees with the arithmetic: after one
// minute of the peak (32,520 counts of tenths-weighted mentions) the window
// sketch's bound, in mentions, is the design's 1.35 (our counts are tenths, so N is ten
// times larger and divided back).
func TestSizingMatchesState(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Dedupe.Capacity, cfg.Regions = 1<<10, []string{"us"}
	s := newState(t, cfg, nil)
	for i := range 16260 {
		s.Add(Mention{Topic: "t" + string(rune('a'+i%26)), Region: "us", TS: t0})
	}
	sz, _ := ComputeSizing(DefaultSizingInput())
	if got := s.ErrorBound(); math.Abs(got-sz.OvercountMinute) > 0.001 {
		t.Errorf("state bound %v, sizing %v", got, sz.OvercountMinute)
	}
}

func TestSizingValidate(t *testing.T) {
	in := DefaultSizingInput()
	in.Width = 0
	if _, err := ComputeSizing(in); !errors.Is(err, topicrules.ErrConfig) {
		t.Errorf("zero width: %v", err)
	}
	in = DefaultSizingInput()
	in.PeakEventsPerSecond = math.Inf(1)
	if _, err := ComputeSizing(in); !errors.Is(err, topicrules.ErrConfig) {
		t.Errorf("infinite rate: %v", err)
	}
}

// TestWidthFor: the narrowest power-of-two width whose window overcount stays within the
// share of the floor; seed 001's worker gets the design's 65,536.
func TestWidthFor(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{{271, 1 << 16}, {125, 1 << 15}, {500, 1 << 17}, {0.001, 1 << 10}} {
		w := WidthFor(c.rate, 15*time.Minute, 300, 0.1)
		if w != c.want {
			t.Errorf("WidthFor(%g/s) = %d, want %d", c.rate, w, c.want)
		}
		if b := math.E / float64(w) * c.rate * 2 * 900; b > 30 || (w > 1<<10 && 2*b <= 30) {
			t.Errorf("WidthFor(%g/s) = %d: bound %.1f, want at most 30 and the narrowest such width", c.rate, w, b)
		}
	}
}
