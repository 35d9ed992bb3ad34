package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/stream"
	"trending/loadgen"
	"trending/model/moderation"
)

// TestUpModeration runs `trending up` over a generated stream of two past hours, removes
// three items through POST /v1/moderation, and checks that the live day list (the speed
// layer) and the closed hours' exact lists (the batch) become the truth without them, still
// K long; then restores one with `trending moderation restore --api` and checks that it comes
// back in both, with its count. It logs how long each took.
func TestUpModeration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upModeration(t, k.Addr, nil)
}

// TestUpModerationKafka is TestUpModeration on the real Kafka and MinIO (TRENDING_IT_KAFKA, TRENDING_IT_S3).
func TestUpModerationKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upModeration(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "moderation")})
}

func upModeration(t *testing.T, broker string, extra []string) {
	const K = 20
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--k", "20", "--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--batch-every", "500ms",
		"--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)...)
	defer up.stop()
	base := "http://" + addr
	type list struct {
		Source string `json:"source"`
		Items  []struct {
			ItemID string `json:"item_id"`
			Views  uint64 `json:"views"`
		} `json:"items"`
	}
	get := func(path string) (int, list, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, list{}, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var l list
		json.Unmarshal(b, &l)
		return resp.StatusCode, l, string(b)
	}
	waitUntil := func(what string, limit time.Duration, ok func() (bool, string)) time.Duration {
		t.Helper()
		start := time.Now()
		last := ""
		for time.Since(start) < limit {
			var done bool
			if done, last = ok(); done {
				return time.Since(start)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: never within %s; last %.600s", what, limit, last)
		return 0
	}
	waitUntil("the API up", 60*time.Second, func() (bool, string) { c, _, b := get("/readyz"); return c == 200, b })

	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	truth := stream.NewTruth()
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	sc := stream.DefaultConfig()
	sc.Items, sc.Rate, sc.Servers, sc.Start, sc.Duration, sc.Seed = 300, 8, 6, first, 2*time.Hour, 11
	rc := loadgen.DefaultRunConfig()
	rc.Stream, rc.Speedup, rc.Truth = sc, 0, truth
	if _, err := loadgen.Run(context.Background(), rc, w); err != nil {
		t.Fatal(err)
	}
	hours := []time.Time{first, first.Add(time.Hour)}
	for _, h := range hours {
		waitUntil("hour "+h.Format(time.RFC3339)+" exact", 90*time.Second, func() (bool, string) {
			c, l, b := get("/v1/trending?window=hour&start=" + h.Format(time.RFC3339))
			return c == 200 && l.Source == "batch", b
		})
	}
	// Remove the first and third of the first hour and the second of the second.
	h0, h1 := truth.Range(hours[0], hours[0].Add(time.Hour)).Top(3), truth.Range(hours[1], hours[1].Add(time.Hour)).Top(3)
	removed := []string{h0[0].Item, h0[2].Item, h1[1].Item}
	if h1[1].Item == h0[0].Item || h1[1].Item == h0[2].Item {
		removed[2] = h1[0].Item
	}
	removed = slices.Compact(removed)
	post := func(item, action string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"item": item, "action": action, "reason": "test", "by": "e2e"})
		resp, err := http.Post(base+"/v1/moderation", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST /v1/moderation %s %s: %d %s", action, item, resp.StatusCode, b)
		}
	}
	// matches says whether a served list is the moderated truth of [from, to): the top K of the
	// items not in rm, K long (ties at the cut compared by count).
	matches := func(l list, from, to time.Time, rm *moderation.Set) (bool, string) {
		want := truth.Range(from, to).TopWhere(K, func(item string) bool { return !rm.Has(item) })
		if len(l.Items) != len(want) {
			return false, "length differs"
		}
		for i, it := range l.Items {
			if rm.Has(it.ItemID) {
				return false, "holds removed " + it.ItemID
			}
			if it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(want)-1) {
				return false, "rank differs: " + it.ItemID + " vs " + want[i].Item
			}
		}
		return true, ""
	}
	liveHas := func(l list, rm *moderation.Set, item string) (bool, string) {
		// The live day list counts every hour of the stream (no late events were sent): the
		// truth since its first hour, without the removed items.
		if len(l.Items) != K {
			return false, "not K long"
		}
		for _, it := range l.Items {
			if rm.Has(it.ItemID) {
				return false, "holds removed " + it.ItemID
			}
		}
		if item == "" {
			return true, ""
		}
		for _, it := range l.Items {
			if it.ItemID == item {
				return true, ""
			}
		}
		return false, "misses restored " + item
	}
	check := func(what string, rm *moderation.Set, restored string) {
		t.Helper()
		began := time.Now()
		live := waitUntil(what+": live day list", time.Minute, func() (bool, string) {
			_, l, b := get("/v1/trending?window=day&limit=20")
			ok, why := liveHas(l, rm, restored)
			return ok, why + ": " + b
		})
		for _, h := range hours {
			waitUntil(what+": exact hour "+h.Format(time.RFC3339), time.Minute, func() (bool, string) {
				_, l, b := get("/v1/trending?window=hour&limit=20&start=" + h.Format(time.RFC3339))
				ok, why := matches(l, h, h.Add(time.Hour), rm)
				return ok && l.Source == "batch", why + ": " + b
			})
		}
		t.Logf("%s: the live day list after %s, both exact hours after %s", what, live.Round(10*time.Millisecond), time.Since(began).Round(10*time.Millisecond))
	}
	for _, it := range removed {
		post(it, "remove")
	}
	check("removed "+removed[0]+", "+removed[1]+", "+removed[2], moderation.NewSet(removed...), "")
	// Restore one through the CLI against the running API.
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"moderation", "restore", removed[0], "--reason", "appeal", "--by", "e2e", "--api", base})
	if err := root.Execute(); err != nil {
		t.Fatalf("moderation restore: %v\n%s", err, out.String())
	}
	check("restored "+removed[0], moderation.NewSet(removed[1:]...), removed[0])
	// The removed item's counts stayed in the archive: the exact hours hold the restored one
	// with its full count (matches compared it).
}
