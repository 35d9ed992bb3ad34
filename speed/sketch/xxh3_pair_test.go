package sketch

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	zeebo "github.com/zeebo/xxh3"
)

// TestHashSpeedInterleaved times ours against zeebo/xxh3 in alternating
// batches of 4096 calls on the same inputs (the order flips every round), so
// on a loaded machine both see the same interference; the low percentiles
// and the per-round ratio are the numbers to trust. It is a measurement, not
// a check: it runs only with TRENDING_XXH3_PAIR=1.
//
//	TRENDING_XXH3_PAIR=1 go test ./speed/sketch/ -run HashSpeedInterleaved -v
func TestHashSpeedInterleaved(t *testing.T) {
	if os.Getenv("TRENDING_XXH3_PAIR") == "" {
		t.Skip("a measurement: set TRENDING_XXH3_PAIR=1")
	}
	const seed, batch, rounds = 0x9e3779b97f4a7c15, 4096, 1500
	type impl struct {
		name string
		run  func(i int) // one call on input i
	}
	type pair struct {
		name string
		a, b impl
	}
	var cases []pair
	for _, n := range []int{0, 11, 32, 100, 1000} {
		strs := benchInputs(n)
		bs := make([][]byte, len(strs))
		for i, s := range strs {
			bs[i] = []byte(s)
		}
		size := "ids5-15"
		if n > 0 {
			size = fmt.Sprint(n)
		}
		cases = append(cases,
			pair{"hash " + size + " bytes",
				impl{"ours", func(i int) { sink += xxh3(bs[i&1023], seed) }},
				impl{"zeebo", func(i int) { sink += zeebo.HashSeed(bs[i&1023], seed) }}},
			pair{"hash " + size + " string",
				impl{"ours", func(i int) { sink += xxh3(strs[i&1023], seed) }},
				impl{"zeebo", func(i int) { sink += zeebo.HashStringSeed(strs[i&1023], seed) }}})
	}
	so, sz := mustNew(t, Config{Width: 1 << 18, Depth: 5}), mustNew(t, Config{Width: 1 << 18, Depth: 5})
	cases = append(cases,
		pair{"Add 2^18x5 bytes",
			impl{"ours", func(i int) { so.Add(keys[i&(benchKeys-1)], 1) }},
			impl{"zeebo", func(i int) { sz.AddHash(zeebo.HashSeed(keys[i&(benchKeys-1)], 0), 1) }}},
		pair{"Add 2^18x5 string",
			impl{"ours", func(i int) { so.AddString(strKeys[i&(benchKeys-1)], 1) }},
			impl{"zeebo", func(i int) { sz.AddHash(zeebo.HashStringSeed(strKeys[i&(benchKeys-1)], 0), 1) }}})

	timeBatch := func(f func(int), start int) float64 {
		t0 := time.Now()
		for i := start; i < start+batch; i++ {
			f(i)
		}
		return float64(time.Since(t0).Nanoseconds()) / batch
	}
	pct := func(v []float64, p float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	var out strings.Builder
	fmt.Fprintf(&out, "load %s", loadavg())
	fmt.Fprintf(&out, "%-22s %-28s %-28s %s\n", "case (ns/op)", "ours p5 / p25 / median", "zeebo p5 / p25 / median", "ours/zeebo per round p25 / median / p75")
	for _, c := range cases {
		var a, b, ratio []float64
		for r := range rounds {
			start := (r * batch) & (benchKeys - 1)
			var ta, tb float64
			if r%2 == 0 {
				ta, tb = timeBatch(c.a.run, start), timeBatch(c.b.run, start)
			} else {
				tb, ta = timeBatch(c.b.run, start), timeBatch(c.a.run, start)
			}
			if r < 50 {
				continue // warm-up
			}
			a, b, ratio = append(a, ta), append(b, tb), append(ratio, ta/tb)
		}
		fmt.Fprintf(&out, "%-22s %6.2f / %6.2f / %6.2f     %6.2f / %6.2f / %6.2f     %.2f / %.2f / %.2f\n", c.name,
			pct(a, .05), pct(a, .25), pct(a, .5), pct(b, .05), pct(b, .25), pct(b, .5),
			pct(ratio, .25), pct(ratio, .5), pct(ratio, .75))
	}
	fmt.Fprintf(&out, "load %s", loadavg())
	t.Log("\n" + out.String())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown\n"
	}
	return string(b)
}
