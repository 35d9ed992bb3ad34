package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tourBlock is the README's tour: the first ```sh block after "## A tour".
func tourBlock(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "\n## A tour\n")
	if i < 0 {
		t.Fatal(`README.md has no "## A tour"`)
	}
	s = s[i:]
	start := strings.Index(s, "```sh\n")
	end := strings.Index(s[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("the tour has no ```sh block")
	}
	return s[start+6 : start+6+end]
}

// TestReadmeTour runs the README's tour as written, on any day, against a running `trending
// up` (the binary, its load generator replaying the last two hours): every line succeeds,
// no answer is an API error, and what it fetches is there (a list of the last closed hour,
// the region's list, the windows, the POST's 202, the Arrow stream, the batch status).
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: runs the whole pipeline")
	}
	block := tourBlock(t)
	bin := binary(t)
	addr := freeAddr(t)
	dir := t.TempDir()
	up := exec.Command(bin, "up", "--listen", addr, "--data", filepath.Join(dir, "data"), "--backfill", "2h", "--speedup", "240",
		"--batch-every", "2s", "--archive-roll", "5s", "--log-format", "json")
	up.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs syncBuffer
	up.Stdout, up.Stderr = &logs, &logs
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-up.Process.Pid, syscall.SIGTERM)
		up.Wait()
		if t.Failed() {
			t.Logf("trending up (last 40 lines):\n%s", logs.tail(40))
		}
	}()
	api := "http://" + addr
	// The tour's lines want the live hour and the last closed hour's list: wait for both.
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour).Format(time.RFC3339)
	deadline := time.Now().Add(4 * time.Minute)
	for {
		ok := true
		for _, q := range []string{"/v1/trending?window=hour&limit=5", "/v1/trending?window=hour&start=" + hour} {
			resp, err := http.Get(api + q)
			if err != nil || resp.StatusCode != 200 {
				ok = false
			}
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the live hour and the last closed hour never served")
		}
		time.Sleep(time.Second)
	}
	// Run it where bin/trending is this build, with the tour's API the test's address.
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "trending")); err != nil {
		t.Fatal(err)
	}
	script := strings.Replace(block, "API=http://127.0.0.1:8080", "API="+api, 1)
	if script == block {
		t.Fatal("the tour no longer sets API=http://127.0.0.1:8080: update this test with it")
	}
	sh := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the tour failed: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{`"window":"hour"`, `"region":"eu"`, `"status":"`, `{"accepted":1}`, " windows: ", "capacity plan:", "recall"} {
		if !strings.Contains(got, want) {
			t.Errorf("the tour's output lacks %q:\n%.3000s", want, got)
		}
	}
	if strings.Contains(got, `"error":`) {
		t.Errorf("an API answer in the tour is an error:\n%.3000s", got)
	}
	if st, err := os.Stat(filepath.Join(dir, "day.arrow")); err != nil || st.Size() == 0 {
		t.Errorf("day.arrow: %v", err)
	}
}
