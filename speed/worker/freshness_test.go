package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/model"
	"trending/model/event"
	"trending/speed/merge"
	"trending/speed/worker"
)

// BenchmarkFreshness: from an event produced (event time = now) to the item visible in the
// served live hour list, through the real broker: worker (lateness 5s, publish every 1s) ->
// trending.partials -> merger (publish every 1s) -> store. Background traffic keeps every
// partition's watermark moving, as production traffic does. The floor is the design's: an
// event becomes visible when its minute closes (its end plus the lateness) and the next
// publish ticks run. Reports p50 and p99 over 40 probes.
// Run: go test ./speed/worker -run '^$' -bench Freshness -benchtime 1x
func BenchmarkFreshness(b *testing.B) {
	brokers, obj := real(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEnv(b, brokers, obj, 4)
	wc := windowConfig()
	wc.AllowedLateness = 5 * time.Second
	wc.K = 100 // every probe of a minute fits the list
	wcfg := worker.DefaultConfig()
	wcfg.Kafka, wcfg.Topic, wcfg.DLQTopic, wcfg.PartialsTopic, wcfg.Group = eventlog.Plain(brokers...), e.views, e.dlq, e.partials, e.group
	wcfg.Window, wcfg.PublishEvery, wcfg.CheckpointEvery, wcfg.CheckpointPrefix, wcfg.Objects = wc, time.Second, 10*time.Second, "ck/"+e.views, obj
	w, err := worker.New(wcfg)
	if err != nil {
		b.Fatal(err)
	}
	go w.Run(ctx)
	mcfg := merge.DefaultConfig()
	mcfg.K, mcfg.Store, mcfg.Staleness = 100, e.st, time.Hour
	m, _ := merge.New(mcfg)
	rc := merge.DefaultRunConfig()
	rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = eventlog.Plain(brokers...), e.partials, time.Second, time.Minute
	go m.Run(ctx, rc)
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
	sent := make([]time.Time, probes)
	lat := make([]time.Duration, probes)
	rng := rand.New(rand.NewPCG(9, 9))
	b.ResetTimer()
	go func() {
		for i := 0; i < probes && ctx.Err() == nil; i++ {
			now := time.Now().UTC()
			ev := event.Event{ItemID: fmt.Sprintf("PROBE%d", i), Count: uint32(100_000 + 1000*i), TS: now.Truncate(time.Millisecond)}
			sent[i] = now
			e.writer.WriteMessages(ctx, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
			time.Sleep(time.Duration(1000+rng.IntN(1000)) * time.Millisecond)
		}
	}()
	seen := 0
	deadline := time.Now().Add(4 * time.Minute)
	for seen < probes && time.Now().Before(deadline) {
		l, err := e.st.Get(ctx, model.Key{Window: "hour"})
		if err == nil {
			for _, it := range l.Items {
				var i int
				if _, err := fmt.Sscanf(it.ItemID, "PROBE%d", &i); err == nil && lat[i] == 0 && !sent[i].IsZero() {
					lat[i] = time.Since(sent[i])
					seen++
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	if seen < probes {
		b.Fatalf("only %d of %d probes became visible", seen, probes)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[probes/2].Seconds(), "p50-s")
	b.ReportMetric(lat[probes*99/100].Seconds(), "p99-s")
}
