package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/model/event"
	"trending/speed/window"
)

// BenchmarkHandle is the worker's per-event cost without Kafka: decode, the future guard,
// the window update and the metrics, over the same mix of messages BenchmarkConsume
// pre-fills (300k events over 100k items, exponential popularity, 20 minutes of event time).
// It isolates what the worker adds to a bare FetchMessage loop.
func BenchmarkHandle(b *testing.B) {
	const n, items = 300_000, 100_000
	rng := rand.New(rand.NewPCG(1, 1))
	t0 := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		ev := event.Event{ItemID: fmt.Sprintf("item-%07d", int(rng.ExpFloat64()*float64(items)/8)%items), Count: 1 + uint32(rng.IntN(3)),
			TS: t0.Add(time.Duration(i) * 20 * time.Minute / time.Duration(n)).Truncate(time.Millisecond)}
		msgs[i] = kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil), Offset: int64(i), Time: time.Now()}
	}
	wc := window.DefaultConfig()
	wc.K, wc.M = 10, 3
	wc.Windows = []window.WindowConfig{
		{Name: "hour", Kind: window.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: window.Exact},
		{Name: "calendar-hour", Kind: window.Calendar, Span: window.SpanHour, Mode: window.Exact},
	}
	m, err := newMetrics(nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Window, cfg.Log = wc, slog.New(slog.DiscardHandler)
	w := &Worker{cfg: cfg, m: m}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		st, err := window.New(wc)
		if err != nil {
			b.Fatal(err)
		}
		p := &partition{w: w, state: st}
		b.StartTimer()
		for _, msg := range msgs {
			if err := p.handle(ctx, msg); err != nil {
				b.Fatal(err)
			}
		}
		if len(p.dlq) != 0 {
			b.Fatalf("%d events went to the DLQ", len(p.dlq))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
	b.ReportMetric(0, "ns/op")
}
