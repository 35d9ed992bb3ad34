package itest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// EnvMemLimit overrides WatchMemory's limit, in GiB (0 turns the watch off).
const EnvMemLimit = "TRENDING_TEST_MEM_GIB"

// EnvMemReport, set to 1, makes ReportMemory print what the heap still holds after the
// tests: what finished tests left behind (a pipeline not stopped, a cache in a global).
const EnvMemReport = "TRENDING_TEST_MEM_REPORT"

// ReportMemory prints, when EnvMemReport is 1, the memory report of WatchMemory for what
// is still reachable after a collection. Call it from TestMain after m.Run.
func ReportMemory() {
	if os.Getenv(EnvMemReport) != "1" {
		return
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	memReport(os.Stderr, ms.HeapAlloc, 0)
}

// WatchMemory stops a test binary whose Go heap passes limitGiB (or EnvMemLimit) before the
// kernel's OOM killer does: it writes a heap profile to the temporary directory, prints the
// allocation sites holding the most memory and every goroutine's stack, and exits 2. Killed
// by the kernel, `go test` prints only "signal: killed"; this names the leak. Call it from
// TestMain.
func WatchMemory(limitGiB float64) {
	if v := os.Getenv(EnvMemLimit); v != "" {
		if _, err := fmt.Sscan(v, &limitGiB); err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", EnvMemLimit, v, err)
			os.Exit(2)
		}
	}
	if limitGiB <= 0 {
		return
	}
	limit := uint64(limitGiB * (1 << 30))
	go func() {
		var ms runtime.MemStats
		for range time.Tick(time.Second) {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > limit {
				memReport(os.Stderr, ms.HeapAlloc, limit)
				os.Exit(2)
			}
		}
	}()
}

func memReport(w *os.File, heap, limit uint64) {
	if limit == 0 {
		fmt.Fprintf(w, "\nitest.ReportMemory: after the tests the Go heap holds %.2f GiB\n", float64(heap)/(1<<30))
	} else {
		fmt.Fprintf(w, "\nitest.WatchMemory: the Go heap holds %.2f GiB, over the test binary's %.2f GiB (%s)\n",
			float64(heap)/(1<<30), float64(limit)/(1<<30), EnvMemLimit)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("trending-test-heap-%d.pprof", os.Getpid()))
	if f, err := os.Create(path); err == nil {
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
		fmt.Fprintf(w, "heap profile: %s (go tool pprof -top %s)\n", path, path)
	}
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	recs = make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(recs, false)
	recs = recs[:n]
	slices.SortFunc(recs, func(a, b runtime.MemProfileRecord) int {
		return int(b.InUseBytes()>>10) - int(a.InUseBytes()>>10)
	})
	fmt.Fprintln(w, "largest allocation sites in use (sampled):")
	for _, r := range recs[:min(len(recs), 12)] {
		var fns []string
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if !strings.HasPrefix(f.Function, "runtime.") {
				fns = append(fns, fmt.Sprintf("%s:%d", f.Function, f.Line))
			}
			if !more || len(fns) == 6 {
				break
			}
		}
		fmt.Fprintf(w, "  %8.1f MiB in %d objects: %s\n", float64(r.InUseBytes())/(1<<20), r.InUseObjects(), strings.Join(fns, " < "))
	}
	buf := make([]byte, 8<<20)
	fmt.Fprintf(w, "goroutines:\n%s\n", buf[:runtime.Stack(buf, true)])
}
