package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	"trending/speed/merge"
	"trending/speed/window"
	"trending/speed/worker"
)

const k = 10

// env is one test's pipeline: topics, bucket, serving store, merger.
type env struct {
	t        testing.TB
	brokers  []string
	obj      *objstore.Client
	views    string
	dlq      string
	partials string
	group    string
	st       store.Store
	mu       sync.Mutex
	events   []event.Event // every valid event produced
	writer   *eventlog.Writer
}

func newEnv(t testing.TB, brokers []string, obj *objstore.Client, partitions int) *env {
	ctx := itest.Context(t, time.Minute)
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	name := itest.Name(t, "views")
	e := &env{t: t, brokers: brokers, obj: obj, views: name, dlq: name + ".dlq", partials: name + ".partials", group: name + "-speed"}
	if _, err := eventlog.EnsureTopics(ctx, brokers, eventlog.Spec{Name: e.views, Partitions: partitions}, eventlog.Spec{Name: e.dlq, Partitions: 1}, eventlog.Spec{Name: e.partials, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.writer = eventlog.NewWriter(brokers, e.views)
	t.Cleanup(func() { e.writer.Close() })
	return e
}

func windowConfig() window.Config {
	c := window.DefaultConfig()
	c.K, c.M = k, 3
	c.Windows = []window.WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: model.Hour, Mode: windowset.Exact},
	}
	c.Sketch.Width = 1 << 10
	return c
}

func (e *env) worker(t *testing.T, mods ...func(*worker.Config)) *worker.Worker {
	cfg := worker.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.DLQTopic, cfg.PartialsTopic, cfg.ConsumerGroup = eventlog.Plain(e.brokers...), e.views, e.dlq, e.partials, e.group
	cfg.Window, cfg.PublishEvery, cfg.CheckpointEvery = windowConfig(), 100*time.Millisecond, 150*time.Millisecond
	cfg.CheckpointPrefix, cfg.Objects = "checkpoints/"+e.views, e.obj
	for _, mod := range mods {
		mod(&cfg)
	}
	w, err := worker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// startWorker runs a worker until the returned stop is called; kill=true stops it like a crash.
// mods change the worker's config.
func (e *env) startWorker(t *testing.T, mods ...func(*worker.Config)) (stop func(kill bool)) {
	w := e.worker(t, mods...)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func(kill bool) {
		if kill {
			cancel(worker.ErrKilled)
		} else {
			cancel(nil)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("worker did not stop within 60s")
		}
	}
}

func (e *env) startMerger(t *testing.T) {
	mcfg := merge.DefaultConfig()
	mcfg.K, mcfg.Store, mcfg.Staleness = k, e.st, time.Hour
	m, err := merge.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		rc := merge.DefaultRunConfig()
		rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = eventlog.Plain(e.brokers...), e.partials, 100*time.Millisecond, time.Hour
		done <- m.Run(ctx, rc)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("merger: %v", err)
		}
	})
}

func (e *env) produce(t *testing.T, evs []event.Event, garbage ...[]byte) {
	ctx := itest.Context(t, time.Minute)
	msgs := make([]kafka.Message, 0, len(evs)+len(garbage))
	for _, ev := range evs {
		msgs = append(msgs, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
	}
	for i, g := range garbage {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("garbage-%d", i)), Value: g})
	}
	if err := e.writer.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
	e.mu.Lock()
	e.events = append(e.events, evs...)
	e.mu.Unlock()
}

// truth is the exact top K of the events whose minute is in [from, to).
func (e *env) truth(from, to time.Time) []topk.Entry {
	counts := map[string]uint64{}
	e.mu.Lock()
	for _, ev := range e.events {
		if !ev.TS.Before(from) && ev.TS.Before(to) {
			counts[ev.ItemID] += uint64(ev.Count)
		}
	}
	e.mu.Unlock()
	return topk.TopK(k, counts)
}

// waitFor polls the served list until it equals want.
func (e *env) waitFor(t *testing.T, key model.Key, want []topk.Entry, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		l, err := e.st.Get(context.Background(), key)
		if err == nil {
			got := make([]topk.Entry, len(l.Items))
			for i, it := range l.Items {
				got[i] = topk.Entry{Item: it.ItemID, Count: it.Views}
			}
			// The counts equal the truth and the list is whole and unsketched; it does not
			// claim exact (the speed layer's lists never do: late events may be missing),
			// except the all-time list when the merger proved it (speed/merge alltime.go).
			if fmt.Sprint(got) == fmt.Sprint(want) && !l.Incomplete && l.ErrorBound == nil && (!l.Exact || key == model.Key{Window: "all"}) {
				return
			}
			last = fmt.Sprintf("version %d status %s exact=%v partial=%v stale=%v items %v", l.Version, l.Status, l.Exact, l.Incomplete, l.StalePartitions, got)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s never equalled the truth\n got: %s\nwant: %v", key, last, want)
}

// stream makes n events over [t0, t0+span) from a skewed item set, in event-time order.
func stream(rng *rand.Rand, t0 time.Time, span time.Duration, n int) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		item := fmt.Sprintf("V%d", int(rng.ExpFloat64()*8)%60)
		ts := t0.Add(time.Duration(i) * span / time.Duration(n)).Truncate(time.Millisecond)
		evs[i] = event.Event{ItemID: item, Count: uint32(1 + rng.IntN(5)), TS: ts}
	}
	return evs
}

// sentinels push every partition's watermark to ts: one event per key S0..S63, enough to hit
// every partition.
func sentinels(ts time.Time) []event.Event {
	var evs []event.Event
	for i := 0; i < 64; i++ {
		evs = append(evs, event.Event{ItemID: fmt.Sprintf("S%d", i), Count: 1, TS: ts})
	}
	return evs
}

// exactness: a stream with late, too-late and malformed events gives served hour and
// calendar-hour lists equal to the truth.
func exactness(t *testing.T, brokers []string, obj *objstore.Client) {
	e := newEnv(t, brokers, obj, 4)
	e.startMerger(t)
	stop := e.startWorker(t)
	defer stop(false)
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := stream(rng, t0, 30*time.Minute, 3000)
	// Late: events for minute 2 arriving after minute 20 is closed; too late: two hours back.
	late := []event.Event{{ItemID: "V1", Count: 50, TS: t0.Add(2 * time.Minute)}, {ItemID: "LATE", Count: 7, TS: t0.Add(3 * time.Minute)}}
	tooLate := []event.Event{{ItemID: "ANCIENT", Count: 1000, TS: t0.Add(-3 * time.Hour)}}
	var garbage [][]byte
	for i := 0; i < 50; i++ {
		garbage = append(garbage, []byte(fmt.Sprintf(`{"item_id": "", "count": %d}`, i)))
	}
	e.produce(t, evs[:2000])
	e.produce(t, late)
	e.produce(t, tooLate, garbage...)
	e.produce(t, evs[2000:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	// AsOf = t0+39m (lateness 30s): the hour window is (t0-21m, t0+39m].
	e.waitFor(t, model.Key{Window: "hour"}, e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute)), 60*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Start: t0}, e.truth(t0, t0.Add(39*time.Minute)), 10*time.Second)
	if l, err := e.st.Get(context.Background(), model.Key{Window: "hour", Start: t0}); err != nil || l.Status != model.StatusLive || l.DroppedLate != 0 {
		t.Fatalf("open calendar hour: status %q dropped_late %d, %v; want live, 0", l.Status, l.DroppedLate, err)
	}
	// Close the hour, then send two events too late for it: its final list is provisional
	// and says how many events it is missing.
	e.produce(t, sentinels(t0.Add(62*time.Minute)))
	e.produce(t, []event.Event{{ItemID: "TOOLATE", Count: 3, TS: t0.Add(10 * time.Minute)}, {ItemID: "TOOLATE2", Count: 4, TS: t0.Add(50 * time.Minute)}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := e.st.Get(context.Background(), model.Key{Window: "hour", Start: t0})
		if err == nil && l.Status == model.StatusProvisional && l.DroppedLate == 2 && !l.Exact {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed calendar hour never said provisional with 2 dropped late: status %q dropped_late %d exact %v, %v", l.Status, l.DroppedLate, l.Exact, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Every malformed message is in the DLQ with its reason.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: e.dlq, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx := itest.Context(t, 30*time.Second)
	for i := 0; i < len(garbage); i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("dlq message %d: %v", i, err)
		}
		var reason string
		for _, h := range m.Headers {
			if h.Key == "reason" {
				reason = string(h.Value)
			}
		}
		if reason == "" || !strings.HasPrefix(string(m.Value), `{"item_id": ""`) {
			t.Fatalf("dlq message %d: reason %q value %q", i, reason, m.Value)
		}
	}
}

// crashes kills the worker without a graceful stop at random points while events flow; after
// restarts the served lists equal the truth: nothing lost, nothing counted twice.
func crashes(t *testing.T, brokers []string, obj *objstore.Client, kills int) {
	e := newEnv(t, brokers, obj, 4)
	e.startMerger(t)
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := stream(rng, t0, 30*time.Minute, 6000)
	batches := 4 * kills
	per := len(evs) / batches
	stop := e.startWorker(t)
	for b := 0; b < batches; b++ {
		e.produce(t, evs[b*per:(b+1)*per])
		if b%4 == 3 {
			time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
			stop(true)
			stop = e.startWorker(t)
		}
	}
	e.produce(t, evs[batches*per:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	defer stop(false)
	e.waitFor(t, model.Key{Window: "hour"}, e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute)), 90*time.Second)
}

// rebalance: two workers share the group; one leaves and comes back; partitions move with
// their checkpoints and the lists stay exact.
func rebalance(t *testing.T, brokers []string, obj *objstore.Client) {
	e := newEnv(t, brokers, obj, 4)
	e.startMerger(t)
	rng := rand.New(rand.NewPCG(5, 6))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := stream(rng, t0, 30*time.Minute, 4000)
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	a := e.startWorker(t, func(c *worker.Config) { c.Registry = regA })
	b := e.startWorker(t, func(c *worker.Config) { c.Registry = regB })
	metric := func(reg *prometheus.Registry, name string) float64 { return counterValue(t, reg, name) }
	// until waits for cond on the workers' metrics: the group assigns by itself.
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: assigned a %v b %v, restores a %v b %v", what, metric(regA, "trending_speed_partitions_assigned"), metric(regB, "trending_speed_partitions_assigned"),
					metric(regA, "trending_speed_restores_total"), metric(regB, "trending_speed_restores_total"))
			}
		}
	}
	assigned := func(reg *prometheus.Registry) float64 { return metric(reg, "trending_speed_partitions_assigned") }
	until("both workers own partitions", func() bool { return assigned(regA) >= 1 && assigned(regB) >= 1 && assigned(regA)+assigned(regB) == 4 })
	e.produce(t, evs[:1500])
	time.Sleep(500 * time.Millisecond)
	restoresA := metric(regA, "trending_speed_restores_total")
	b(false) // leaves: its partitions move to a with their checkpoints
	until("a owns all four", func() bool { return assigned(regA) == 4 })
	e.produce(t, evs[1500:3000])
	time.Sleep(500 * time.Millisecond)
	regB = prometheus.NewRegistry()
	b = e.startWorker(t, func(c *worker.Config) { c.Registry = regB }) // comes back
	until("b owns partitions again", func() bool { return assigned(regB) >= 1 && assigned(regA)+assigned(regB) == 4 })
	e.produce(t, evs[3000:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	e.waitFor(t, model.Key{Window: "hour"}, e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute)), 90*time.Second)
	// The partitions that moved were restored from checkpoints, not rebuilt from nothing: a
	// restored b's when b left, b restored those it took back.
	if got := metric(regA, "trending_speed_restores_total"); got <= restoresA {
		t.Errorf("a restored %v partitions in all, %v before b left: none of b's moved through a checkpoint", got, restoresA)
	}
	if got := metric(regB, "trending_speed_restores_total"); got < 1 {
		t.Errorf("b came back and restored %v partitions from checkpoints", got)
	}
	b(false)
	a(false)
}

func embedded(t *testing.T) ([]string, *objstore.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	br, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	s3, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, "trending", "x", "y"
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	return []string{br.Addr}, obj
}

func real(t testing.TB) ([]string, *objstore.Client) {
	addr := itest.Kafka(t)
	cfg := itest.S3(t)
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, itest.Name(t, "speed"), cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	return []string{addr}, obj
}

// dlqReasons reads n messages from the DLQ and returns their reason headers by key.
func (e *env) dlqReasons(t *testing.T, n int) map[string]string {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: e.dlq, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx := itest.Context(t, 30*time.Second)
	out := map[string]string{}
	for i := 0; i < n; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("dlq message %d: %v", i, err)
		}
		for _, h := range m.Headers {
			if h.Key == "reason" {
				out[string(m.Key)] = string(h.Value)
			}
		}
	}
	return out
}

// future: one event dated a year ahead (inside the decoder's range) would jump its partition's
// watermark and empty the hour list; with the default MaxFuture it lands in the DLQ as
// future_ts, is counted in the metric, and the lists stay exact.
func future(t *testing.T, brokers []string, obj *objstore.Client) {
	e := newEnv(t, brokers, obj, 2)
	e.startMerger(t)
	reg := prometheus.NewRegistry()
	stop := e.startWorker(t, func(c *worker.Config) { c.Registry = reg })
	defer stop(false)
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := stream(rng, t0, 30*time.Minute, 1000)
	e.produce(t, evs[:500])
	// Not in e.events: it must not be counted. Its key is an item of the stream, so it lands
	// in a partition that has real events after it.
	ahead := event.Event{ItemID: "V1", Count: 1000, TS: time.Now().UTC().AddDate(1, 0, 0).Truncate(time.Millisecond)}
	ctx := itest.Context(t, time.Minute)
	if err := e.writer.WriteMessages(ctx, kafka.Message{Key: []byte("V1"), Value: ahead.AppendJSON(nil)}); err != nil {
		t.Fatal(err)
	}
	e.produce(t, evs[500:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	e.waitFor(t, model.Key{Window: "hour"}, e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute)), 60*time.Second)
	if got := e.dlqReasons(t, 1); got["V1"] != worker.ReasonFutureTS {
		t.Fatalf("DLQ reasons %v, want V1: %s", got, worker.ReasonFutureTS)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64 = -1
	for _, mf := range mfs {
		if mf.GetName() != "trending_speed_dlq_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == worker.ReasonFutureTS {
					n = m.GetCounter().GetValue()
				}
			}
		}
	}
	if n != 1 {
		t.Fatalf(`trending_speed_dlq_total{reason="future_ts"} = %v, want 1`, n)
	}
}

func TestExactnessEmbedded(t *testing.T) { b, o := embedded(t); exactness(t, b, o) }
func TestFutureEmbedded(t *testing.T)    { b, o := embedded(t); future(t, b, o) }
func TestFutureKafka(t *testing.T)       { b, o := real(t); future(t, b, o) }
func TestExactnessKafka(t *testing.T)    { b, o := real(t); exactness(t, b, o) }
func TestCrashesKafka(t *testing.T)      { b, o := real(t); crashes(t, b, o, 5) }
func TestRebalanceKafka(t *testing.T)    { b, o := real(t); rebalance(t, b, o) }

var _ = sort.Strings

// consumerLag: a worker that counted everything reports trending_speed_consumer_lag 0 and a
// checkpoint time for each partition it owns, and drops both when it lets them go.
func consumerLag(t *testing.T, brokers []string, obj *objstore.Client) {
	e := newEnv(t, brokers, obj, 2)
	rng := rand.New(rand.NewPCG(3, 4))
	e.produce(t, stream(rng, time.Now().UTC().Add(-time.Hour), 30*time.Minute, 600))
	reg := prometheus.NewRegistry()
	stop := e.startWorker(t, func(c *worker.Config) { c.Registry = reg })
	gauges := func(name string) map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "partition" {
						out[l.GetValue()] = m.GetGauge().GetValue()
					}
				}
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		lag, ck := gauges("trending_speed_consumer_lag"), gauges("trending_speed_checkpoint_timestamp_seconds")
		if len(lag) == 2 && lag["0"] == 0 && lag["1"] == 0 && len(ck) == 2 {
			for p, ts := range ck {
				if age := time.Since(time.Unix(int64(ts), 0)); age < -time.Second || age > time.Minute {
					t.Fatalf("partition %s: checkpoint timestamp %v is %v old", p, ts, age)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag %v, checkpoint times %v: want partitions 0 and 1 at lag 0 with a checkpoint", lag, ck)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop(false)
	if lag, ck := gauges("trending_speed_consumer_lag"), gauges("trending_speed_checkpoint_timestamp_seconds"); len(lag)+len(ck) != 0 {
		t.Fatalf("after the worker stopped: lag %v, checkpoint times %v; want none", lag, ck)
	}
}

func TestConsumerLagEmbedded(t *testing.T) { b, o := embedded(t); consumerLag(t, b, o) }
