package sketch

import (
	"fmt"
	"math"
	"testing"
)

// overcounts builds cfg's sketch over a Zipf stream and returns, for every
// item of the universe (seen or not), estimate minus truth.
func overcounts(t testing.TB, cfg Config, events, truth []uint64) (over []uint64, total uint64) {
	s := mustNew(t, cfg)
	for _, id := range events {
		s.Add(keyOf(id), 1)
	}
	over = make([]uint64, len(truth))
	for id, want := range truth {
		got := s.Estimate(keyOf(uint64(id)))
		if got < want {
			t.Fatalf("item %d: estimate %d below truth %d", id, got, want)
		}
		over[id] = got - want
	}
	return over, s.Total()
}

// fractionOver returns the fraction of items whose overcount exceeds limit.
func fractionOver(over []uint64, limit float64) float64 {
	n := 0
	for _, o := range over {
		if float64(o) > limit {
			n++
		}
	}
	return float64(n) / float64(len(over))
}

// TestBoundHoldsOnZipf checks the count-min guarantee statistically: on a
// Zipf stream with known truth, the fraction of items whose overcount
// exceeds (e/w)*N stays below e^-d. The bound comes from Markov's inequality
// and is loose, so the slack is small; the control below shows the check can
// fail: a sketch whose rows are not independent (depth 1 is exactly what
// broken double hashing with h2 = 0 degenerates to) breaks the depth-d bound.
func TestBoundHoldsOnZipf(t *testing.T) {
	const slack = 1.25
	events, truth := zipfStream(2026, 50_000, 400_000)
	tests := []struct {
		cfg Config
		// control: e^-d is small enough that a one-row sketch fails it (at
		// depth 2 and 3 e^-d is above a single row's ~5% failure rate).
		control bool
	}{
		{Config{Width: 256, Depth: 2}, false},
		{Config{Width: 256, Depth: 3}, false},
		{Config{Width: 1024, Depth: 4}, true},
		{Config{Width: 1024, Depth: 5, Seed: 1}, true},
		{Config{Width: 4096, Depth: 5, Seed: 2}, true},
	}
	for _, tt := range tests {
		cfg := tt.cfg
		t.Run(fmt.Sprintf("%dx%d", cfg.Depth, cfg.Width), func(t *testing.T) {
			over, n := overcounts(t, cfg, events, truth)
			b := BoundFor(cfg.Width, cfg.Depth, n)
			got, limit := fractionOver(over, b.MaxOvercount), 1-b.Probability
			t.Logf("N=%d bound (e/w)N=%.0f: %.5f of %d items exceed it, e^-d=%.5f", n, b.MaxOvercount, got, len(over), limit)
			if got > limit*slack {
				t.Errorf("%.5f of items overcount by more than (e/w)N=%.0f, want < e^-%d = %.5f", got, b.MaxOvercount, cfg.Depth, limit)
			}
			if !tt.control {
				return
			}
			// Control: one row of the same width, judged by the same d.
			one := cfg
			one.Depth = 1
			over1, _ := overcounts(t, one, events, truth)
			bad := fractionOver(over1, b.MaxOvercount)
			t.Logf("control, depth 1: %.5f exceed it", bad)
			if bad <= limit*slack {
				t.Errorf("control: a one-row sketch passes the depth-%d check (%.5f <= %.5f): the check is too weak", cfg.Depth, bad, limit*slack)
			}
		})
	}
}

// TestConservativeVsStandard compares the two update rules at equal memory on
// a Zipf stream and reports mean and max overcount. Conservative update can
// only lower an estimate (TestConservativeNeverAboveStandard), and on a
// crowded sketch it must lower the mean clearly.
func TestConservativeVsStandard(t *testing.T) {
	events, truth := zipfStream(11, 50_000, 400_000)
	for _, width := range []int{1024, 4096} {
		cfgs := []Config{{Width: width, Depth: 4}, {Width: width, Depth: 4, Conservative: true}}
		var means [2]float64
		for i, cfg := range cfgs {
			over, n := overcounts(t, cfg, events, truth)
			var sum, max uint64
			var seenSum float64
			seen := 0
			for id, o := range over {
				sum += o
				max = maxU(max, o)
				if truth[id] > 0 {
					seenSum += float64(o)
					seen++
				}
			}
			means[i] = float64(sum) / float64(len(over))
			t.Logf("%dx%d conservative=%-5t N=%d (%d bytes): overcount mean %.1f (seen items %.1f), max %d; bound (e/w)N=%.0f",
				cfg.Depth, cfg.Width, cfg.Conservative, n, cfg.Bytes(), means[i], seenSum/float64(seen), max,
				BoundFor(cfg.Width, cfg.Depth, n).MaxOvercount)
		}
		if !(means[1] < means[0]*0.8) {
			t.Errorf("width %d: conservative mean overcount %.1f not clearly below standard %.1f", width, means[1], means[0])
		}
	}
}

func maxU(a, b uint64) uint64 { return uint64(math.Max(float64(a), float64(b))) }
