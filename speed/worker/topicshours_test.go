package worker_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"trending/internal/objstore"
	"trending/internal/topicstore"
	"trending/model"
	"trending/speed/worker"
)

// TestTopicsBaselineInStore: a closed hour's topic sketch goes to the object store, leaves
// the checkpoint, and after a restart the baseline is read back from the store: yesterday's
// 200 mentions of #marathon at this clock hour still give an expected 50. With the object
// removed, the next restart finds no such day (expected 0): the baseline came from the store.
// On the embedded servers, and on Kafka and MinIO when TRENDING_IT_KAFKA and TRENDING_IT_S3
// name them (infra/local/services.sh env).
func TestTopicsBaselineInStore(t *testing.T) {
	for name, setup := range map[string]func(testing.TB) ([]string, *objstore.Client){
		"embedded": func(t testing.TB) ([]string, *objstore.Client) { return embedded(t.(*testing.T)) },
		"real":     real,
	} {
		t.Run(name, func(t *testing.T) {
			brokers, obj := setup(t)
			e := newEnv(t, brokers, obj, 1)
			e.startMerger(t)
			withTopics := func(c *worker.Config) { c.TrendingTopics = topicsConfig() }
			stop := e.startWorker(t, withTopics)

			now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Minute)
			if now.Minute() >= 57 {
				now = now.Add(-3 * time.Minute) // the restarts add mentions up to 2 minutes later, in the same hour
			}
			yesterday := now.Add(-24 * time.Hour)
			evs := append(mentions("#marathon", "eu", "y", 200, -1, yesterday), mentions("#marathon", "eu", "u", 400, -1, now)...)
			e.produce(t, evs)
			want := func(views, expected float64) func(model.Item, bool) bool {
				return func(it model.Item, found bool) bool {
					return found && math.Abs(float64(it.Views)-views) <= 1 && it.Expected == expected
				}
			}
			e.topicItem(t, "topics/eu/surge", "#marathon", 60*time.Second, want(400, 50))

			hours := topicstore.NewHours(obj, "")
			hour := yesterday.Unix() / 3600
			deadline := time.Now().Add(30 * time.Second)
			for {
				b, err := hours.Get(context.Background(), e.views, 0, hour)
				if err != nil {
					t.Fatal(err)
				}
				if b != nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s never written", hours.Key(e.views, 0, hour))
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(500 * time.Millisecond) // a checkpoint after the save
			stop(false)

			stop = e.startWorker(t, withTopics)
			e.produce(t, mentions("#marathon", "eu", "v", 10, -1, now.Add(time.Minute)))
			e.topicItem(t, "topics/eu/surge", "#marathon", 60*time.Second, want(410, 50))
			stop(false)

			if err := obj.Delete(context.Background(), hours.Key(e.views, 0, hour)); err != nil {
				t.Fatal(err)
			}
			stop = e.startWorker(t, withTopics)
			defer stop(false)
			e.produce(t, mentions("#marathon", "eu", "w", 10, -1, now.Add(2*time.Minute)))
			e.topicItem(t, "topics/eu/surge", "#marathon", 60*time.Second, want(420, 0))
		})
	}
}

// downHours is a topicstore.Hours whose store can be made unreachable.
type downHours struct {
	*topicstore.Hours
	down atomic.Bool
}

var errDown = errors.New("dial tcp: connection refused")

func (d *downHours) Put(ctx context.Context, topic string, partition int, hour int64, body []byte) error {
	if d.down.Load() {
		return errDown
	}
	return d.Hours.Put(ctx, topic, partition, hour, body)
}

func (d *downHours) Get(ctx context.Context, topic string, partition int, hour int64) ([]byte, error) {
	if d.down.Load() {
		return nil, errDown
	}
	return d.Hours.Get(ctx, topic, partition, hour)
}

// TestTopicsBaselineStoreDown: a worker that restarts while the object store cannot be read
// serves its topics lists with the baseline it has in memory (none here: expected 0) and says
// so (baseline.unavailable 7 of 7 wanted); once the store answers, the retry loads the day
// and the expected count and the list's baseline are whole again.
func TestTopicsBaselineStoreDown(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 1)
	e.startMerger(t)
	hours := &downHours{Hours: topicstore.NewHours(obj, "")}
	run := func() func() {
		w := e.worker(t, func(c *worker.Config) { c.TrendingTopics = topicsConfig() })
		worker.SetHourStore(w, hours, 200*time.Millisecond)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("worker: %v", err)
			}
		}
	}
	stop := run()
	now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Minute)
	if now.Minute() >= 58 {
		now = now.Add(-2 * time.Minute)
	}
	yesterday := now.Add(-24 * time.Hour)
	e.produce(t, append(mentions("#marathon", "eu", "y", 200, -1, yesterday), mentions("#marathon", "eu", "u", 400, -1, now)...))
	list := func(what string, ok func(model.List, model.Item) bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		var last string
		for time.Now().Before(deadline) {
			l, err := e.st.Get(context.Background(), model.Key{Window: "topics/eu/surge"})
			if err == nil {
				for _, it := range l.Items {
					if it.ItemID == "#marathon" && ok(l, it) {
						return
					}
				}
				last = fmt.Sprintf("baseline %+v items %+v", l.Baseline, l.Items)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s never served; last: %s", what, last)
	}
	list("the store's day", func(l model.List, it model.Item) bool {
		return it.Expected == 50 && l.Baseline != nil && l.Baseline.Days == 1 && l.Baseline.Unavailable == 0 && l.Baseline.MaxOvercount > 0
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if b, _ := hours.Hours.Get(context.Background(), e.views, 0, yesterday.Unix()/3600); b != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("yesterday's hour never saved")
		}
	}
	time.Sleep(500 * time.Millisecond) // a checkpoint after the save
	stop()

	hours.down.Store(true)
	stop = run()
	defer func() { stop() }()
	e.produce(t, mentions("#marathon", "eu", "v", 10, -1, now.Add(time.Minute)))
	list("the degraded baseline", func(l model.List, it model.Item) bool {
		return it.Views == 410 && it.Expected == 0 && l.Baseline != nil && l.Baseline.Unavailable == 7 && l.Baseline.Days == 0 && l.Baseline.Wanted == 7
	})
	hours.down.Store(false)
	list("the baseline back", func(l model.List, it model.Item) bool {
		return it.Expected == 50 && l.Baseline.Unavailable == 0 && l.Baseline.Days == 1
	})
}
