package event

import (
	"math/rand/v2"
	"testing"
	"time"
)

// newRand returns a generator whose seed is logged, so a failing random test can be rerun.
func newRand(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed>>1))
}
