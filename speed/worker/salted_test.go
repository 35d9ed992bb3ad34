package worker_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/hotset"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/event"
	"trending/model/salt"
	"trending/speed/worker"
)

func TestSaltedEmbedded(t *testing.T) { b, o := embedded(t); saltedCrashes(t, b, o, 1) }
func TestSaltedKafka(t *testing.T)    { b, o := real(t); saltedCrashes(t, b, o, 3) }

// produceSalted produces evs keyed by s (nil: unsalted), as a producer with a Salter does.
func (e *env) produceSalted(t *testing.T, s *salt.Salter, evs []event.Event) {
	msgs := make([]kafka.Message, 0, len(evs))
	for _, ev := range evs {
		msgs = append(msgs, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
	}
	hotset.Key(s, msgs, time.Now())
	if err := e.writer.WriteMessages(itest.Context(t, time.Minute), msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
	e.mu.Lock()
	e.events = append(e.events, evs...)
	e.mu.Unlock()
}

// saltedCrashes: two hot items, one salted from the middle of the stream on (its first
// counts on its own partition, unsalted), one salted at first and unsalted later, each share
// under its partition's reported top m x K and each item first in the truth; with the worker
// killed between batches (its tracked items restored from the checkpoints), the served hour
// and calendar hour lists equal the truth.
func saltedCrashes(t *testing.T, brokers []string, obj *objstore.Client, kills int) {
	e := newEnv(t, brokers, obj, 4)
	e.startMerger(t)
	rng := rand.New(rand.NewPCG(7, 8))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	// 200 items of 100 to 300 views each (about 50 a partition, the 30th best near 200), and
	// two hot ones with 1,000 each: a share of one over 8 ways is about 125.
	var evs []event.Event
	for i := range 200 {
		for n := 100 + rng.IntN(200); n > 0; {
			c := min(n, 1+rng.IntN(5))
			n -= c
			evs = append(evs, event.Event{ItemID: fmt.Sprintf("V%03d", i), Count: uint32(c)})
		}
	}
	for _, hot := range []string{"HOT-LATE", "HOT-EARLY"} {
		for range 1000 {
			evs = append(evs, event.Event{ItemID: hot, Count: 1})
		}
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for i := range evs {
		evs[i].TS = t0.Add(time.Duration(i) * 30 * time.Minute / time.Duration(len(evs))).Truncate(time.Millisecond)
	}
	early, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "HOT-EARLY", Ways: 8}), nil)
	if err != nil {
		t.Fatal(err)
	}
	late, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "HOT-LATE", Ways: 8}), nil)
	if err != nil {
		t.Fatal(err)
	}
	var regs []*prometheus.Registry // one per worker run
	withReg := func(c *worker.Config) {
		regs = append(regs, prometheus.NewRegistry())
		c.Registry = regs[len(regs)-1]
	}
	stop := e.startWorker(t, withReg)
	batches := 4 * (kills + 1)
	per := len(evs) / batches
	saltedEvents := 0
	for b := range batches {
		s, hot := early, "HOT-EARLY" // HOT-EARLY salted in the first half, HOT-LATE in the second
		if b >= batches/2 {
			s, hot = late, "HOT-LATE"
		}
		hi := (b + 1) * per
		if b == batches-1 {
			hi = len(evs)
		}
		for _, ev := range evs[b*per : hi] {
			if ev.ItemID == hot {
				saltedEvents++
			}
		}
		e.produceSalted(t, s, evs[b*per:hi])
		if b%4 == 3 && b < batches-1 {
			time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
			stop(true)
			stop = e.startWorker(t, withReg)
		}
	}
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	defer stop(false)
	want := e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute))
	if want[0].Item != "HOT-EARLY" && want[0].Item != "HOT-LATE" || want[1].Item != "HOT-EARLY" && want[1].Item != "HOT-LATE" {
		t.Fatalf("the hot items do not lead the truth: %v", want)
	}
	e.waitFor(t, model.Key{Window: "hour"}, want, 90*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Start: t0}, e.truth(t0, t0.Add(39*time.Minute)), 10*time.Second)
	var got float64
	for _, reg := range regs {
		got += counterValue(t, reg, "trending_speed_salted_events_total")
	}
	if got < float64(saltedEvents) {
		t.Fatalf("trending_speed_salted_events_total %v over the worker's runs, want at least the %d salted events", got, saltedEvents)
	}
}
