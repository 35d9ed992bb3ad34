package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// freshnessProbes is how many probe events one iteration of BenchmarkFreshnessEmbedded sends.
const freshnessProbes = 40

// BenchmarkFreshnessEmbedded measures produced-to-served latency on `trending up` in this
// process: from the POST /v1/events of a probe event dated now to the first moment it is in
// GET /v1/trending?window=hour served by that process, polled every 50 ms. Each iteration
// sends freshnessProbes probes 1 to 2 s apart (uniformly at random), each a new item with
// more than ten million views (ten events of a million, the most one event may carry, plus
// one of the probe's sequence number, so every probe outranks the ones before it and the
// load generator's items). The probes overlap: one poller watches every probe in flight.
// The metrics are the probes' latencies, nearest rank: p50-s and p99-s (with 40 probes the
// p99 is the slowest one); ns/op, the length of an iteration, is suppressed as meaningless.
//
// The sub-benchmarks:
//
//   - defaults: `up` with its defaults (embedded Kafka and S3, the built-in load generator at
//     500 views/s after its first-start backfill of 2 h at 120x, the batch scheduler), only
//     --data, --listen and the log level set. The speed workers publish every second, the
//     open minute included.
//   - publish-every-1m: the same with --publish-every 1m, the speed workers' publish cadence
//     before it became 1 s. This reproduces only the cadence part of the old behaviour: the
//     open-minute overlay (speed/window LiveAll) cannot be switched off, so an event still
//     does not wait for its minute to close (end plus the 30 s lateness) as it used to, and
//     the merger and the cache react as they do now (at most 1 s, and at once), not after
//     their old 5 s ticks. Expect up to a minute, not the old ~2.5.
//
// Probing starts once the served hour list counts an event dated 30 s after `up` started:
// the backfill's events are dated before its start and take at least 60 s to replay, so this
// is once the load generator runs in real time (a probe dated now sent during the replay
// would move its partition's watermark an hour ahead of the replay, which would then come too
// late there, and measure nothing anyone sees in steady state); the batch
// scheduler then recomputes the replayed hours while the probes run, as it does after a
// first `make run`. Run it with:
//
//	go test ./cmd/trending -run '^$' -bench FreshnessEmbedded -benchtime 1x
func BenchmarkFreshnessEmbedded(b *testing.B) {
	if testing.Short() {
		b.Skip("runs trending up for minutes")
	}
	for _, c := range []struct {
		name  string
		extra []string
	}{
		{"defaults", nil},
		{"publish-every-1m", []string{"--publish-every", "1m"}},
	} {
		b.Run(c.name, func(b *testing.B) { benchFreshness(b, c.extra...) })
	}
}

func benchFreshness(b *testing.B, extra ...string) {
	addr := freeAddr(b)
	started := time.Now()
	up := startInProcess(b, append([]string{"up", "--data", filepath.Join(b.TempDir(), "data"), "--listen", addr,
		"--log-format", "json", "--log-level", "warn"}, extra...)...)
	defer up.stop()
	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second}

	deadline := time.Now().Add(10 * time.Minute)
	for {
		l, _, err := getHourList(client, base)
		if err == nil && l.AsOf.After(started.Add(30*time.Second)) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the served hour list never reached the present (as of %s, %v)", l.AsOf, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.Logf("in real time %.0fs after the start", time.Since(started).Seconds())

	var lat []time.Duration
	seq := 0
	for b.Loop() {
		lat = append(lat, runProbes(b, client, base, &seq)...)
	}
	slices.Sort(lat)
	rank := func(q float64) time.Duration { // nearest rank
		i := int(q*float64(len(lat))+0.999999) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rank(0.50).Seconds(), "p50-s")
	b.ReportMetric(rank(0.99).Seconds(), "p99-s")
	var all []string
	for _, d := range lat {
		all = append(all, fmt.Sprintf("%.2f", d.Seconds()))
	}
	b.Logf("%d probes, latency (s, sorted): %s", len(lat), strings.Join(all, " "))
}

// hourList is the part of GET /v1/trending the probes read.
type hourList struct {
	AsOf  time.Time `json:"as_of"`
	Items []struct {
		ItemID string `json:"item_id"`
		Views  uint64 `json:"views"`
	} `json:"items"`
}

// getHourList fetches the live hour list and returns it with the moment its body arrived.
func getHourList(client *http.Client, base string) (hourList, time.Time, error) {
	var l hourList
	resp, err := client.Get(base + "/v1/trending?window=hour&limit=100")
	if err != nil {
		return l, time.Time{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	at := time.Now()
	if err != nil {
		return l, at, err
	}
	if resp.StatusCode != http.StatusOK {
		return l, at, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	return l, at, json.Unmarshal(body, &l)
}

// runProbes sends freshnessProbes probes 1 to 2 s apart while a poller watches the hour list
// every 50 ms, and returns each probe's time from just before its POST to the first poll
// that saw it. A probe not seen within 3 minutes of the last one's POST fails the benchmark.
func runProbes(b *testing.B, client *http.Client, base string, seq *int) []time.Duration {
	var (
		mu     sync.Mutex
		sent   = map[string]time.Time{} // item -> just before its POST
		seen   = map[string]time.Time{} // item -> the first poll that had it
		stop   = make(chan struct{})
		polled = make(chan struct{})
	)
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			l, at, err := getHourList(client, base)
			if err != nil {
				continue
			}
			mu.Lock()
			for _, it := range l.Items {
				if _, ok := sent[it.ItemID]; ok && seen[it.ItemID].IsZero() {
					seen[it.ItemID] = at
				}
			}
			mu.Unlock()
		}
	}()
	defer func() { close(stop); <-polled }()

	run := time.Now().UnixNano()
	var items []string
	for i := range freshnessProbes {
		if i > 0 {
			time.Sleep(time.Second + rand.N(time.Second))
		}
		*seq++
		item := fmt.Sprintf("probe-%d-%d", run, i)
		ts := time.Now().UTC()
		var events []map[string]any
		for range 10 {
			events = append(events, map[string]any{"item_id": item, "count": 1_000_000, "ts": ts.UnixMilli()})
		}
		events = append(events, map[string]any{"item_id": item, "count": *seq, "ts": ts.UnixMilli()})
		body, _ := json.Marshal(events)
		mu.Lock()
		sent[item] = time.Now()
		mu.Unlock()
		resp, err := client.Post(base+"/v1/events", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatalf("POST /v1/events: %v", err)
		}
		reply, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("POST /v1/events: %d %s", resp.StatusCode, reply)
		}
		items = append(items, item)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == len(items) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d probes not in the hour list 3 minutes after the last was sent", len(items)-n, len(items))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, len(items))
	for i, item := range items {
		lat[i] = seen[item].Sub(sent[item])
	}
	return lat
}
