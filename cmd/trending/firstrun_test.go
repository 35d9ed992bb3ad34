package main

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpFailedStartLeavesNothing: the likeliest failure of a first start, a busy port, fails
// before --data is created, so the next start is a first start (with its backfill).
func TestUpFailedStartLeavesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "data")
	_, err = runTrending(t, "up", "--data", data, "--listen", ln.Addr().String())
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("up on a busy port: %v, want a usage error naming --listen", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed start left %s behind (%v)", data, err)
	}
	// Every role's flags are checked before anything is created: the load generator's
	// (its stream as a whole too, as loadgen checks it) and the merger's.
	for _, bad := range [][]string{{"--speedup", "0"}, {"--viral", "A@+0s:60%:1h,B@+1m:60%:1h"}, {"--staleness", "-1s"}} {
		_, err = runTrending(t, append([]string{"up", "--data", data, "--listen", freeAddr(t)}, bad...)...)
		if !errors.As(err, new(usageError)) {
			t.Fatalf("%s: %v, want a usage error", bad, err)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: a refused flag left %s behind (%v)", bad, data, err)
		}
	}
}

// TestUpDataLockAndBackfillByContent: a second up on the same --data fails at once naming
// the first; and whether the backfill runs is decided by what the log holds: a start that
// produced nothing (here --no-load) leaves the next one its backfill, which the one after
// skips.
func TestUpDataLockAndBackfillByContent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	data := filepath.Join(t.TempDir(), "data")
	first := startInProcess(t, "up", "--data", data, "--listen", freeAddr(t), "--no-load")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(first.out.String(), "Ctrl-C stops everything") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	_, err := runTrending(t, "up", "--data", data, "--listen", freeAddr(t), "--no-load")
	if err == nil || !strings.Contains(err.Error(), "is in use by another trending process (pid ") {
		t.Fatalf("a second up on the same data: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the second up failed after %v, want at once", took)
	}
	first.stop()

	// The banner's load line says whether this start replays the past.
	second := startInProcess(t, "up", "--data", data, "--listen", freeAddr(t), "--backfill", "10m", "--speedup", "600", "--rate", "50")
	for !strings.Contains(second.out.String(), "Ctrl-C stops everything") && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // some of the replay reaches the log
	second.stop()
	if out := second.out.String(); !strings.Contains(out, "replaying the last 10m0s at 600x first") {
		t.Fatalf("after a start that produced nothing, the backfill did not run:\n%.4000s", out)
	}
	third := startInProcess(t, "up", "--data", data, "--listen", freeAddr(t), "--backfill", "10m")
	for !strings.Contains(third.out.String(), "Ctrl-C stops everything") && time.Now().Before(deadline.Add(90*time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	third.stop()
	if out := third.out.String(); !strings.Contains(out, "Ctrl-C stops everything") || strings.Contains(out, "replaying the last") {
		t.Errorf("a restart replayed the backfill again:\n%.4000s", out)
	}
}
