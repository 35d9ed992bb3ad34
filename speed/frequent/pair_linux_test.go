package frequent

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"trending/speed/sketch"
)

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return ts.Nano()
}

// TestAddInterleaved times the Add of 65,536 Zipf(1.1) keys (the next chunk
// of the benchmarks' stream each round, so every structure is in its steady
// state) into our summary, the DataSketches port at the same pairs and our
// count-min sketch (2^18 x 5), each once a round in a rotating order, in
// the calling thread's CPU time: on the shared, loaded machine the
// per-round ratios are the numbers to trust. A measurement, not a check:
//
//	TRENDING_FREQ_PAIR=1 go test ./speed/frequent/ -run AddInterleaved -v
func TestAddInterleaved(t *testing.T) {
	if os.Getenv("TRENDING_FREQ_PAIR") == "" {
		t.Skip("a measurement: set TRENDING_FREQ_PAIR=1")
	}
	const rounds, chunk = 110, 1 << 16
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, sz := range benchSizes {
		ours, ds := mustNew(t, sz.m), newDS(sz.dsMap)
		cm, err := sketch.New(sketch.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		off := 0
		names := []string{"ours", "datasketches-go", "count-min-2^18x5"}
		runs := []func(ks []string){
			func(ks []string) {
				for _, k := range ks {
					ours.AddString(k, 1)
				}
			},
			func(ks []string) {
				for _, k := range ks {
					ds.update(k, 1)
				}
			},
			func(ks []string) {
				for _, k := range ks {
					cm.AddString(k, 1)
				}
			},
		}
		ns := make([][]float64, len(runs))
		for r := range rounds {
			ks := zipfKeys[off : off+chunk]
			off = (off + chunk) % len(zipfKeys)
			for j := range runs {
				v := (j + r) % len(runs)
				t0 := threadCPU()
				runs[v](ks)
				if r >= 10 {
					ns[v] = append(ns[v], float64(threadCPU()-t0)/chunk)
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
		fmt.Fprintf(&out, "pairs=%d (m=%d, maxMapSize=%d), %d rounds of %d keys; load %s", 2*sz.m, sz.m, sz.dsMap, rounds-10, chunk, loadavg())
		fmt.Fprintf(&out, "%-18s %s\n", "CPU ns/key", "p25 / median / p75      per round: it / ours, p25 / median / p75")
		for i, n := range names {
			rr := ratio(ns[i], ns[0])
			fmt.Fprintf(&out, "%-18s %6.1f / %6.1f / %6.1f   %5.2f / %5.2f / %5.2f\n", n,
				pct(ns[i], .25), pct(ns[i], .5), pct(ns[i], .75), pct(rr, .25), pct(rr, .5), pct(rr, .75))
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
