package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/hotset"
	"trending/model"
	"trending/model/event"
	"trending/model/salt"
	"trending/model/topk"
	"trending/speed/merge"
	"trending/speed/worker"
)

// BenchmarkHotItem: one item at 50,000 events a second (each message one view: the worst
// case, nothing pre-summed) among normal traffic (5,000 a second over 2,000 items) on a
// 4-partition topic, through the real broker into one speed worker with the default windows
// and a merger. Without salting every event goes to its item's partition, so the hot item's
// partition takes about 91% of the messages; with salting (salting=on: the item configured
// hot, 4 ways, the producers keying it through model/salt) its events spread over the
// partitions its sub-keys hash to. Reports the rate produced, the largest consumer lag of the
// hot item's own partition, of the others and of any (trending_speed_consumer_lag, sampled
// every 250 ms), and how long every partition took to drain once the producer stopped; then
// checks the merged live hour list against the truth of what was produced.
//
//	go test ./speed/worker -run '^$' -bench HotItem -benchtime 1x
func BenchmarkHotItem(b *testing.B) {
	for _, ways := range []int{0, 4} {
		name := "salting=off"
		if ways > 0 {
			name = fmt.Sprintf("salting=on/ways=%d", ways)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				hotItem(b, 50_000, 20*time.Second, ways)
			}
		})
	}
}

func hotItem(b *testing.B, hotRate int, dur time.Duration, ways int) {
	brokers, obj := real(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEnv(b, brokers, obj, 4)
	reg := prometheus.NewRegistry()
	cfg := worker.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.DLQTopic, cfg.PartialsTopic, cfg.ConsumerGroup = eventlog.Plain(brokers...), e.views, e.dlq, e.partials, e.group
	cfg.Window.K = 100
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
	rc.Kafka, rc.Topic, rc.Lookback = eventlog.Plain(brokers...), e.partials, time.Minute
	go m.Run(ctx, rc)

	hotPart := (&kafka.Hash{}).Balance(kafka.Message{Key: []byte("HOT")}, 0, 1, 2, 3)
	var salter *salt.Salter
	if ways > 0 {
		var err error
		if salter, err = salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "HOT", Ways: ways}), nil); err != nil {
			b.Fatal(err)
		}
		subs := map[int]int{}
		for i := range ways {
			subs[(&kafka.Hash{}).Balance(kafka.Message{Key: []byte(salt.Key("HOT", i))}, 0, 1, 2, 3)]++
		}
		b.Logf("HOT's %d sub-keys by partition: %v", ways, subs)
	}
	lags := func() map[int]float64 {
		out := map[int]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "trending_speed_consumer_lag" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				for _, l := range mt.GetLabel() {
					if l.GetName() == "partition" {
						p, _ := strconv.Atoi(l.GetValue())
						out[p] = mt.GetGauge().GetValue()
					}
				}
			}
		}
		return out
	}

	// Eight producers, each an eighth of the traffic every 20 ms, on a writer of their own
	// with large batches: one synchronous writer does not reach 55,000 messages a second.
	// A transport of its own: kafka-go's shared default caches the metadata of the topics it
	// knew, so a second run's new topic would be unknown to it.
	wr := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: e.views, Balancer: &kafka.Hash{},
		BatchSize: 5000, BatchBytes: 8 << 20, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireOne,
		Transport: eventlog.Plain(brokers...).Transport()}
	defer wr.Transport.(*kafka.Transport).CloseIdleConnections()
	defer wr.Close()
	const producers, tick = 8, 20 * time.Millisecond
	perTick := hotRate * int(tick) / int(time.Second) / producers
	truths := make([]map[string]uint64, producers)
	perPart := make([][4]int, producers) // messages sent to each partition, by producer
	b.ResetTimer()
	start := time.Now()
	done := make(chan int, producers)
	for g := range producers {
		truths[g] = map[string]uint64{}
		go func(truth map[string]uint64, parts *[4]int, rng *rand.Rand) {
			sent := 0
			for next := start; time.Since(start) < dur && ctx.Err() == nil; next = next.Add(tick) {
				time.Sleep(time.Until(next))
				now := time.Now().UTC().Truncate(time.Millisecond)
				msgs := make([]kafka.Message, 0, perTick+perTick/10)
				for range perTick {
					msgs = append(msgs, kafka.Message{Key: []byte("HOT"), Value: event.Event{ItemID: "HOT", Count: 1, TS: now}.AppendJSON(nil)})
				}
				for range perTick / 10 {
					id := fmt.Sprintf("N%d", rng.IntN(2000))
					msgs = append(msgs, kafka.Message{Key: []byte(id), Value: event.Event{ItemID: id, Count: 1, TS: now}.AppendJSON(nil)})
				}
				hotset.Key(salter, msgs, time.Now())
				if err := wr.WriteMessages(ctx, msgs...); err != nil {
					// Part of the messages may have been written: the truth is lost, and so
					// is the run (another test may have stopped the shared broker).
					b.Errorf("produce: %.200v", err)
					done <- -1
					return
				}
				for i := range msgs {
					parts[(&kafka.Hash{}).Balance(msgs[i], 0, 1, 2, 3)]++
					if i < perTick {
						truth["HOT"]++
					} else {
						truth[string(msgs[i].Key)]++
					}
				}
				sent += len(msgs)
			}
			done <- sent
		}(truths[g], &perPart[g], rand.New(rand.NewPCG(5, uint64(g))))
	}
	maxHot, maxOther, maxAny := 0.0, 0.0, 0.0
	var sent, finished int
	var produced time.Duration
	sample := time.NewTicker(250 * time.Millisecond)
	defer sample.Stop()
	var drained time.Duration
	for drained == 0 {
		select {
		case n := <-done:
			if n < 0 {
				b.FailNow()
			}
			sent += n
			if finished++; finished == producers {
				produced = time.Since(start)
				done = nil
			}
		case <-sample.C:
		}
		ls := lags()
		drainedAll := len(ls) == 4
		for p, v := range ls {
			if p == hotPart {
				maxHot = max(maxHot, v)
			} else {
				maxOther = max(maxOther, v)
			}
			maxAny = max(maxAny, v)
			drainedAll = drainedAll && v == 0
		}
		if done == nil && drainedAll {
			drained = time.Since(start) - produced
		}
		if time.Since(start) > dur+3*time.Minute {
			b.Fatalf("the hot partition still lags %v after %s", ls[hotPart], time.Since(start))
		}
	}
	b.StopTimer()
	hot := uint64(0)
	for _, t := range truths {
		hot += t["HOT"]
	}
	b.ReportMetric(float64(hot)/produced.Seconds(), "hot-events/s")
	b.ReportMetric(float64(sent)/produced.Seconds(), "events/s")
	b.ReportMetric(maxHot, "hot-max-lag")
	b.ReportMetric(maxOther, "others-max-lag")
	b.ReportMetric(maxAny, "any-max-lag")
	var busiest int
	for p := range 4 {
		n := 0
		for g := range producers {
			n += perPart[g][p]
		}
		busiest = max(busiest, n)
	}
	b.ReportMetric(float64(busiest)/float64(sent), "busiest-share")
	b.ReportMetric(drained.Seconds(), "drain-s")

	// The merged live hour list equals the truth's top 100 (ties by item id).
	truth := map[string]uint64{}
	for _, t := range truths {
		for id, n := range t {
			truth[id] += n
		}
	}
	var want []topk.Entry
	for id, n := range truth {
		want = append(want, topk.Entry{Item: id, Count: n})
	}
	topk.Sort(want)
	want = want[:100]
	deadline := time.Now().Add(time.Minute)
	for {
		l, err := e.st.Get(ctx, model.Key{Window: "hour"})
		var got []topk.Entry
		if err == nil {
			for _, it := range l.Items {
				got = append(got, topk.Entry{Item: it.ItemID, Count: it.Views})
			}
		}
		if slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("live hour list %v (err %v), want the truth %v", got[:min(3, len(got))], err, want[:3])
		}
		time.Sleep(250 * time.Millisecond)
	}
}
