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

// TestUpGroups runs the whole pipeline (`trending up`, whose default keeps lists of the
// regions eu, us and apac; no built-in load) over a generated stream with regions: each
// region's live hour equals the truth of its events over the span it states, the closed
// calendar hour of each region turns exact through the batch and equals that truth, the list
// of all items stays the truth of every event, and the API knows the regions (config, 400s,
// /v1/windows). TestUpEveryExactListIsTheTruth checks every exact list per region too, with
// late and malformed events.
func TestUpGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upGroups(t, k.Addr, nil)
}

func TestUpGroupsKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upGroups(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "groups")})
}

func upGroups(t *testing.T, broker string, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic,
		"--no-load", "--backfill", "0", "--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms",
		"--batch-every", "500ms", "--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)...)
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
	if c, b := get("/v1/windows/config"); c != 200 || !strings.Contains(b, `"groups":{"by":"region","values":["eu","us","apac"],"every":false}`) {
		t.Fatalf("/v1/windows/config: %d %s", c, b)
	}

	// Two hours and a half before the last minute, unpaced, without late events: 3 views a
	// second, then 30 a second for the last two minutes, so that every partition's event time
	// reaches the last minute (a partition's windows end at its own newest event). Servers in
	// eu (two of five), us, apac and mars (no lists).
	now := time.Now().UTC()
	end := now.Truncate(time.Minute)
	closed := end.Truncate(time.Hour).Add(-time.Hour) // closes 1m after its end; the archive is past it
	if end.Sub(closed) < time.Hour+5*time.Minute {
		closed = closed.Add(-time.Hour)
	}
	from := closed.Add(-30 * time.Minute)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	for _, seg := range []struct {
		from, to time.Time
		rate     float64
	}{{from, end.Add(-2 * time.Minute), 3}, {end.Add(-2 * time.Minute), end, 30}} {
		sc := stream.DefaultConfig()
		sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration = 80, seg.rate, 5, seg.from, seg.to.Sub(seg.from)
		sc.Late, sc.Malformed, sc.Seed = 0, 0, 5
		sc.Regions = []string{"eu", "us", "apac", "eu", "mars"}
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
	// compare checks a list against the truth of [from, to): the same counts in the same
	// order (a tie at the cut may list either item).
	compare := func(name string, l api.ListResponse, tr *stream.Truth, from, to time.Time) {
		t.Helper()
		want := tr.Range(from, to).Top(len(l.Items) + 1)
		if len(want) > len(l.Items) && len(l.Items) > 0 && want[len(l.Items)].Count == l.Items[len(l.Items)-1].Views {
			want = want[:len(l.Items)]
		}
		if len(want) != len(l.Items) || len(l.Items) == 0 {
			t.Fatalf("%s: %d items, the truth of [%s, %s) %d", name, len(l.Items), from.Format(time.RFC3339), to.Format(time.RFC3339), len(want))
		}
		for i, it := range l.Items {
			if it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(l.Items)-1) {
				t.Fatalf("%s rank %d: %s %d, the truth %s %d", name, i+1, it.ItemID, it.Views, want[i].Item, want[i].Count)
			}
		}
	}

	// The live hour of each region reaches the last minute and settles, and is the truth
	// of its region's events over the span it states.
	last := end.Add(-time.Minute)
	for _, region := range []string{"", "eu", "us", "apac"} {
		q := "/v1/trending?window=hour&limit=100"
		tr := truth
		if region != "" {
			q += "&region=" + region
			tr = truth.Region(region)
		}
		var items string
		var since time.Time
		waitUntil("live hour "+region+" settled in the last minute", 120*time.Second, func() (bool, string) {
			l, c, b := list(q)
			if c != 200 || l.AsOf.Before(last) {
				return false, b
			}
			if got, _ := json.Marshal(l.Items); string(got) != items {
				items, since = string(got), time.Now()
			}
			return time.Since(since) >= 3*time.Second, b
		})
		l, _, _ := list(q)
		if l.Region != region || l.Window != "hour" || l.Status != model.StatusLive || l.WindowStart.IsZero() {
			t.Fatalf("%s: window %q region %q status %s span %s-%s", q, l.Window, l.Region, l.Status, l.WindowStart, l.WindowEnd)
		}
		compare(q, l, tr, l.WindowStart, l.WindowEnd)
	}
	if _, c, _ := list("/v1/trending?window=hour&region=mars"); c != 400 {
		t.Errorf("region mars (no lists): %d, want 400", c)
	}

	// The closed hour of each region turns exact and is the truth of its events.
	start := closed.Format(time.RFC3339)
	for _, region := range []string{"eu", "us", "apac", ""} {
		q := "/v1/trending?window=hour&limit=100&start=" + start
		tr := truth
		if region != "" {
			q += "&region=" + region
			tr = truth.Region(region)
		}
		waitUntil(q+" exact", 120*time.Second, func() (bool, string) {
			l, c, b := list(q)
			return c == 200 && l.Status == model.StatusExact, b
		})
		l, _, _ := list(q)
		compare(q, l, tr, closed, closed.Add(time.Hour))
		if l.Reconciliation == nil || l.Region != region {
			t.Errorf("%s: reconciliation %v region %q", q, l.Reconciliation, l.Region)
		}
	}
	var ws api.WindowsResponse
	c, b := get("/v1/windows?window=hour&region=eu&from=" + closed.Format(time.RFC3339) + "&to=" + closed.Add(time.Hour).Format(time.RFC3339))
	if err := json.Unmarshal([]byte(b), &ws); c != 200 || err != nil || ws.Region != "eu" || ws.Counts["exact"] != 1 {
		t.Errorf("/v1/windows hour eu: %d %s", c, b)
	}
	up.stop()
}
