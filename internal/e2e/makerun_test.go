// Package e2e holds the end-to-end test of the README's first command: a fresh clone, `make
// run`, and the whole pipeline seen through its API.
//
// In detail (DESIGN.md's file map has the line): `make run` from a fresh clone: live lists
// for every window, a calendar hour flipping to exact, readiness, a clean Ctrl-C;
// `kill_test.go`: the built binary's speed workers and archiver as child processes against
// the real Kafka and MinIO, SIGKILLed mid-stream, then archive, batch, DLQ and speed lists
// against loadgen's truth; `upload_test.go`: the archiver killed between an upload and its
// commit (`TRENDING_FAULT`), the raw objects holding offsets twice and the deduplicated
// read equal to what was sent; `batchfault_test.go`: `trending batch run` with ClickHouse
// stopped; `kafkafault_test.go`: the Kafka broker restarted under running speed, archive
// and merge children; `outage_test.go`: the broker away 60 s under the split roles and
// `trending up` at once, and the DLQ under a paused worker and a broker restart;
// `miniofault_test.go`: MinIO stopped under a running speed worker; `pause_test.go`: a
// speed worker SIGSTOPped past its session, then woken; `titles_test.go`: `speed`,
// `archive`, `merge --titles` and `batch run --titles` as child processes on the real
// servers, a closed hour's list with the file's titles from the merger and then from the
// batch; `tour_test.go`: the README's tour run as written against `trending up`;
// `fixture_test.go`: a test's topic, bucket, role flags and a producer with its truth;
// `bin_test.go`: the binary built once for the package's tests
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMakeRun clones the repository, runs `make run` there with time acceleration, and within
// a bounded time sees non-empty live lists for every window, a calendar hour flip from
// approximate to exact, the lists per region of eu, us and apac (live, and an exact hour of
// each), /readyz ready, and an event POSTed now in the live hour list within
// seconds (checkFreshness); then stops it with Ctrl-C and checks it stopped cleanly.
func TestMakeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: builds and runs the whole pipeline for about two minutes")
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
	args := fmt.Sprintf("--listen %s --data %s --backfill 2h --speedup 240 --batch-every 2s --archive-roll 5s --log-format json", addr, filepath.Join(t.TempDir(), "data"))
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
	deadline := time.Now().Add(5 * time.Minute) // includes building the binary in the clone

	// Live lists for every window.
	for _, w := range []string{"hour", "day", "month", "all"} {
		waitUntil(t, deadline, "a non-empty live "+w+" list", func() (bool, string) {
			var l struct {
				Items []struct{ ItemID string } `json:"items"`
			}
			code, body := get(base + "/v1/trending?window=" + w + "&limit=5")
			if code != 200 || json.Unmarshal(body, &l) != nil {
				return false, fmt.Sprintf("%d %s", code, body)
			}
			return len(l.Items) > 0, string(body)
		})
	}
	// A calendar hour seen as the speed layer's (live while open, provisional once closed),
	// then exact.
	seenSpeed := map[string]bool{}
	waitUntil(t, deadline, "a calendar hour turning from live or provisional to exact", func() (bool, string) {
		now := time.Now().UTC()
		code, body := get(fmt.Sprintf("%s/v1/windows?window=hour&from=%s&to=%s", base,
			now.Add(-3*time.Hour).Truncate(time.Hour).Format(time.RFC3339), now.Truncate(time.Hour).Add(time.Hour).Format(time.RFC3339)))
		var ws struct {
			Windows []struct{ Start, Status string } `json:"windows"`
		}
		if code != 200 || json.Unmarshal(body, &ws) != nil {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		for _, w := range ws.Windows {
			switch w.Status {
			case "live", "provisional":
				seenSpeed[w.Start] = true
			case "exact":
				if seenSpeed[w.Start] {
					return true, string(body)
				}
			}
		}
		return false, string(body)
	})
	// The lists per region of the load generator's servers (up keeps eu, us and apac): live,
	// and a closed hour of each exact.
	for _, r := range []string{"eu", "us", "apac"} {
		waitUntil(t, deadline, "a non-empty live hour list of region "+r+" and an exact calendar hour of it", func() (bool, string) {
			var l struct {
				Region string                    `json:"region"`
				Items  []struct{ ItemID string } `json:"items"`
			}
			code, body := get(base + "/v1/trending?window=hour&limit=5&region=" + r)
			if code != 200 || json.Unmarshal(body, &l) != nil || l.Region != r || len(l.Items) == 0 {
				return false, fmt.Sprintf("%d %s", code, body)
			}
			var ws struct {
				Counts map[string]int `json:"counts"`
			}
			code, body = get(base + "/v1/windows?window=hour&region=" + r)
			return code == 200 && json.Unmarshal(body, &ws) == nil && ws.Counts["exact"] > 0, string(body)
		})
	}
	waitUntil(t, deadline, "/readyz ready", func() (bool, string) {
		code, body := get(base + "/readyz")
		return code == 200, string(body)
	})
	// The backfill replayed: the load generator runs in real time. (A probe dated now sent
	// during the replay would move its partition's watermark an hour ahead of the replay,
	// which would then come too late there.)
	waitUntil(t, deadline, "the live hour list in real time (as_of within 5s of now)", func() (bool, string) {
		var l struct {
			AsOf time.Time `json:"as_of"`
		}
		code, body := get(base + "/v1/trending?window=hour&limit=1")
		if code != 200 || json.Unmarshal(body, &l) != nil {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		return time.Since(l.AsOf) < 5*time.Second, string(body)
	})
	checkTitles(t, base)
	checkFreshness(t, base)

	// Ctrl-C: everything stops in order and the process says so.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		stopped = true
	case <-time.After(90 * time.Second):
		t.Fatal("make run did not stop within 90s of Ctrl-C")
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"trending up stopped"`) || strings.Contains(out, "panic:") {
		t.Fatalf("no clean stop in the output")
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"msg":"trending up stopped"`) && strings.Contains(line, `"err"`) && !strings.Contains(line, `"err":null`) {
			t.Fatalf("stopped with an error: %s", line)
		}
	}
}

// freshnessBound is how soon after its 202 an event dated now must be in the served live
// hour list: the ingest's flush (1 s), a speed publish (every second, the open minute
// included), the merger (at most 1 s more) and the cache (at once on the embedded store),
// with room for a busy machine.
const freshnessBound = 10 * time.Second

// checkFreshness POSTs ten million views of a new item dated now (ten events of a million,
// the most one event may carry), so it ranks first above the load generator's items, and
// checks that it is in GET /v1/trending?window=hour within freshnessBound of the 202, that
// the list's as_of is at or after the event's time (the list counts it) and within seconds of
// now, and that the list says which span of event time it covers (window_start, window_end).
func checkFreshness(t *testing.T, base string) {
	t.Helper()
	item := fmt.Sprintf("fresh-%d", time.Now().UnixNano())
	ts := time.Now().UTC()
	var batch []map[string]any
	for range 10 {
		batch = append(batch, map[string]any{"item_id": item, "count": 1_000_000, "ts": ts.Format(time.RFC3339Nano)})
	}
	body, _ := json.Marshal(batch)
	resp, err := client.Post(base+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /v1/events: %v", err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	accepted := time.Now()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %d %s", resp.StatusCode, reply)
	}

	type list struct {
		AsOf        time.Time `json:"as_of"`
		WindowStart time.Time `json:"window_start"`
		WindowEnd   time.Time `json:"window_end"`
		Items       []struct {
			Rank   int    `json:"rank"`
			ItemID string `json:"item_id"`
			Views  uint64 `json:"views"`
		} `json:"items"`
	}
	// Poll every 50 ms; past the bound keep looking for a minute, so a failure says how late
	// the event was rather than only that it was.
	var (
		l     list
		last  string
		seen  time.Time
		views uint64
		rank  int
	)
	for seen.IsZero() && time.Since(accepted) < freshnessBound+time.Minute {
		code, b := get(base + "/v1/trending?window=hour&limit=100")
		l = list{}
		if code == 200 && json.Unmarshal(b, &l) == nil {
			for _, it := range l.Items {
				if it.ItemID == item {
					seen, views, rank = time.Now(), it.Views, it.Rank
				}
			}
		}
		last = fmt.Sprintf("%d %.300s", code, b)
		if seen.IsZero() {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if seen.IsZero() {
		t.Fatalf("event %s (ts %s) not in the live hour list %s after its 202; last answer: %s",
			item, ts.Format(time.RFC3339Nano), freshnessBound+time.Minute, last)
	}
	delay := seen.Sub(accepted)
	t.Logf("freshness: event %s in the live hour list %.2fs after its 202 (rank %d, %d views; as_of %s, window %s to %s)",
		item, delay.Seconds(), rank, views, l.AsOf.Format(time.RFC3339Nano), l.WindowStart.Format(time.RFC3339Nano), l.WindowEnd.Format(time.RFC3339Nano))
	if delay > freshnessBound {
		t.Errorf("the event took %.2fs from its 202 to the live hour list, want at most %s", delay.Seconds(), freshnessBound)
	}
	if views < 10_000_000 || rank != 1 {
		t.Errorf("the event's item: rank %d with %d views, want rank 1 with at least 10,000,000", rank, views)
	}
	// The list counts the event, so its as_of (the newest event time counted) is at or after
	// the event's second (the ingest pre-sums per second), and the load generator keeps it
	// near now.
	if l.AsOf.Before(ts.Truncate(time.Second)) || l.AsOf.After(seen.Add(2*time.Second)) || seen.Sub(l.AsOf) > 5*time.Second {
		t.Errorf("as_of %s: want at or after the event's second %s and within 5s of when it was served (%s)",
			l.AsOf.Format(time.RFC3339Nano), ts.Truncate(time.Second).Format(time.RFC3339), seen.UTC().Format(time.RFC3339Nano))
	}
	if l.WindowStart.IsZero() || l.WindowEnd.IsZero() {
		t.Errorf("live hour list without window_start or window_end: %s", last)
	} else if span := l.WindowEnd.Sub(l.WindowStart); !l.WindowEnd.Equal(l.AsOf) || l.WindowStart.After(ts) || span < 59*time.Minute || span > 62*time.Minute {
		t.Errorf("window %s to %s (%s): want it to end at as_of %s, span about an hour and include the event's time %s",
			l.WindowStart.Format(time.RFC3339Nano), l.WindowEnd.Format(time.RFC3339Nano), span, l.AsOf.Format(time.RFC3339Nano), ts.Format(time.RFC3339Nano))
	}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var client = &http.Client{Timeout: 5 * time.Second}

func get(url string) (int, []byte) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func waitUntil(t *testing.T, deadline time.Time, what string, check func() (bool, string)) {
	t.Helper()
	var last string
	for time.Now().Before(deadline) {
		ok, detail := check()
		if ok {
			t.Logf("%s: ok", what)
			return
		}
		last = detail
		time.Sleep(time.Second)
	}
	if len(last) > 600 {
		last = last[:600] + "..."
	}
	t.Fatalf("timed out waiting for %s; last answer: %s", what, last)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) tail(n int) string {
	sc := bufio.NewScanner(strings.NewReader(s.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkTitles: the served lists carry the load generator's invented titles and thumbnails, and
// each thumbnail URL answers an image from the same API.
func checkTitles(t *testing.T, base string) {
	t.Helper()
	var l struct {
		Items []struct {
			ItemID    string `json:"item_id"`
			Title     string `json:"title"`
			Thumbnail string `json:"thumbnail_url"`
		} `json:"items"`
	}
	code, body := get(base + "/v1/trending?window=hour&limit=10")
	if code != 200 || json.Unmarshal(body, &l) != nil || len(l.Items) == 0 {
		t.Fatalf("the hour list: %d %.300s", code, body)
	}
	for _, it := range l.Items {
		if it.Title == "" || it.Thumbnail != "/demo/thumbnail?id="+it.ItemID {
			t.Fatalf("item %s: title %q, thumbnail %q; want the load generator's metadata", it.ItemID, it.Title, it.Thumbnail)
		}
	}
	resp, err := http.Get(base + l.Items[0].Thumbnail)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !bytes.HasPrefix(img, []byte("<svg")) {
		t.Fatalf("thumbnail %s: %d %s %.100s", l.Items[0].Thumbnail, resp.StatusCode, resp.Header.Get("Content-Type"), img)
	}
}
