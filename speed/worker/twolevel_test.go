package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/event"
	"trending/model/salt"
	"trending/speed/merge"
)

func TestTwoLevelsEmbedded(t *testing.T) { b, o := embedded(t); twoLevels(t, b, o) }
func TestTwoLevelsKafka(t *testing.T)    { b, o := real(t); twoLevels(t, b, o) }

// runMerger runs m over topic until the returned stop is called.
func runMerger(t *testing.T, brokers []string, m *merge.Merger, topic string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		rc := merge.DefaultRunConfig()
		rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = eventlog.Plain(brokers...), topic, 100*time.Millisecond, time.Hour
		done <- m.Run(ctx, rc)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("merger: %v", err)
			}
		})
	}
}

// twoLevels: a speed worker over 4 partitions publishes to a partials topic of 2 partitions;
// two shard mergers (partitions 0, 2 and 1, 3) and a top merger write the served lists,
// which equal the truth with a salted hot item among them. Shard merger 0 is restarted in the
// middle (it rebuilds from the partials' lookback) and a second shard merger 1 runs as a
// standby; the served hour list's version never goes back over the run.
func twoLevels(t *testing.T, brokers []string, obj *objstore.Client) {
	e := newEnv(t, brokers, obj, 4)
	ctx := itest.Context(t, 2*time.Minute)
	e.partials = e.views + ".partials2"
	top := e.views + ".top"
	if _, err := eventlog.EnsureTopics(ctx, brokers, eventlog.Spec{Name: e.partials, Partitions: 2}, eventlog.Spec{Name: top, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	tw := eventlog.NewWriter(brokers, top)
	t.Cleanup(func() { tw.Close() })
	shard := func(g int) *merge.Merger {
		c := merge.DefaultConfig()
		c.K, c.Staleness, c.Shard = k, time.Hour, merge.DefaultShard(g)
		c.Shard.Emit = merge.ShardWriter(tw, top)
		m, err := merge.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tc := merge.DefaultConfig()
	tc.K, tc.Partitions, tc.Store, tc.Staleness = k, 4, e.st, time.Hour
	topM, err := merge.New(tc)
	if err != nil {
		t.Fatal(err)
	}
	stopTop := runMerger(t, brokers, topM, top)
	defer stopTop()
	stopG0 := runMerger(t, brokers, shard(0), e.partials)
	stopG1 := runMerger(t, brokers, shard(1), e.partials)
	defer stopG1()
	stopStandby := runMerger(t, brokers, shard(1), e.partials)
	defer stopStandby()

	// Watch the served hour list: its version must never go back.
	watch, stopWatch := context.WithCancel(context.Background())
	regressed := make(chan string, 1)
	var watched sync.WaitGroup
	watched.Add(1)
	go func() {
		defer watched.Done()
		var last int64
		for watch.Err() == nil {
			if l, err := e.st.Get(context.Background(), model.Key{Window: "hour"}); err == nil {
				if l.Version < last {
					select {
					case regressed <- fmt.Sprintf("version %d after %d", l.Version, last):
					default:
					}
				}
				last = max(last, l.Version)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	stop := e.startWorker(t)
	defer stop(false)
	rng := rand.New(rand.NewPCG(9, 10))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := stream(rng, t0, 30*time.Minute, 4000)
	for i := 0; i < 600; i++ {
		evs = append(evs, event.Event{ItemID: "HOT", Count: 1, TS: t0.Add(time.Duration(i) * 3 * time.Second)})
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	s, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "HOT", Ways: 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.produceSalted(t, s, evs[:2300])
	time.Sleep(500 * time.Millisecond)
	stopG0() // restarted: the new one reads the partials' lookback
	stopG0 = runMerger(t, brokers, shard(0), e.partials)
	defer stopG0()
	e.produceSalted(t, s, evs[2300:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	want := e.truth(t0.Add(-20*time.Minute), t0.Add(39*time.Minute))
	e.waitFor(t, model.Key{Window: "hour"}, want, 90*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Start: t0}, e.truth(t0, t0.Add(39*time.Minute)), 10*time.Second)
	stopWatch()
	watched.Wait()
	select {
	case r := <-regressed:
		t.Fatalf("the served hour list went back: %s", r)
	default:
	}
}
