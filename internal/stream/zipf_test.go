package stream

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// chiSquare draws samples from z and returns the chi-square statistic of the
// counts of ranks 1..bins-1 and the tail (ranks >= bins) against probs, and
// the degrees of freedom.
func chiSquare(z *Zipf, probs []float64, bins, samples int, seed uint64) (float64, int) {
	r := rand.New(rand.NewPCG(seed, 1))
	obs := make([]float64, bins)
	for range samples {
		k := z.Sample(r)
		obs[min(k, bins)-1]++
	}
	exp := make([]float64, bins)
	for i, p := range probs {
		exp[min(i+1, bins)-1] += p * float64(samples)
	}
	chi := 0.0
	for i := range obs {
		d := obs[i] - exp[i]
		chi += d * d / exp[i]
	}
	return chi, bins - 1
}

// chiLimit is a generous upper quantile of chi-square with df degrees of
// freedom (Wilson-Hilferty at z = 4, p ~ 3e-5): a correct sampler fails it
// about once in 30,000 seeds, a wrong exponent by 0.1 fails it always.
func chiLimit(df int) float64 {
	d := float64(df)
	x := 1 - 2/(9*d) + 4*math.Sqrt(2/(9*d))
	return d * x * x * x
}

func TestZipfMatchesTheory(t *testing.T) {
	const n, bins, samples = 2000, 60, 300_000
	for _, s := range []float64{0.5, 0.9, 1.0, 1.1, 1.5, 2.5} {
		z, err := NewZipf(n, s)
		if err != nil {
			t.Fatal(err)
		}
		chi, df := chiSquare(z, ZipfProbs(n, s), bins, samples, 42)
		if limit := chiLimit(df); chi > limit {
			t.Errorf("s=%g: chi-square %.1f over %d df exceeds %.1f: the sampler does not follow Zipf", s, chi, df, limit)
		}
	}
}

// TestZipfChiSquareDetectsWrongExponent is the negative control: the same
// test against a neighbouring exponent's probabilities must fail, or the
// test above proves nothing.
func TestZipfChiSquareDetectsWrongExponent(t *testing.T) {
	const n, bins, samples = 2000, 60, 300_000
	z, _ := NewZipf(n, 1.1)
	chi, df := chiSquare(z, ZipfProbs(n, 1.0), bins, samples, 42)
	if chi <= chiLimit(df) {
		t.Fatalf("chi-square %.1f against s=1.0 did not exceed %.1f: the test is too weak", chi, chiLimit(df))
	}
}

// TestZipfRankFrequencySlope checks the property a trending test cares about
// on a large catalog: log frequency falls with slope -s over the head.
func TestZipfRankFrequencySlope(t *testing.T) {
	const n, samples = 1_000_000, 2_000_000
	z, _ := NewZipf(n, 1.1)
	r := rand.New(rand.NewPCG(7, 7))
	counts := make([]float64, 101)
	for range samples {
		if k := z.Sample(r); k <= 100 {
			counts[k]++
		}
	}
	// Least squares of log count on log rank, ranks 1..100.
	var sx, sy, sxx, sxy float64
	for k := 1; k <= 100; k++ {
		x, y := math.Log(float64(k)), math.Log(counts[k])
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	slope := (100*sxy - sx*sy) / (100*sxx - sx*sx)
	if math.Abs(slope+1.1) > 0.05 {
		t.Fatalf("rank-frequency slope %.3f, want -1.1 +- 0.05", slope)
	}
	// And the head's share matches the exact probability.
	p1 := ZipfProb(n, 1.1, 1)
	if got := counts[1] / samples; math.Abs(got-p1) > 4*math.Sqrt(p1*(1-p1)/samples) {
		t.Fatalf("share of rank 1 %.5f, want %.5f", got, p1)
	}
}

func TestZipfEdges(t *testing.T) {
	for _, c := range []struct {
		n  int
		s  float64
		ok bool
	}{
		{1, 1.1, true}, {2, 0.01, true}, {10, 10, true}, {MaxItems, 1.1, true},
		{0, 1.1, false}, {10, 0, false}, {10, -1, false}, {10, 11, false}, {10, math.NaN(), false},
	} {
		z, err := NewZipf(c.n, c.s)
		if (err == nil) != c.ok {
			t.Errorf("NewZipf(%d, %g): err %v, want ok=%v", c.n, c.s, err, c.ok)
			continue
		}
		if err != nil {
			continue
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 10_000 {
			if k := z.Sample(r); k < 1 || k > c.n {
				t.Fatalf("NewZipf(%d, %g).Sample = %d, outside 1..%d", c.n, c.s, k, c.n)
			}
		}
	}
}

func BenchmarkZipfSample(b *testing.B) {
	for _, s := range []float64{0.8, 1.1} {
		z, _ := NewZipf(1_000_000, s)
		r := rand.New(rand.NewPCG(1, 2))
		b.Run("s="+strconv.FormatFloat(s, 'g', -1, 64), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				z.Sample(r)
			}
		})
	}
}
