package main

import (
	"context"
	"encoding/json"
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
	"trending/model"
	"trending/serving/api"
)

// TestUpSeed004Windows runs the whole pipeline (`trending up --window-preset seed-004`, no
// built-in load) over a generated stream of the last ISO week and more: the live minute and
// 7 days are served and agree with the truth over the span they state (by sketch, as every
// window of the preset: never low, at most the bound high), the closed calendar week and day
// (yesterday) turn exact through the batch and equal the truth, and windows outside the set
// are a 400 that lists the set.
func TestUpSeed004Windows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	seed004Windows(t, k.Addr, nil)
}

func TestUpSeed004WindowsKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	seed004Windows(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "seed004")})
}

func seed004Windows(t *testing.T, broker string, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	// Small sketches: every window counts by sketch (102 of them per partition).
	up := startInProcess(t, append([]string{"up", "--window-preset", "seed-004", "--sketch-width", "4096",
		"--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--batch-every", "500ms",
		"--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)...)
	base := "http://" + addr
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitUntil := func(what string, limit time.Duration, ok func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(limit)
		last := ""
		for time.Now().Before(deadline) {
			var done bool
			if done, last = ok(); done {
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Fatalf("%s: never; last %s", what, last)
	}
	waitUntil("the API up", 60*time.Second, func() (bool, string) { c, b := get("/readyz"); return c == 200, b })

	// The set is what the API says it serves.
	if c, b := get("/v1/windows/config"); c != 200 || !strings.Contains(b, `"live":["minute","hour","day","7d"],"calendar":["day","week"]`) {
		t.Fatalf("/v1/windows/config: %d %s", c, b)
	}

	// The last closed ISO week (the one before, when this one began less than 3 hours ago)
	// and this week up to the last hour, unpaced, without late events: 0.05 views a second,
	// then 20 a second for the last two minutes, so that every partition's event time
	// reaches the last minute (a partition's windows end at its own newest event).
	now := time.Now().UTC()
	week := model.Week.Back(model.Week.Align(now), 1)
	if now.Sub(model.Week.Next(week)) < 3*time.Hour {
		week = model.Week.Back(week, 1)
	}
	end := now.Truncate(time.Hour).Add(-time.Hour)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	t0 := time.Now()
	for _, seg := range []struct {
		from, to time.Time
		rate     float64
	}{{week, end.Add(-2 * time.Minute), 0.05}, {end.Add(-2 * time.Minute), end, 20}} {
		sc := stream.DefaultConfig()
		sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration = 60, seg.rate, 2, seg.from, seg.to.Sub(seg.from)
		sc.Late, sc.Malformed, sc.Seed = 0, 0, 4
		rc := loadgen.DefaultRunConfig()
		rc.Stream, rc.Speedup, rc.Truth = sc, 0, truth
		st, err := loadgen.Run(ctx, rc, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("produced %d events (%d views) from %s to %s", st.Events, st.Views, seg.from.Format(time.RFC3339), seg.to.Format(time.RFC3339))
	}

	list := func(path string) (api.ListResponse, int, string) {
		c, b := get(path)
		var l api.ListResponse
		if c == 200 {
			if err := json.Unmarshal([]byte(b), &l); err != nil {
				t.Fatalf("%s: %v: %s", path, err, b)
			}
		}
		return l, c, b
	}
	// The live lists reach the stream's last minute and settle: every partition has counted
	// all it was sent (the items stay put for 3 s; the merged list's as-of is its newest
	// partition's, so reaching the last minute alone does not say the others have). A
	// partition whose last event came a second before another's stays "stale" (partial):
	// up's staleness is 3 publish intervals of event time.
	last := end.Add(-time.Minute)
	for _, win := range []string{"minute", "7d", "hour", "day"} {
		var items string
		var since time.Time
		waitUntil("live "+win+" settled in the last minute", 180*time.Second, func() (bool, string) {
			l, c, b := list("/v1/trending?window=" + win + "&limit=100")
			if c != 200 || l.AsOf.Before(last) {
				return false, b
			}
			if got, _ := json.Marshal(l.Items); string(got) != items {
				items, since = string(got), time.Now()
			}
			return time.Since(since) >= 3*time.Second, b
		})
	}
	t.Logf("live lists as of the last minute %s after the load began", time.Since(t0).Round(time.Second))
	minute, _, _ := list("/v1/trending?window=minute&limit=100")
	if minute.Status != model.StatusLive || minute.ErrorBound == nil || minute.WindowStart.IsZero() {
		t.Fatalf("minute: status %s bound %v window start %s: want a live sketch list with its bound and span", minute.Status, minute.ErrorBound, minute.WindowStart)
	}
	if span := minute.WindowEnd.Sub(minute.WindowStart); span > 2*time.Minute {
		t.Errorf("minute spans %s", span)
	}
	tm := truth.Range(minute.WindowStart, minute.WindowEnd)
	if len(minute.Items) == 0 || minute.Items[0].ItemID != tm.Top(1)[0].Item {
		t.Errorf("minute: top %v, the truth's %v", minute.Items[:min(1, len(minute.Items))], tm.Top(1))
	}
	for _, it := range minute.Items {
		if tr := tm.Get(it.ItemID); it.Views < tr || float64(it.Views-tr) > minute.ErrorBound.MaxOvercount {
			t.Errorf("minute: %s estimate %d, truth %d, bound %.1f", it.ItemID, it.Views, tr, minute.ErrorBound.MaxOvercount)
		}
	}
	d7, _, _ := list("/v1/trending?window=7d&limit=100")
	if d7.ErrorBound == nil || d7.Exact || d7.WindowEnd.Sub(d7.WindowStart) < 6*24*time.Hour || !d7.WindowStart.Equal(d7.WindowStart.Truncate(24*time.Hour)) {
		t.Fatalf("7d: bound %v exact %v from %s, span %s: want a sketch list of 7 daily buckets (6 closed days and the open one)",
			d7.ErrorBound, d7.Exact, d7.WindowStart, d7.WindowEnd.Sub(d7.WindowStart))
	}
	t7 := truth.Range(d7.WindowStart, d7.WindowEnd)
	if len(d7.Items) == 0 || d7.Items[0].ItemID != t7.Top(1)[0].Item {
		t.Errorf("7d: top %v, the truth's %v", d7.Items[:min(1, len(d7.Items))], t7.Top(1))
	}
	for _, it := range d7.Items {
		if tr := t7.Get(it.ItemID); it.Views < tr || float64(it.Views-tr) > d7.ErrorBound.MaxOvercount {
			t.Errorf("7d: %s estimate %d, truth %d, bound %.1f", it.ItemID, it.Views, tr, d7.ErrorBound.MaxOvercount)
		}
	}
	if l, c, b := list("/v1/trending?window=1h&limit=3"); c != 200 || l.Window != "hour" {
		t.Errorf("alias 1h: %d %s", c, b)
	}

	// The closed week turns exact and equals the truth.
	path := "/v1/trending?window=week&limit=100&start=" + week.Format(time.RFC3339)
	waitUntil("week "+week.Format(time.DateOnly)+" exact", 180*time.Second, func() (bool, string) {
		l, c, b := list(path)
		return c == 200 && l.Status == model.StatusExact, b
	})
	t.Logf("the week exact %s after the load began", time.Since(t0).Round(time.Second))
	wl, _, _ := list(path)
	want := truth.Range(week, model.Week.Next(week)).Top(len(wl.Items) + 1)
	if len(want) > len(wl.Items) && want[len(wl.Items)].Count == wl.Items[len(wl.Items)-1].Views {
		want = want[:len(wl.Items)] // a tie at the cut: either item may be listed
	}
	want = want[:min(len(want), len(wl.Items))]
	if len(want) != len(wl.Items) || len(wl.Items) == 0 {
		t.Fatalf("week: %d items, the truth %d", len(wl.Items), len(want))
	}
	for i, it := range wl.Items {
		if it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(wl.Items)-1) {
			t.Errorf("week rank %d: %s %d, the truth %s %d", i+1, it.ItemID, it.Views, want[i].Item, want[i].Count)
		}
	}
	if wl.Reconciliation == nil || !wl.End.Equal(model.Week.Next(week)) {
		t.Errorf("week: reconciliation %v end %s", wl.Reconciliation, wl.End)
	}
	t.Logf("week %s exact: %d items, top %s %d; speed recall@K %v", week.Format(time.DateOnly), len(wl.Items), wl.Items[0].ItemID, wl.Items[0].Views, wl.Reconciliation)

	// Yesterday turns exact too (seed 004: "accurate for windows that have already closed"),
	// when the stream reached past its end.
	if yesterday := now.Truncate(24*time.Hour).AddDate(0, 0, -1); end.After(yesterday.AddDate(0, 0, 1).Add(2 * time.Minute)) {
		path := "/v1/trending?window=day&limit=100&start=" + yesterday.Format(time.RFC3339)
		waitUntil("day "+yesterday.Format(time.DateOnly)+" exact", 180*time.Second, func() (bool, string) {
			l, c, b := list(path)
			return c == 200 && l.Status == model.StatusExact, b
		})
		dl, _, _ := list(path)
		want := truth.Range(yesterday, yesterday.AddDate(0, 0, 1)).Top(len(dl.Items) + 1)
		if len(want) > len(dl.Items) && len(dl.Items) > 0 && want[len(dl.Items)].Count == dl.Items[len(dl.Items)-1].Views {
			want = want[:len(dl.Items)] // a tie at the cut: either item may be listed
		}
		want = want[:min(len(want), len(dl.Items))]
		if len(want) != len(dl.Items) || len(dl.Items) == 0 {
			t.Fatalf("day: %d items, the truth %d", len(dl.Items), len(want))
		}
		for i, it := range dl.Items {
			if !it.Exact || it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(dl.Items)-1) {
				t.Errorf("day rank %d: %s %d (exact %t), the truth %s %d", i+1, it.ItemID, it.Views, it.Exact, want[i].Item, want[i].Count)
			}
		}
		if c, b := get("/v1/windows?window=day&from=" + yesterday.Format(time.RFC3339) + "&to=" + yesterday.AddDate(0, 0, 1).Format(time.RFC3339)); c != 200 || !strings.Contains(b, `"status":"exact"`) {
			t.Errorf("/v1/windows?window=day: %d %s, want yesterday exact", c, b)
		}
		t.Logf("day %s exact %s after the load began: %d items", yesterday.Format(time.DateOnly), time.Since(t0).Round(time.Second), len(dl.Items))
	} else {
		t.Logf("the stream ends at %s, before yesterday closed: the calendar day is not checked", end.Format(time.RFC3339))
	}

	// Outside the set: a 400 that lists it.
	const served = "live windows minute, hour, day, 7d (aliases 1h, 24h); calendar windows day, week"
	for _, p := range []string{"/v1/trending?window=month", "/v1/trending?window=all",
		"/v1/trending?window=hour&start=" + end.Format(time.RFC3339)} {
		if c, b := get(p); c != 400 || !strings.Contains(b, "calendar windows day, week") {
			t.Errorf("%s: %d %s, want a 400 listing %s", p, c, b, served)
		}
	}
	up.stop()
}
