package stream

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Zipf draws ranks 1..n with P(k) proportional to k^-s, for any exponent s > 0
// (math/rand's Zipf needs s > 1; catalogs of videos and songs are often
// measured near or below 1).
//
// It is Hörmann and Derflinger's rejection-inversion ("Rejection-inversion to
// generate variates from monotone discrete distributions", 1996), as in
// Apache Commons RNG: invert the integral of the continuous hat x^-s, round
// to the nearest integer and accept with a cheap test that almost always
// passes (the expected number of tries is below 1.1 for every s and n). It
// needs O(1) memory and a few logs and exps per draw, where a table of the
// CDF would need 8 bytes per item and a binary search.
type Zipf struct {
	n          float64
	s          float64
	hX1, hN    float64 // hIntegral(1.5)-1 and hIntegral(n+0.5)
	acceptBand float64
}

// MaxZipfExponent bounds the exponent: beyond 10 nearly every draw is rank 1
// and the arithmetic loses precision.
const MaxZipfExponent = 10

// NewZipf returns a sampler of ranks 1..n with exponent s in (0, MaxZipfExponent].
func NewZipf(n int, s float64) (*Zipf, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: zipf over %d items: need at least 1", ErrConfig, n)
	}
	if !(s > 0 && s <= MaxZipfExponent) { // also rejects NaN
		return nil, fmt.Errorf("%w: zipf exponent %g: use a value in (0, %d], such as 1.1", ErrConfig, s, MaxZipfExponent)
	}
	z := &Zipf{n: float64(n), s: s}
	z.hX1 = z.hIntegral(1.5) - 1
	z.hN = z.hIntegral(z.n + 0.5)
	z.acceptBand = 2 - z.hIntegralInverse(z.hIntegral(2.5)-z.h(2))
	return z, nil
}

// Sample draws one rank in 1..n.
func (z *Zipf) Sample(r *rand.Rand) int {
	for {
		u := z.hN + r.Float64()*(z.hX1-z.hN)
		x := z.hIntegralInverse(u)
		k := math.Floor(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > z.n {
			k = z.n
		}
		if k-x <= z.acceptBand || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int(k)
		}
	}
}

// ZipfProbs returns the exact probability of every rank 1..n (index k-1),
// for tests and sizing. It costs O(n) time and memory.
func ZipfProbs(n int, s float64) []float64 {
	p := make([]float64, n)
	sum := 0.0
	for i := n; i >= 1; i-- { // smallest terms first, for precision
		p[i-1] = math.Pow(float64(i), -s)
		sum += p[i-1]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// h is the unnormalised density x^-s.
func (z *Zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

// hIntegral is the integral of h from 1 to x: (x^(1-s)-1)/(1-s), or log x at
// s = 1, written so that it is continuous in s.
func (z *Zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-z.s)*lx) * lx
}

// hIntegralInverse inverts hIntegral.
func (z *Zipf) hIntegralInverse(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 { // rounding can push it just past the domain of log1p
		t = -1
	}
	return math.Exp(log1pOver(t) * x)
}

// log1pOver is log(1+x)/x, continuous at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// expm1Over is (exp(x)-1)/x, continuous at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}

// ZipfProb returns the exact probability of rank k among n at exponent s:
// k^-s / sum_{i=1..n} i^-s. It costs O(n) time and no memory.
func ZipfProb(n int, s float64, k int) float64 {
	if k < 1 || k > n {
		return 0
	}
	sum := 0.0
	for i := n; i >= 1; i-- {
		sum += math.Pow(float64(i), -s)
	}
	return math.Pow(float64(k), -s) / sum
}
