package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
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

// TestUpDecayed runs the whole pipeline (`trending up` with two decayed windows, "now" exact
// and "nowsk" by sketch, half-life 30 minutes, beside the sliding hour) over two generated
// hours with a viral burst: both decayed lists are served as live lists with a score beside
// each item's views, and equal a brute-force decayed truth recomputed from the stream's
// per-minute counts at the list's as-of (exact: every score within 1/512 of a view and the
// ranking the truth's; sketch: never low, at most the stated bound high), through the
// workers, the partials topic, the merger (which brings every partition's scores to one
// as-of), the store and the API.
func TestUpDecayed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upDecayed(t, k.Addr, nil)
}

func TestUpDecayedKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upDecayed(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "decayed")})
}

func upDecayed(t *testing.T, broker string, extra []string) {
	const hl = 30 * time.Minute
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	args := append([]string{"up", "--window-set", "hour=sliding:1h/1m:exact,now=decayed:30m:exact,nowsk=decayed:30m:sketch,calendar:hour",
		"--sketch-width", "1024", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
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
	if c, b := get("/v1/windows/config"); c != 200 || !strings.Contains(b, `{"name":"now","kind":"decayed","half_life":"30m","mode":"exact"}`) {
		t.Fatalf("/v1/windows/config: %d %s", c, b)
	}

	// Two hours up to the last whole minute, unpaced: 3 views a second over 150 items, VIRAL
	// taking 30% of them for 20 minutes an hour in, then 20 a second for the last two minutes
	// so that every partition's event time reaches the last minute.
	end := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	from := end.Add(-2 * time.Hour)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	t0 := time.Now()
	produce := func(i int, seg struct {
		from, to time.Time
		rate     float64
	}) {
		sc := stream.DefaultConfig()
		sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration = 150, seg.rate, 2, seg.from, seg.to.Sub(seg.from)
		sc.Late, sc.Malformed, sc.Seed = 0, 0, uint64(5+i)
		if i == 0 {
			sc.Viral = []stream.Viral{{Item: "VIRAL", At: time.Hour, Share: 0.3, For: 20 * time.Minute}}
		}
		rc := loadgen.DefaultRunConfig()
		rc.Stream, rc.Speedup, rc.Truth = sc, 0, truth
		st, err := loadgen.Run(ctx, rc, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("produced %d events (%d views) from %s to %s", st.Events, st.Views, seg.from.Format(time.RFC3339), seg.to.Format(time.RFC3339))
	}
	type segment = struct {
		from, to time.Time
		rate     float64
	}
	for i, seg := range []segment{{from, end.Add(-2 * time.Minute), 3}, {end.Add(-2 * time.Minute), end, 20}} {
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
	// Settled: as of the last minute, and the items unchanged for 3 s (the scores move with
	// the as-of while nothing new arrives).
	last := end.Add(-time.Minute)
	check := func(what string) {
		for _, win := range []string{"now", "nowsk"} {
			var items string
			var since time.Time
			waitUntil("live "+win+" settled in the last minute", 180*time.Second, func() (bool, string) {
				l, c, b := list("/v1/trending?window=" + win + "&limit=100")
				if c != 200 || l.AsOf.Before(last) {
					return false, b
				}
				ids := make([]string, len(l.Items))
				for i, it := range l.Items {
					ids[i] = it.ItemID
				}
				if got := strings.Join(ids, ","); got != items {
					items, since = got, time.Now()
				}
				return time.Since(since) >= 3*time.Second, b
			})
		}
		t.Logf("decayed lists as of the last minute %s after the load began", time.Since(t0).Round(time.Second))

		// The truth at a list's as-of: every minute's views at 2^(-(as_of - minute start)/hl).
		decayedTruth := func(asOf time.Time) map[string]float64 {
			out := map[string]float64{}
			for m := from; m.Before(last.Add(time.Minute)); m = m.Add(time.Minute) {
				wt := math.Exp2(-float64(asOf.Sub(m)) / float64(hl))
				truth.Range(m, m.Add(time.Minute)).Each(func(item string, n uint64) { out[item] += float64(n) * wt })
			}
			return out
		}
		tol := func(v float64) float64 { return 1.0/512 + 1e-9*v }

		exact, _, _ := list("/v1/trending?window=now&limit=100")
		if exact.HalfLifeSeconds != 1800 || exact.Status != model.StatusLive || exact.Exact || exact.ErrorBound != nil || !exact.WindowStart.IsZero() {
			t.Fatalf("now: half-life %d status %s exact %v bound %v window start %s", exact.HalfLifeSeconds, exact.Status, exact.Exact, exact.ErrorBound, exact.WindowStart)
		}
		tr := decayedTruth(exact.AsOf)
		want := make([]float64, 0, len(tr))
		for _, v := range tr {
			want = append(want, v)
		}
		slices.Sort(want)
		slices.Reverse(want)
		if len(exact.Items) != min(100, len(tr)) {
			t.Errorf("now: %d items, the truth has %d", len(exact.Items), len(tr))
		}
		for i, it := range exact.Items {
			if s := tr[it.ItemID]; math.Abs(it.Score-s) > tol(s) || math.Abs(it.Score-want[i]) > tol(want[i]) {
				t.Errorf("now rank %d: %s scores %v, its truth %v, the truth's rank %d %v", i+1, it.ItemID, it.Score, s, i+1, want[i])
			}
			if it.Views != model.DecayedViews(it.Score) {
				t.Errorf("now rank %d: views %d for score %v", i+1, it.Views, it.Score)
			}
		}
		t.Logf("%s: now as of %s: top %s %.2f (truth %.2f), 100th %.3f", what, exact.AsOf.Format(time.RFC3339Nano), exact.Items[0].ItemID, exact.Items[0].Score, tr[exact.Items[0].ItemID], exact.Items[len(exact.Items)-1].Score)

		sk, _, _ := list("/v1/trending?window=nowsk&limit=100")
		if sk.ErrorBound == nil || sk.HalfLifeSeconds != 1800 || len(sk.Items) == 0 {
			t.Fatalf("nowsk: bound %v half-life %d, %d items", sk.ErrorBound, sk.HalfLifeSeconds, len(sk.Items))
		}
		tr = decayedTruth(sk.AsOf)
		for i, it := range sk.Items {
			if s := tr[it.ItemID]; it.Score < s-tol(s) || it.Score > s+sk.ErrorBound.MaxOvercount+tol(s) {
				t.Errorf("nowsk rank %d: %s estimate %v, truth %v, bound %v", i+1, it.ItemID, it.Score, s, sk.ErrorBound.MaxOvercount)
			}
		}
		if sk.Items[0].ItemID != exact.Items[0].ItemID {
			t.Errorf("nowsk top %s, now top %s", sk.Items[0].ItemID, exact.Items[0].ItemID)
		}
		t.Logf("%s: nowsk as of %s: top %s %.2f, bound %.2f", what, sk.AsOf.Format(time.RFC3339Nano), sk.Items[0].ItemID, sk.Items[0].Score, sk.ErrorBound.MaxOvercount)
	}
	check("first run")
	// A restart: the speed workers restore their checkpoints (the decayed windows' values and
	// float sketch among the pieces) and replay the log after them; one more minute of views
	// then lands on the restored scores, and the lists equal the truth of all three hours.
	time.Sleep(3 * time.Second) // a checkpoint after the last event
	up.stop()
	up = startInProcess(t, args...)
	waitUntil("the API up again", 60*time.Second, func() (bool, string) { c, b := get("/readyz"); return c == 200, b })
	produce(2, segment{end, end.Add(time.Minute), 20})
	last = end
	check("after a restart and one more minute")
	up.stop()
}
