package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMakeRunAllTimeExact clones the repository and runs `make run` with a replay that spans
// the last UTC midnight (the backfill reaches 10 minutes before it, replayed 1,000 times
// faster at 50 views a second): the built-in scheduler's nightly work publishes the all-time
// base through that midnight once yesterday is archived, and `window=all` turns exact with a
// boundary at it; then Ctrl-C stops it cleanly. Before issue 27 it stayed the sketch list
// without a boundary.
func TestMakeRunAllTimeExact(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs the whole pipeline for a few minutes")
	}
	now := time.Now().UTC()
	midnight := now.Truncate(24 * time.Hour)
	if now.Sub(midnight) < 35*time.Minute {
		t.Skipf("%s is within 35 minutes after midnight UTC: the scheduler's nightly run starts at 00:30", now.Format(time.TimeOnly))
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", strings.TrimSpace(string(top)), dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	backfill := now.Sub(midnight).Truncate(time.Minute) + 10*time.Minute
	args := fmt.Sprintf("--listen %s --data %s --backfill %s --speedup 1000 --rate 50 --batch-every 2s --archive-roll 5s --log-format json",
		addr, filepath.Join(t.TempDir(), "data"), backfill)
	cmd := exec.Command("make", "-s", "run", "ARGS="+args)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("make run output (last 60 lines):\n%s", logs.tail(60))
		}
	}()
	base := "http://" + addr
	// Building the binary in the clone, the replay of up to a day at 1,000x, the nightly run.
	deadline := time.Now().Add(10 * time.Minute)
	started := time.Now()
	var l struct {
		AsOf     time.Time `json:"as_of"`
		Source   string    `json:"source"`
		Exact    bool      `json:"exact"`
		Boundary time.Time `json:"boundary"`
		Items    []struct {
			ItemID string `json:"item_id"`
			Views  uint64 `json:"views"`
			Exact  bool   `json:"exact"`
		} `json:"items"`
	}
	waitUntil(t, deadline, "window=all exact with a boundary", func() (bool, string) {
		code, body := get(base + "/v1/trending?window=all&limit=100")
		l.Exact, l.Boundary = false, time.Time{}
		if code != 200 || json.Unmarshal(body, &l) != nil {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		return l.Exact && !l.Boundary.IsZero(), string(body)
	})
	t.Logf("window=all exact %s after make run started: as of %s, boundary %s, top %s %d", time.Since(started).Round(time.Second),
		l.AsOf.Format(time.RFC3339), l.Boundary.Format(time.RFC3339), l.Items[0].ItemID, l.Items[0].Views)
	if !l.Boundary.Equal(midnight) || l.Source != "speed" || len(l.Items) != 100 {
		t.Errorf("all-time list: boundary %s (want %s), source %s (want speed, the hybrid), %d items (want 100)", l.Boundary, midnight, l.Source, len(l.Items))
	}
	for i, it := range l.Items {
		if !it.Exact || (i > 0 && it.Views > l.Items[i-1].Views) {
			t.Errorf("rank %d: %s %d exact %t: want exact items in order", i+1, it.ItemID, it.Views, it.Exact)
		}
	}

	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		stopped = true
	case <-time.After(90 * time.Second):
		t.Fatal("make run did not stop within 90s of Ctrl-C")
	}
	clean := false
	for _, line := range strings.Split(logs.String(), "\n") {
		clean = clean || (strings.Contains(line, `"msg":"trending up stopped"`) && strings.Contains(line, `"err":null`))
	}
	if !clean || strings.Contains(logs.String(), "panic:") {
		t.Errorf("no clean stop in the output")
	}
}
