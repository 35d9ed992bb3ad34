package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/model"
	"trending/model/event"
	"trending/model/windowset"
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
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: model.Hour, Mode: windowset.Exact},
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

// BenchmarkHandleGroups is BenchmarkHandle's per-event cost with every event carrying a
// region (eu, eu, us, apac in turn), without lists per region ("off") and with lists of the
// three ("3-regions": each event is counted in its region's state too, after that state's
// watermark is moved to the partition's), so the cost of the lists per group is a ratio
// measured in one run.
func BenchmarkHandleGroups(b *testing.B) {
	const n, items = 300_000, 100_000
	rng := rand.New(rand.NewPCG(1, 1))
	t0 := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)
	regions := []string{"eu", "eu", "us", "apac"}
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		ev := event.Event{ItemID: fmt.Sprintf("item-%07d", int(rng.ExpFloat64()*float64(items)/8)%items), Count: 1 + uint32(rng.IntN(3)),
			TS: t0.Add(time.Duration(i) * 20 * time.Minute / time.Duration(n)).Truncate(time.Millisecond), Region: regions[i%len(regions)]}
		msgs[i] = kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil), Offset: int64(i), Time: time.Now()}
	}
	wc := window.DefaultConfig()
	wc.K, wc.M = 10, 3
	wc.Windows = []window.WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: model.Hour, Mode: windowset.Exact},
	}
	for _, c := range []struct {
		name   string
		groups windowset.Groups
	}{{"off", windowset.Groups{}}, {"3-regions", windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us", "apac"}}}} {
		b.Run(c.name, func(b *testing.B) {
			m, err := newMetrics(nil)
			if err != nil {
				b.Fatal(err)
			}
			cfg := DefaultConfig()
			cfg.Window, cfg.Log, cfg.Groups = wc, slog.New(slog.DiscardHandler), c.groups
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
				if c.groups.On() {
					p.groups = newGroupStates(c.groups, cfg.groupWindow())
				}
				b.StartTimer()
				for _, msg := range msgs {
					if err := p.handle(ctx, msg); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
			b.ReportMetric(0, "ns/op")
		})
	}
}
