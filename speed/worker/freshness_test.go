package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/model/event"
	"trending/serving/api"
	"trending/speed/merge"
	"trending/speed/window"
	"trending/speed/worker"
)

// BenchmarkFreshness: from an event produced (event time = now) to the item visible in the
// live hour list the API serves (GET /v1/trending?window=hour on an api.Server over the
// store, its cache woken by the store's notification), through the real broker: worker ->
// trending.partials -> merger -> store -> cache. Both sub-benchmarks run the default
// allowed lateness (30 s) and four partitions, with background traffic keeping every
// partition's watermark moving, as production traffic does:
//
//   - closed-minutes-1m: the worker before live lists (ClosedMinutesOnly, publish every
//     minute) and the merger's old 5 s tick: an event waits for its minute to close (its
//     end plus the lateness), then for both ticks.
//   - defaults: the defaults now: open minutes included (LiveAll), the worker publishing
//     every second, the merger as soon as every partition sent news (at most 1 s).
//
// Reports p50 and p99 over 40 probes, and the partials' bytes a minute (before compression).
// Run: go test ./speed/worker -run '^$' -bench Freshness -benchtime 1x
func BenchmarkFreshness(b *testing.B) {
	for _, v := range []struct {
		name                 string
		closedOnly           bool
		publish, mergeLatest time.Duration
	}{
		{"closed-minutes-1m", true, time.Minute, 5 * time.Second},
		{"defaults", false, worker.DefaultConfig().PublishEvery, merge.DefaultRunConfig().PublishEvery},
	} {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				freshness(b, v.closedOnly, v.publish, v.mergeLatest)
			}
		})
	}
}

func freshness(b *testing.B, closedOnly bool, publish, mergeLatest time.Duration) {
	brokers, obj := real(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEnv(b, brokers, obj, 4)
	wc := windowConfig()
	wc.AllowedLateness = window.DefaultConfig().AllowedLateness
	wc.K = 100 // every probe of a minute fits the list
	reg := prometheus.NewRegistry()
	cfg := worker.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.DLQTopic, cfg.PartialsTopic, cfg.ConsumerGroup = eventlog.Plain(brokers...), e.views, e.dlq, e.partials, e.group
	cfg.Window, cfg.PublishEvery, cfg.ClosedMinutesOnly, cfg.CheckpointEvery = wc, publish, closedOnly, 10*time.Second
	cfg.CheckpointPrefix, cfg.Objects, cfg.Registry = "ck/"+e.views, obj, reg
	w, err := worker.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(ctx)
	mc := merge.DefaultConfig()
	mc.K, mc.Store, mc.Staleness = 100, e.st, time.Hour
	m, err := merge.New(mc)
	if err != nil {
		b.Fatal(err)
	}
	rc := merge.DefaultRunConfig()
	rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = eventlog.Plain(brokers...), e.partials, mergeLatest, time.Minute
	go m.Run(ctx, rc)
	srv, err := api.New(api.DefaultConfig(), e.st, nil)
	if err != nil {
		b.Fatal(err)
	}
	go srv.Cache().Run(ctx)
	// Background traffic: every 100 ms an event per key S0..S63 (every partition) at now.
	go func() {
		for ctx.Err() == nil {
			now := time.Now().UTC().Truncate(time.Millisecond)
			var msgs []kafka.Message
			for i := 0; i < 64; i++ {
				ev := event.Event{ItemID: fmt.Sprintf("S%d", i), Count: 1, TS: now}
				msgs = append(msgs, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
			}
			e.writer.WriteMessages(ctx, msgs...)
			time.Sleep(100 * time.Millisecond)
		}
	}()
	const probes = 40
	var mu sync.Mutex
	sent := make([]time.Time, probes)
	lat := make([]time.Duration, probes)
	rng := rand.New(rand.NewPCG(9, 9))
	b.ResetTimer()
	start := time.Now()
	go func() {
		for i := 0; i < probes && ctx.Err() == nil; i++ {
			now := time.Now().UTC()
			ev := event.Event{ItemID: fmt.Sprintf("PROBE%d", i), Count: uint32(100_000 + 1000*i), TS: now.Truncate(time.Millisecond)}
			mu.Lock()
			sent[i] = now
			mu.Unlock()
			e.writer.WriteMessages(ctx, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
			time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		}
	}()
	seen := 0
	deadline := time.Now().Add(5 * time.Minute)
	for seen < probes && time.Now().Before(deadline) {
		rr := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/v1/trending?window=hour&limit=100", nil))
		var l api.ListResponse
		if rr.Code == http.StatusOK && json.Unmarshal(rr.Body.Bytes(), &l) == nil {
			mu.Lock()
			for _, it := range l.Items {
				var i int
				if _, err := fmt.Sscanf(it.ItemID, "PROBE%d", &i); err == nil && lat[i] == 0 && !sent[i].IsZero() {
					lat[i] = time.Since(sent[i])
					seen++
				}
			}
			mu.Unlock()
		}
		time.Sleep(50 * time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	if seen < probes {
		b.Fatalf("only %d of %d probes became visible", seen, probes)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[probes/2].Seconds(), "p50-s")
	b.ReportMetric(lat[probes*99/100].Seconds(), "p99-s")
	b.ReportMetric(counterValue(b, reg, "trending_speed_partials_bytes_total")/el.Minutes(), "partial-bytes/min")
}

// counterValue is the value of the counter or gauge name in reg (summed over labels).
func counterValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var v float64
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
			return v
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
