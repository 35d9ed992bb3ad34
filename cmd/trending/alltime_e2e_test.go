package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/stream"
	"trending/loadgen"
)

// TestUpAllTimeExact runs `trending up` (no built-in load) over a stream that spans the last
// UTC midnight, with late and malformed events: once the built-in scheduler's nightly work
// has published the all-time base through that midnight, the live all-time list is the
// hybrid (a boundary at midnight) and turns exact, and then equals the truth's all-time top
// K as of its as_of. Before the fix the merger of up (staleness 3 s) never took the hybrid:
// the partitions' counts since the boundary trail their running all-time lists by the
// lateness and more, so the list stayed the sketch list without a boundary.
func TestUpAllTimeExact(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	now := time.Now().UTC()
	if now.Sub(now.Truncate(24*time.Hour)) < 35*time.Minute {
		// The scheduler's nightly run starts 30 minutes after midnight (ScheduleConfig.NightlyAt).
		t.Skipf("%s is within 35 minutes after midnight UTC: the nightly run that publishes the all-time base has not started yet", now.Format(time.TimeOnly))
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close) // after up has stopped (cleanups run last first)
	upAllTimeExact(t, now, k.Addr, nil)
}

// TestUpAllTimeExactKafka is TestUpAllTimeExact on the real Kafka and MinIO.
func TestUpAllTimeExactKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	now := time.Now().UTC()
	if now.Sub(now.Truncate(24*time.Hour)) < 35*time.Minute {
		t.Skipf("%s is within 35 minutes after midnight UTC: the nightly run that publishes the all-time base has not started yet", now.Format(time.TimeOnly))
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upAllTimeExact(t, now, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "alltime")})
}

func upAllTimeExact(t *testing.T, now time.Time, broker string, extra []string) {
	midnight := now.Truncate(24 * time.Hour)
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	const listK = 20
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--k", "20", "--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--batch-every", "500ms",
		"--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)...)
	base := "http://" + addr
	waitFor(t, "the API up", 60*time.Second, func() (bool, string) { c, b := httpGet(base + "/readyz"); return c == 200, b })

	// An hour before midnight to an hour after (or to a minute before now), unpaced, with
	// late and malformed events; the last two minutes 40 views a second, so that every
	// partition's newest event is within up's staleness (3 s of event time) of the others'.
	// The stream ends 45 s into a minute, so every partition's last closed minute is the same.
	end := midnight.Add(time.Hour + 45*time.Second)
	if latest := now.Truncate(time.Minute).Add(-15 * time.Second); end.After(latest) {
		end = latest
	}
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	for i, seg := range []struct {
		from, to time.Time
		rate     float64
	}{{midnight.Add(-time.Hour), end.Add(-2 * time.Minute), 8}, {end.Add(-2 * time.Minute), end, 40}} {
		sc := stream.DefaultConfig()
		sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration = 400, seg.rate, 6, seg.from, seg.to.Sub(seg.from)
		sc.Late, sc.Malformed, sc.Seed = 0.01, 0.002, 11+uint64(i)
		rc := loadgen.DefaultRunConfig()
		rc.Stream, rc.Speedup, rc.Truth = sc, 0, truth // unpaced
		st, err := loadgen.Run(context.Background(), rc, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("produced %d events (%d views, %d late, %d malformed) from %s to %s", st.Events, st.Views, st.Late, st.Malformed,
			seg.from.Format(time.RFC3339), seg.to.Format(time.RFC3339))
	}

	type list struct {
		AsOf       time.Time `json:"as_of"`
		Source     string    `json:"source"`
		Exact      bool      `json:"exact"`
		Incomplete bool      `json:"partial"`
		Boundary   time.Time `json:"boundary"`
		Items      []struct {
			ItemID string `json:"item_id"`
			Views  uint64 `json:"views"`
			Exact  bool   `json:"exact"`
		} `json:"items"`
	}
	var got list
	started := time.Now()
	waitFor(t, "window=all exact with a boundary", 4*time.Minute, func() (bool, string) {
		c, b := httpGet(base + "/v1/trending?window=all&limit=20")
		got = list{}
		if c != 200 || json.Unmarshal([]byte(b), &got) != nil {
			return false, b
		}
		return got.Exact && !got.Boundary.IsZero(), b
	})
	t.Logf("window=all exact %.0fs after the stream was in Kafka: as of %s, boundary %s", time.Since(started).Seconds(),
		got.AsOf.Format(time.RFC3339), got.Boundary.Format(time.RFC3339))
	if !got.Boundary.Equal(midnight) || got.Source != "speed" || got.Incomplete || len(got.Items) != listK {
		t.Fatalf("all-time list: boundary %s (want %s), source %s (want the speed layer's hybrid), partial %t, %d items (want %d)",
			got.Boundary, midnight, got.Source, got.Incomplete, len(got.Items), listK)
	}
	// Exact: every count equals the truth of all time through as_of, in the truth's order (a
	// tie at the cut may list either item).
	want := truth.Range(time.Unix(0, 0), got.AsOf).Top(listK + 1)
	if len(want) <= listK {
		t.Fatalf("the truth has %d items, want more than %d", len(want), listK)
	}
	tieAtCut := want[listK].Count == want[listK-1].Count
	for i, it := range got.Items {
		if !it.Exact || it.Views != want[i].Count || (it.ItemID != want[i].Item && !(tieAtCut && i == listK-1)) {
			t.Errorf("rank %d: %s %d (exact %t), the truth %s %d", i+1, it.ItemID, it.Views, it.Exact, want[i].Item, want[i].Count)
		}
	}
	up.stop()
}

// httpGet returns the status and body of a GET, or 0 and the error.
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls ok every 200 ms until it holds, or fails the test after limit with the last
// thing it saw.
func waitFor(t *testing.T, what string, limit time.Duration, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for time.Now().Before(deadline) {
		var done bool
		if done, last = ok(); done {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(last) > 2000 {
		last = last[:2000] + "..."
	}
	t.Fatalf("%s: never within %s; last %s", what, limit, last)
}
