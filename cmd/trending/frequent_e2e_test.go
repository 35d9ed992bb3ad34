package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/stream"
	"trending/loadgen"
	"trending/serving/api"
)

// TestUpFrequent runs the whole pipeline (`trending up`) with the sliding hour and the
// calendar hour counted in frequent mode (issue 32) at 8 counters a summary, far fewer than
// the 150 items of a minute, so every summary compacts: both lists are served with each
// item's views a lower and views_upper an upper bound of the generated truth over the
// list's span, and their guarantee (frequent, cutoff, the sentence) holds: no item of the
// truth with more views than the cutoff is missing. Again after a restart from the
// checkpoints (the summaries restored) and two more minutes of views.
func TestUpFrequent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upFrequent(t, k.Addr, nil)
}

// TestUpFrequentKafka is TestUpFrequent on the real Kafka and MinIO (TRENDING_IT_*).
func TestUpFrequentKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upFrequent(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "frequent")})
}

func upFrequent(t *testing.T, broker string, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	args := append([]string{"up", "--window-set", "hour=sliding:1h/1m:frequent/8,calendar:hour:frequent/8,calendar:day",
		"--k", "10", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--batch-every", "1s",
		"--log-format", "json", "--log-level", "warn"}, extra...)
	up := startInProcess(t, args...)
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

	// 70 minutes up to the last whole minute, unpaced, 5 views a second over 150 items, then
	// 20 a second for the last two minutes so that every partition's event time reaches the
	// last minute.
	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	from := end.Add(-70 * time.Minute)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	type segment = struct {
		from, to time.Time
		rate     float64
	}
	produce := func(i int, seg segment) {
		sc := stream.DefaultConfig()
		sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration = 150, seg.rate, 2, seg.from, seg.to.Sub(seg.from)
		sc.Late, sc.Malformed, sc.Seed = 0, 0, uint64(9+i)
		rc := loadgen.DefaultRunConfig()
		rc.Stream, rc.Speedup, rc.Truth = sc, 0, truth
		st, err := loadgen.Run(ctx, rc, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("produced %d events (%d views) from %s to %s", st.Events, st.Views, seg.from.Format(time.RFC3339), seg.to.Format(time.RFC3339))
	}
	for i, seg := range []segment{{from, end.Add(-2 * time.Minute), 5}, {end.Add(-2 * time.Minute), end, 20}} {
		produce(i, seg)
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
	last := end.Add(-time.Minute)
	check := func(what string, streamEnd time.Time) {
		hourStart := last.Truncate(time.Hour)
		for _, c := range []struct {
			name, path string
			from       func(api.ListResponse) time.Time
		}{
			{"sliding hour", "/v1/trending?window=hour&limit=10", func(l api.ListResponse) time.Time { return l.WindowStart }},
			{"calendar hour", "/v1/trending?window=hour&limit=10&start=" + url.QueryEscape(hourStart.Format(time.RFC3339)), func(l api.ListResponse) time.Time { return l.Start }},
		} {
			var l api.ListResponse
			waitUntil(c.name+" as of the last minute", 180*time.Second, func() (bool, string) {
				var code int
				var b string
				l, code, b = list(c.path)
				return code == 200 && !l.AsOf.Before(last) && l.Frequent && !l.Incomplete, b
			})
			// Settled: the same list twice, 2 s apart, every partition in it.
			for {
				time.Sleep(2 * time.Second)
				again, _, _ := list(c.path)
				if again.Version == l.Version && !again.Incomplete {
					break
				}
				l = again
			}
			if l.Exact || l.ErrorBound != nil || l.Guarantee != api.Guarantee(l.Cutoff) || len(l.Items) != 10 {
				t.Fatalf("%s: exact %v bound %v guarantee %q cutoff %d, %d items", c.name, l.Exact, l.ErrorBound, l.Guarantee, l.Cutoff, len(l.Items))
			}
			tr := truth.Range(c.from(l), streamEnd)
			listed, loose := map[string]bool{}, 0
			for _, it := range l.Items {
				listed[it.ItemID] = true
				if v := tr.Get(it.ItemID); v < it.Views || v > it.ViewsUpper {
					t.Errorf("%s: %s has %d views, served [%d, %d]", c.name, it.ItemID, v, it.Views, it.ViewsUpper)
				}
				if it.ViewsUpper > it.Views {
					loose++
				}
			}
			tr.Each(func(item string, n uint64) {
				if n > l.Cutoff && !listed[item] {
					t.Errorf("%s: %s has %d views, over the cutoff %d, and is missing", c.name, item, n, l.Cutoff)
				}
			})
			if loose == 0 && l.AsOf.Sub(l.WindowStart) < 10*time.Minute {
				// A calendar hour minutes old (the test run just after the hour) holds only
				// open minutes, counted exactly: nothing to compact yet.
				t.Logf("%s: every item's bounds are equal: the period is %s old", c.name, l.AsOf.Sub(l.WindowStart))
			} else if loose == 0 {
				t.Errorf("%s: every item's bounds are equal: no summary compacted, the bounds are not exercised", c.name)
			}
			t.Logf("%s: %s as of %s: top %s [%d, %d], %q", what, c.name, l.AsOf.Format(time.RFC3339), l.Items[0].ItemID, l.Items[0].Views, l.Items[0].ViewsUpper, l.Guarantee)
		}
	}
	check("first run", end)
	// A restart: the speed workers restore their checkpoints (the frequent summaries among
	// them) and replay the log after them; two more minutes of views land on them (dense
	// enough that every partition's newest event is within the merger's staleness of the
	// others', as in the first run: the list must not be partial).
	time.Sleep(3 * time.Second) // a checkpoint after the last event
	up.stop()
	up = startInProcess(t, args...)
	waitUntil("the API up again", 60*time.Second, func() (bool, string) { c, b := get("/readyz"); return c == 200, b })
	produce(2, segment{end, end.Add(2 * time.Minute), 20})
	last = end.Add(time.Minute)
	check("after a restart and two more minutes", end.Add(2*time.Minute))
	up.stop()
}
