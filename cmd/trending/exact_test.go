package main

import (
	"context"
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
	boltstore "trending/serving/store/bolt"
)

// TestUpEveryExactListIsTheTruth runs the whole pipeline (`trending up`, no built-in load)
// over a generated stream of three past hours with late and malformed events, waits for the
// batch to make the closed hours exact, stops, and then compares every list in the serving
// store that says exact with the stream's truth: a label that overstates is a bug, like a
// wrong count.
func TestUpEveryExactListIsTheTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	everyExactListIsTheTruth(t, k.Addr, nil)
}

func TestUpEveryExactListIsTheTruthKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	everyExactListIsTheTruth(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "exact")})
}

func everyExactListIsTheTruth(t *testing.T, broker string, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
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
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: never; last %s", what, last)
	}
	waitUntil("the API up", 60*time.Second, func() (bool, string) { c, b := get("/readyz"); return c == 200, b })

	// Three past hours, unpaced, with late events (1%, two minutes) and malformed ones, from
	// servers in regions: up keeps lists of eu, us and apac (not mars, nor the servers
	// without a region).
	first := time.Now().UTC().Truncate(time.Hour).Add(-4 * time.Hour)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	stream := stream.DefaultConfig()
	stream.Items, stream.Rate, stream.Servers, stream.Start, stream.Duration = 400, 8, 6, first, 3*time.Hour
	stream.Late, stream.Malformed, stream.Seed = 0.01, 0.002, 7
	stream.Regions = []string{"eu", "us", "apac", "eu", "mars"}
	rc := loadgen.DefaultRunConfig()
	rc.Stream, rc.Speedup, rc.Truth = stream, 0, truth // unpaced
	st, err := loadgen.Run(ctx, rc, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("produced %d events (%d views, %d late, %d malformed)", st.Events, st.Views, st.Late, st.Malformed)

	// The three hours turn exact, of all items and of each region with lists.
	for h := range 3 {
		start := first.Add(time.Duration(h) * time.Hour).Format(time.RFC3339)
		for _, region := range []string{"", "&region=eu", "&region=us", "&region=apac"} {
			waitUntil("hour "+start+region+" exact", 90*time.Second, func() (bool, string) {
				c, b := get("/v1/trending?window=hour&limit=100&start=" + start + region)
				return c == 200 && strings.Contains(b, `"source":"batch"`), b
			})
		}
	}
	if c, b := get("/v1/trending?window=hour&region=mars"); c != 400 || !strings.Contains(b, "region eu, us, apac") {
		t.Errorf("region mars: %d %s, want a 400 naming the regions with lists", c, b)
	}
	up.stop()

	sst, err := boltstore.Open(filepath.Join(data, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sst.Close()
	lists, err := sst.Since(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	exact, regional := 0, map[string]int{}
	for _, l := range lists {
		if !l.Exact {
			for _, it := range l.Items {
				if it.Exact {
					t.Errorf("%s: item %s says exact in a list that does not", l.Key(), it.ItemID)
				}
			}
			continue
		}
		exact++
		tr := truth
		if l.Group != "" {
			// A list per region is the truth of that region's events.
			tr = truth.Region(l.Group)
			regional[l.Group]++
		}
		if r := l.Reconciliation; r != nil {
			// What the speed layer's provisional list of this window was off by (for the notes).
			t.Logf("%s: speed list recall@K %.3f, max abs error %d, mean abs error %.2f, max rel error %.4f",
				l.Key(), r.RecallAtK, r.MaxAbsError, r.MeanAbsError, r.MaxRelError)
		}
		var from, to time.Time
		switch {
		case !l.Start.IsZero():
			from, to = l.Start, l.End
		case l.Window == "all" || l.Window == model.BaseWindow:
			// All time through its as-of: the batch's all-time list and, once a whole UTC
			// day has closed (a run just after midnight), its base through that boundary.
			from, to = time.Unix(0, 0), l.AsOf
		default:
			t.Errorf("%s (source %s) says exact, but a live %s list cannot equal a truth: late events beyond the lateness are missing",
				l.Key(), l.Source, l.Window)
			continue
		}
		want := tr.Range(from, to).Top(len(l.Items) + 1)
		if len(want) > len(l.Items) && len(l.Items) > 0 && want[len(l.Items)].Count == l.Items[len(l.Items)-1].Views {
			want = want[:len(l.Items)] // a tie at the cut: either item may be listed; compare the counts
		}
		want = want[:min(len(want), len(l.Items))]
		if len(want) != len(l.Items) {
			t.Errorf("%s: %d items, the truth has %d", l.Key(), len(l.Items), len(want))
			continue
		}
		for i, it := range l.Items {
			if it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(l.Items)-1) {
				t.Errorf("%s rank %d: %s %d, the truth %s %d", l.Key(), i+1, it.ItemID, it.Views, want[i].Item, want[i].Count)
				break
			}
		}
	}
	if exact < 3 {
		t.Fatalf("%d exact lists, want at least the three hours", exact)
	}
	for _, r := range []string{"eu", "us", "apac"} {
		if regional[r] < 3 {
			t.Errorf("%d exact lists of region %s, want at least the three hours", regional[r], r)
		}
	}
	if regional["mars"] > 0 {
		t.Errorf("%d exact lists of region mars, which has none", regional["mars"])
	}
	t.Logf("%d lists, %d exact (%v per region), all equal to the truth", len(lists), exact, regional)
}
