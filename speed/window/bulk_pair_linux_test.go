package window

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"trending/model/event"
	"trending/model/windowset"
)

// threadCPU is the calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return ts.Nano()
}

// TestSlideSketchInterleaved is BenchmarkSlideSketch timed in alternation:
// two partitions with the default sketch windows get the same minutes of
// 100,000 events; each round closes the minute in both, one with
// sketch.AddHashes and one key by key (AddHash), the order flipped every
// round, in CPU time of the thread, so both see the same interference on a
// loaded machine. It checks that both end in the same snapshot. A
// measurement: it runs only with TRENDING_BULK_PAIR=1 (Linux: the thread
// clock).
//
//	TRENDING_BULK_PAIR=1 go test ./speed/window -run SlideSketchInterleaved -v
func TestSlideSketchInterleaved(t *testing.T) {
	if os.Getenv("TRENDING_BULK_PAIR") == "" {
		t.Skip("a measurement: set TRENDING_BULK_PAIR=1")
	}
	defer func() { bulkAdd = true }()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const perMinute, rounds, warm = 100_000, 45, 5
	var ws []WindowConfig
	for _, wc := range DefaultWindows() {
		if wc.Mode == windowset.Sketch {
			ws = append(ws, wc)
		}
	}
	cfg := windowsConfig(ws)
	names := make([]string, perMinute*15)
	for i := range names {
		names[i] = itemName(i)
	}
	bulk, _ := New(cfg)
	one, _ := New(cfg)
	r := rand.New(rand.NewPCG(5, 6))
	var tb, to, ratio []float64
	for m := range rounds {
		ts := t0.Add(time.Duration(m) * time.Minute)
		for range perMinute {
			ev := event.Event{ItemID: names[r.IntN(len(names))], Count: 1 + uint32(r.IntN(3)), TS: ts}
			bulk.Add(ev)
			one.Add(ev)
		}
		close := func(p *Partition, b bool) float64 {
			bulkAdd = b
			c := threadCPU()
			p.AdvanceTo(ts.Add(time.Minute + time.Second))
			return float64(threadCPU()-c) / 1e6
		}
		var a, o float64
		if m%2 == 0 {
			a, o = close(bulk, true), close(one, false)
		} else {
			o, a = close(one, false), close(bulk, true)
		}
		if m >= warm {
			tb, to, ratio = append(tb, a), append(to, o), append(ratio, o/a)
		}
	}
	if string(mustMarshal(t, bulk)) != string(mustMarshal(t, one)) {
		t.Fatal("the two partitions' snapshots differ")
	}
	pct := func(v []float64, p float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	t.Logf("\nload %s%d closed minutes of %d events, default sketch windows (2^18 x 5), CPU ms per close p5 / p25 / median:\n"+
		"AddHashes   %6.1f / %6.1f / %6.1f\nkey by key  %6.1f / %6.1f / %6.1f\nkey by key / AddHashes per round p25 / median / p75: %.2f / %.2f / %.2f\nload %s",
		loadavg(), len(tb), perMinute,
		pct(tb, .05), pct(tb, .25), pct(tb, .5), pct(to, .05), pct(to, .25), pct(to, .5),
		pct(ratio, .25), pct(ratio, .5), pct(ratio, .75), loadavg())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown\n"
	}
	return fmt.Sprint(string(b))
}
