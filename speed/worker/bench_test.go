package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model/event"
	"trending/speed/checkpoint"
	"trending/speed/window"
	"trending/speed/worker"
)

// prefill writes n events for distinct items over one partition of a new topic.
func prefill(b *testing.B, addr string, n, items int) string {
	ctx := itest.Context(b, 5*time.Minute)
	topic := itest.Name(b, "bench")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
		b.Fatal(err)
	}
	w := eventlog.NewWriter([]string{addr}, topic)
	w.BatchSize = 1000
	defer w.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	t0 := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)
	msgs := make([]kafka.Message, 0, 5000)
	for i := 0; i < n; i++ {
		ev := event.Event{ItemID: fmt.Sprintf("item-%07d", int(rng.ExpFloat64()*float64(items)/8)%items), Count: 1 + uint32(rng.IntN(3)),
			TS: t0.Add(time.Duration(i) * 20 * time.Minute / time.Duration(n)).Truncate(time.Millisecond)}
		msgs = append(msgs, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
		if len(msgs) == cap(msgs) || i == n-1 {
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	return topic
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkConsume: events/s and CPU per event through the speed worker (decode, windows,
// DLQ checks, publishing and checkpointing on their tickers) against two bare loops over the
// same pre-filled topic on the real broker, in the same run: kafka-go's Reader
// (FetchMessage, the loop the worker was built on) and eventlog.PartitionReader (whole fetch
// responses on the calling goroutine, what the worker reads with now: the floor of any
// consumer on kafka-go). Every iteration runs each arm once, in a rotating order, with a
// collection before each; CPU is the process's (getrusage), the measure that holds while
// other work loads the machine. Ratios are the baseline's CPU per event over the arm's
// (above 1: the arm is cheaper).
// Run: make services-up; eval "$(infra/local/services.sh env)";
// GOMAXPROCS=1 go test ./speed/worker -run '^$' -bench Consume -benchtime 3x
func BenchmarkConsume(b *testing.B) {
	addr := itest.Kafka(b)
	const n = 300_000
	topic := prefill(b, addr, n, 100_000)
	cfg := itest.S3(b)
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, itest.Name(b, "bench"), cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		b.Fatal(err)
	}
	if err := obj.EnsureBucket(context.Background()); err != nil {
		b.Fatal(err)
	}
	kc := eventlog.Plain(addr)
	type result struct{ events, cpu, wall float64 }
	arms := []struct {
		name string
		run  func(b *testing.B) result
	}{
		{"fetchmessage", func(b *testing.B) result {
			ctx := itest.Context(b, 5*time.Minute)
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, QueueCapacity: 1024})
			defer r.Close()
			start, cpu0 := time.Now(), cpuSeconds()
			for j := 0; j < n; j++ {
				if _, err := r.FetchMessage(ctx); err != nil {
					b.Fatal(err)
				}
			}
			return result{n, cpuSeconds() - cpu0, time.Since(start).Seconds()}
		}},
		{"batch", func(b *testing.B) result {
			ctx := itest.Context(b, 5*time.Minute)
			rc := eventlog.DefaultPartitionReaderConfig()
			rc.Topic = topic
			r, err := kc.PartitionReader(rc, kafka.FirstOffset)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			msgs := make([]kafka.Message, 0, 512)
			start, cpu0 := time.Now(), cpuSeconds()
			for got := 0; got < n; got += len(msgs) {
				if msgs, err = r.Fetch(ctx, msgs[:0]); err != nil {
					b.Fatal(err)
				}
			}
			return result{n, cpuSeconds() - cpu0, time.Since(start).Seconds()}
		}},
		{"worker", func(b *testing.B) result {
			reg := &eventsProbe{Registerer: prometheus.NewRegistry()}
			wcfg := worker.DefaultConfig()
			wcfg.Kafka, wcfg.Topic, wcfg.DLQTopic, wcfg.PartialsTopic = kc, topic, topic+".dlq", topic+".partials"
			wcfg.ConsumerGroup, wcfg.Window, wcfg.PublishEvery, wcfg.CheckpointEvery = itest.Name(b, "g"), windowConfig(), time.Second, 5*time.Second
			wcfg.CheckpointPrefix, wcfg.Objects, wcfg.Registry = itest.Name(b, "ck"), obj, reg
			w, err := worker.New(wcfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			// Time from the first counted event: joining the group and the first fetch are a
			// one-off cost the bare loops do not pay either.
			var first float64
			for first = reg.consumed(b); first == 0; first = reg.consumed(b) {
				time.Sleep(time.Millisecond)
			}
			start, cpu0 := time.Now(), cpuSeconds()
			for reg.consumed(b) < n {
				time.Sleep(2 * time.Millisecond)
			}
			res := result{n - first, cpuSeconds() - cpu0, time.Since(start).Seconds()}
			cancel()
			<-done
			return res
		}},
	}
	sums := make([]result, len(arms))
	for it := 0; b.Loop(); it++ {
		for r := range arms {
			a := (it + r) % len(arms)
			runtime.GC()
			res := arms[a].run(b)
			sums[a].events += res.events
			sums[a].cpu += res.cpu
			sums[a].wall += res.wall
		}
	}
	for i, a := range arms {
		b.ReportMetric(sums[i].events/sums[i].wall, a.name+"_events/s")
		b.ReportMetric(sums[i].cpu/(sums[i].events/1e6), a.name+"_cpu-s/Mevents")
	}
	perEvent := func(i int) float64 { return sums[i].cpu / sums[i].events }
	b.ReportMetric(perEvent(0)/perEvent(2), "worker/fetchmessage_cpu")
	b.ReportMetric(perEvent(1)/perEvent(2), "worker/batch_cpu")
	b.ReportMetric(perEvent(0)/perEvent(1), "batch/fetchmessage_cpu")
	b.ReportMetric(0, "ns/op")
}

// eventsProbe is the worker's Registerer in BenchmarkConsume: it keeps the events counter so
// that polling it every few milliseconds reads four counters, not a whole Gather, whose
// garbage (about 30 KB a call) the timed process would otherwise collect on the worker's
// bill.
type eventsProbe struct {
	prometheus.Registerer
	events prometheus.Collector
}

func (r *eventsProbe) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 16)
	c.Describe(descs)
	close(descs)
	for d := range descs {
		if strings.Contains(d.String(), `"trending_speed_events_total"`) {
			r.events = c
		}
	}
	return r.Registerer.Register(c)
}

func (r *eventsProbe) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// consumed sums the events counter over its outcomes.
func (r *eventsProbe) consumed(b *testing.B) float64 {
	if r.events == nil {
		b.Fatal("the worker registered no trending_speed_events_total")
	}
	ms := make(chan prometheus.Metric, 16)
	r.events.Collect(ms)
	close(ms)
	var sum float64
	for m := range ms {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			b.Fatal(err)
		}
		sum += pb.GetCounter().GetValue()
	}
	return sum
}

// BenchmarkRecovery: a partition holding 1M distinct items in its exact hour window: time to
// load its checkpoint from MinIO, restore the state and answer its top list, i.e. from restart
// to exact lists before any replay (the replay after it is at most one checkpoint interval of
// events, measured by BenchmarkConsume).
func BenchmarkRecovery(b *testing.B) {
	cfg := itest.S3(b)
	ctx := context.Background()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, itest.Name(b, "recovery"), cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		b.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		b.Fatal(err)
	}
	wc := windowConfig()
	p, err := window.New(wc)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now().UTC().Add(-50 * time.Minute).Truncate(time.Minute)
	const items = 1_000_000
	for i := 0; i < items; i++ {
		p.Add(event.Event{ItemID: fmt.Sprintf("item-%07d", i), Count: uint32(1 + i%97), TS: t0.Add(time.Duration(i%40) * time.Minute)})
	}
	p.Add(event.Event{ItemID: "sentinel", Count: 1, TS: t0.Add(45 * time.Minute)})
	snap, err := p.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	st := checkpoint.NewKeeper(obj, "checkpoints", 2, nil)
	if _, err := st.Save(ctx, checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: items, CreatedAt: time.Now(), State: snap}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var restored *window.Partition
		cp, found, err := st.Load(ctx, "views", 0, func(c checkpoint.Checkpoint) error {
			r, err := window.Restore(wc, c.State)
			restored = r
			return err
		})
		if err != nil || !found || cp.Offset != items {
			b.Fatalf("load: %v found=%v", err, found)
		}
		l, err := restored.Top("hour")
		if err != nil || len(l.Items) == 0 {
			b.Fatalf("top: %v", err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/restore")
	}
	b.ReportMetric(float64(len(snap))/1e6, "MB/checkpoint")
}
