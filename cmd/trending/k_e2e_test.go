package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/stream"
	"trending/loadgen"
)

// TestUpAndServeFollowK: `up --k 1000` (embedded) serves what it keeps, limit=1000 on
// /v1/trending and k=1000 on /v1/top-videos (seed 003), and `serve --k 1000` over the same
// serving store answers every probe of the API's limits exactly as up did: the two build the
// API's configuration from the same flags the same way, so a difference fails here.
func TestUpAndServeFollowK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close) // after up's stop (cleanups run last first)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	common := []string{"--k", "1000", "--max-age", "7s"}
	upAddr := freeAddr(t)
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", upAddr, "--kafka", k.Addr, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--groups", "", "--log-format", "json", "--log-level", "warn"}, common...)...)
	waitFor(t, "up ready", 60*time.Second, func() (bool, string) { c, b := httpGet("http://" + upAddr + "/readyz"); return c == 200, b })

	// The last 15 minutes over 2,500 items, nearly uniform: well over 1,000 items in the hour.
	w := eventlog.NewWriter([]string{k.Addr}, topic)
	t.Cleanup(func() { w.Close() })
	sc := stream.DefaultConfig()
	sc.Items, sc.Zipf, sc.Rate, sc.Servers, sc.Seed = 2500, 0.5, 100, 4, 3
	sc.Start, sc.Duration = time.Now().UTC().Add(-15*time.Minute).Truncate(time.Second), 15*time.Minute
	rc := loadgen.DefaultRunConfig()
	rc.Stream, rc.Speedup = sc, 0
	if _, err := loadgen.Run(context.Background(), rc, w); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an hour list of 1,000 items", 90*time.Second, func() (bool, string) {
		c, b := httpGet("http://" + upAddr + "/v1/trending?window=hour&limit=1000")
		return c == 200 && itemsIn(t, b, "items") == 1000, fmt.Sprint(c, " ", trimBody(b))
	})
	upProbes := probeLimits(t, "http://"+upAddr)
	t.Logf("up answered:\n%s", strings.Join(upProbes, "\n"))
	up.stop()

	serveAddr := freeAddr(t)
	serve := startInProcess(t, append([]string{"serve", "--store", "bolt:" + filepath.Join(data, "serving.db"), "--listen", serveAddr,
		"--log-format", "json", "--log-level", "warn"}, common...)...)
	waitFor(t, "serve ready", 30*time.Second, func() (bool, string) { c, b := httpGet("http://" + serveAddr + "/readyz"); return c == 200, b })
	serveProbes := probeLimits(t, "http://"+serveAddr)
	serve.stop()

	want := []string{
		"/v1/trending?window=hour&limit=1000: 200, 1000 items, max-age=7",
		`/v1/trending?window=hour&limit=1001: 400 limit "1001": use a whole number from 1 to 1000 (default 50)`,
		"/v1/trending?window=hour: 200, 50 items, max-age=7",
		"/v1/top-videos?window=1h&k=1000: 200, 1000 items, max-age=7",
		`/v1/top-videos?window=1h&k=1001: 400 k "1001": use a whole number from 1 to 1000 (default 50)`,
	}
	for i, p := range want {
		if upProbes[i] != p {
			t.Errorf("up:    %s\n want: %s", upProbes[i], p)
		}
		if serveProbes[i] != upProbes[i] {
			t.Errorf("serve: %s\n up:    %s", serveProbes[i], upProbes[i])
		}
	}
}

// probeLimits asks the API at base for lists at, above and without the limits, and says
// what each answered: the status, and the item count and max-age of a list or the detail
// of an error.
func probeLimits(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	for _, q := range []string{"/v1/trending?window=hour&limit=1000", "/v1/trending?window=hour&limit=1001", "/v1/trending?window=hour",
		"/v1/top-videos?window=1h&k=1000", "/v1/top-videos?window=1h&k=1001"} {
		resp, err := http.Get(base + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			var e struct{ Detail string }
			_ = json.Unmarshal(b, &e)
			out = append(out, fmt.Sprintf("%s: %d %s", q, resp.StatusCode, e.Detail))
			continue
		}
		field := "items"
		if strings.HasPrefix(q, "/v1/top-videos") {
			field = "videos"
		}
		age := strings.TrimPrefix(resp.Header.Get("Cache-Control"), "public, ")
		out = append(out, fmt.Sprintf("%s: %d, %d items, %s", q, resp.StatusCode, itemsIn(t, string(b), field), age))
	}
	return out
}

// itemsIn counts the entries of a response's list field.
func itemsIn(t *testing.T, body, field string) int {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return -1
	}
	var items []json.RawMessage
	if err := json.Unmarshal(m[field], &items); err != nil {
		return -1
	}
	return len(items)
}

func trimBody(b string) string {
	if len(b) > 300 {
		return b[:300] + "..."
	}
	return b
}
