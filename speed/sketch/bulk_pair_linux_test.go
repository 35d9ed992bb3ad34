package sketch

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID):
// unlike the wall clock it stops while other processes run on the core.
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return ts.Nano()
}

// TestAddMinuteInterleaved times a closed minute's 100,000 keys added one by
// one, in bulk (AddHashes, and each of its two orders) and by BoomFilters'
// AddN, each variant once a round in a rotating order on its own sketch, in
// CPU time of the calling thread, so that on a loaded machine all see the
// same interference and none is charged for time other processes ran; the
// low percentiles and the per-round ratios are the numbers to trust. A
// measurement, not a check: it runs only with TRENDING_BULK_PAIR=1 (Linux:
// the thread clock).
//
//	TRENDING_BULK_PAIR=1 go test ./speed/sketch/ -run AddMinuteInterleaved -v
func TestAddMinuteInterleaved(t *testing.T) {
	if os.Getenv("TRENDING_BULK_PAIR") == "" {
		t.Skip("a measurement: set TRENDING_BULK_PAIR=1")
	}
	const rounds = 150
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, w := range benchWidths {
		type variant struct {
			name string
			run  func()
		}
		var vs []variant
		one := mustNew(t, Config{Width: w, Depth: benchDepth})
		bulk := mustNew(t, Config{Width: w, Depth: benchDepth})
		pre := mustNew(t, Config{Width: w, Depth: benchDepth})
		onePre := mustNew(t, Config{Width: w, Depth: benchDepth})
		rows := mustNew(t, Config{Width: w, Depth: benchDepth})
		blks := mustNew(t, Config{Width: w, Depth: benchDepth})
		bm := newBoom(t, w, benchDepth)
		hs, preHs := make([]uint64, minuteKeys), make([]uint64, minuteKeys)
		for i, k := range minuteIDs {
			preHs[i] = one.Hash(k)
		}
		vs = append(vs,
			variant{"one-by-one", func() {
				for i, k := range minuteIDs {
					one.Add(k, minuteCounts[i])
				}
			}},
			variant{"bulk", func() {
				for i, k := range minuteIDs {
					hs[i] = bulk.Hash(k)
				}
				bulk.AddHashes(hs, minuteCounts)
			}},
			variant{"boom", func() {
				for i, k := range minuteIDs {
					bm.AddN(k, minuteCounts[i])
				}
			}},
			variant{"one-by-one-prehashed", func() {
				for i, h := range preHs {
					onePre.AddHash(h, minuteCounts[i])
				}
			}},
			variant{"bulk-prehashed", func() { pre.AddHashes(preHs, minuteCounts) }},
			variant{"rows-prehashed", func() { rows.addRows(preHs, minuteCounts) }},
			variant{"blocks-prehashed", func() { blks.addBlocks(preHs, minuteCounts) }},
		)
		for _, v := range vs[3:7] {
			v.run()
		}
		rows.total, blks.total = pre.total, pre.total // addRows and addBlocks leave Total to AddHashes
		if !onePre.Equal(pre) || !onePre.Equal(rows) || !onePre.Equal(blks) {
			t.Fatal("a bulk variant's cells differ")
		}
		ns := make([][]float64, len(vs))
		for r := range rounds {
			for k := range vs {
				v := (k + r) % len(vs)
				t0 := threadCPU()
				vs[v].run()
				if r >= 10 {
					ns[v] = append(ns[v], float64(threadCPU()-t0)/minuteKeys)
				}
			}
		}
		pct := func(v []float64, p float64) float64 {
			s := slices.Clone(v)
			slices.Sort(s)
			return s[int(p*float64(len(s)-1))]
		}
		ratio := func(a, b []float64) []float64 {
			out := make([]float64, len(a))
			for i := range a {
				out[i] = a[i] / b[i]
			}
			return out
		}
		var out strings.Builder
		fmt.Fprintf(&out, "w=2^%d x %d, %d keys, %d rounds; load %s", bitsOf(w), benchDepth, minuteKeys, rounds-10, loadavg())
		fmt.Fprintf(&out, "%-22s %s\n", "CPU ns/key", "p5 / p25 / median   per round p25 / median / p75 of: boom/this, one-by-one/this, one-by-one-prehashed/this")
		for i, v := range vs {
			rb, ro, rp := ratio(ns[2], ns[i]), ratio(ns[0], ns[i]), ratio(ns[3], ns[i])
			fmt.Fprintf(&out, "%-22s %6.2f / %6.2f / %6.2f   %5.2f / %5.2f / %5.2f   %5.2f / %5.2f / %5.2f   %5.2f / %5.2f / %5.2f\n", v.name,
				pct(ns[i], .05), pct(ns[i], .25), pct(ns[i], .5),
				pct(rb, .25), pct(rb, .5), pct(rb, .75), pct(ro, .25), pct(ro, .5), pct(ro, .75), pct(rp, .25), pct(rp, .5), pct(rp, .75))
		}
		fmt.Fprintf(&out, "load %s", loadavg())
		t.Log("\n" + out.String())
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown\n"
	}
	return string(b)
}
