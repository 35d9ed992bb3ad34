package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model/event"
	"trending/model/moderation"
	"trending/model/topk"
)

// TestUpCaps runs `trending up --cap-views 5` over a generated stream of two past hours whose
// events carry accounts (user_id; some none) and regions (eu, us; some none), half of it
// before a restart of up (the caps' tables restored from the checkpoints) and half after, and
// compares the live day list (the speed layer) and each closed hour's exact list (the batch),
// of every item and of region eu, with the capped truth computed here: per (account, item,
// hour) at most 5 views, per region within the region, events without an account uncapped;
// then removes two items through /v1/moderation and compares them with the capped, moderated
// truth. The capped views are counted in trending_speed_capped_views_total.
func TestUpCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upCaps(t, k.Addr, nil)
}

// TestUpCapsKafka is TestUpCaps on the real Kafka and MinIO (TRENDING_IT_KAFKA, TRENDING_IT_S3).
func TestUpCapsKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upCaps(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "caps")})
}

func upCaps(t *testing.T, broker string, extra []string) {
	const K, capN = 20, 5
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	args := append([]string{"up", "--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--k", strconv.Itoa(K), "--cap-views", strconv.Itoa(capN), "--cap-slots", "65536",
		"--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms", "--batch-every", "500ms",
		"--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)
	up := startInProcess(t, args...)
	defer func() { up.stop() }()
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
	waitUntil := func(what string, limit time.Duration, ok func() (bool, string)) {
		t.Helper()
		start := time.Now()
		last := ""
		for time.Since(start) < limit {
			var done bool
			if done, last = ok(); done {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: never within %s; last %.800s", what, limit, last)
	}
	waitUntil("the API up", 60*time.Second, func() (bool, string) { c, _, b := get("/readyz"); return c == 200, b })

	// Two past hours: 60 items, 80 accounts, a tenth of the events anonymous; a few heavy
	// accounts hammer the same items (what the cap is for).
	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	r := rand.New(rand.NewPCG(5, 6))
	// Keys of every item's lists have region ""; a region's lists cap the account within it.
	type acct struct {
		hour               time.Time
		region, item, user string
	}
	sums, firstSums := map[acct]uint64{}, map[acct]uint64{}
	var msgs []kafka.Message
	const events = 20000
	for i := range events {
		ts := first.Add(time.Duration(r.Int64N(int64(2 * time.Hour)))).Truncate(time.Millisecond)
		e := event.Event{ItemID: fmt.Sprintf("V%d", min(r.IntN(60), r.IntN(60))), Count: uint32(1 + r.IntN(3)), TS: ts}
		switch {
		case i%10 == 0: // anonymous
		case i%7 == 0: // a heavy account on few items
			e.UserID, e.ItemID = fmt.Sprintf("bot%d", r.IntN(3)), fmt.Sprintf("V%d", 40+r.IntN(5))
		default:
			e.UserID = fmt.Sprintf("u%d", r.IntN(80))
		}
		e.Region = []string{"eu", "us", ""}[r.IntN(3)]
		regions := []string{""} // every item's lists, and the event's region's
		if e.Region != "" {
			regions = append(regions, e.Region)
		}
		for _, region := range regions {
			k := acct{ts.Truncate(time.Hour), region, e.ItemID, e.UserID}
			sums[k] += uint64(e.Count)
			if i < events/2 {
				firstSums[k] += uint64(e.Count)
			}
		}
		msgs = append(msgs, kafka.Message{Key: []byte(e.ItemID), Value: e.AppendJSON(nil)})
	}
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	write := func(msgs []kafka.Message) {
		t.Helper()
		for i := 0; i < len(msgs); i += 1000 {
			if err := w.WriteMessages(context.Background(), msgs[i:min(i+1000, len(msgs))]...); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The capped truth, per hour and over both, without the items moderation removed.
	var removed *moderation.Set
	truthOf := sums
	cappedIn := func(region string, from, to time.Time) []topk.Entry {
		c := map[string]uint64{}
		for a, n := range truthOf {
			if a.region != region || a.hour.Before(from) || !a.hour.Before(to) {
				continue
			}
			v := n
			if a.user != "" {
				v = min(n, capN)
			}
			c[a.item] += v
		}
		h := topk.NewHeap(K)
		for it, n := range c {
			if !removed.Has(it) {
				h.Offer(it, n)
			}
		}
		return h.Sorted()
	}
	capped := func(from, to time.Time) []topk.Entry { return cappedIn("", from, to) }
	matches := func(l list, want []topk.Entry) (bool, string) {
		if len(l.Items) != len(want) {
			return false, fmt.Sprintf("%d items, want %d", len(l.Items), len(want))
		}
		for i, it := range l.Items {
			if it.Views != want[i].Count || (it.ItemID != want[i].Item && i < len(want)-1) {
				return false, fmt.Sprintf("rank %d: %s %d, the capped truth %s %d", i+1, it.ItemID, it.Views, want[i].Item, want[i].Count)
			}
		}
		return true, ""
	}
	check := func(what string) {
		t.Helper()
		for _, region := range []string{"", "eu"} {
			q := ""
			if region != "" {
				q = "&region=" + region
			}
			waitUntil(what+": the live day list"+q, time.Minute, func() (bool, string) {
				_, l, b := get("/v1/trending?window=day&limit=20" + q)
				ok, why := matches(l, cappedIn(region, first, first.Add(2*time.Hour)))
				return ok, why + ": " + b
			})
			for _, h := range []time.Time{first, first.Add(time.Hour)} {
				waitUntil(what+": hour "+h.Format(time.RFC3339)+q+" exact", 90*time.Second, func() (bool, string) {
					_, l, b := get("/v1/trending?window=hour&limit=20&start=" + h.Format(time.RFC3339) + q)
					ok, why := matches(l, cappedIn(region, h, h.Add(time.Hour)))
					return ok && l.Source == "batch", why + ": " + b
				})
			}
		}
	}
	// The first half, then up stopped and started again: the speed workers restore their
	// caps' tables from the checkpoint (an empty table would admit the second half's views of
	// the same accounts, items and hours afresh).
	write(msgs[:events/2])
	truthOf = firstSums
	waitUntil("the first half counted", time.Minute, func() (bool, string) {
		_, l, b := get("/v1/trending?window=day&limit=20")
		ok, why := matches(l, capped(first, first.Add(2*time.Hour)))
		return ok, why + ": " + b
	})
	up.stop()
	up = startInProcess(t, args...)
	waitUntil("up again", 60*time.Second, func() (bool, string) { c, _, b := get("/readyz"); return c == 200, b })
	write(msgs[events/2:])
	truthOf = sums
	check("capped")
	// Moderation on top: remove the capped leader and the third; the lists become the capped,
	// moderated truth.
	top := capped(first, first.Add(2*time.Hour))
	removed = moderation.NewSet(top[0].Item, top[2].Item)
	for _, it := range removed.Items() {
		body := `{"item":"` + it + `","action":"remove","reason":"test","by":"e2e"}`
		resp, err := http.Post(base+"/v1/moderation", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("remove %s: %s", it, resp.Status)
		}
	}
	check("capped and moderated")
	// The views over the cap, all of them and those of the first half (counted by the first
	// process): the counter of this one holds the rest.
	over := func(m map[acct]uint64) (v uint64) {
		for a, n := range m {
			if a.region == "" && a.user != "" && n > capN {
				v += n - capN
			}
		}
		return v
	}
	bots := over(sums) - over(firstSums)
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^trending_speed_capped_views_total (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no trending_speed_capped_views_total in /metrics")
	}
	got, _ := strconv.ParseFloat(string(m[1]), 64)
	if bots == 0 || uint64(got) != bots {
		t.Fatalf("trending_speed_capped_views_total %v, want the %d views over the cap the second half added", got, bots)
	}
	t.Logf("%d events, %d views refused by the cap (%d after the restart); the live day list and both exact hours equal the capped truth, then the capped truth without %v",
		len(msgs), over(sums), bots, removed.Items())
}
