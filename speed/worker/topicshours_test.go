package worker_test

import (
	"context"
	"math"
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
	for name, setup := range map[string]func(testing.TB) ([]string, *objstore.Store){
		"embedded": func(t testing.TB) ([]string, *objstore.Store) { return embedded(t.(*testing.T)) },
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
