package worker_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	"trending/speed/worker"
)

// TestHybridEmbedded: a worker that reads the batch's base from the serving store and a
// merger publish the live all list exact: the base's totals before B plus the partitions'
// counts since B, on the embedded broker.
func TestHybridEmbedded(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 4)
	b := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	rng := rand.New(rand.NewPCG(5, 6))
	evs := stream(rng, b.Add(-30*time.Minute), time.Hour, 3000)
	before := map[string]uint64{}
	for _, ev := range evs {
		if ev.TS.Before(b) {
			before[ev.ItemID] += uint64(ev.Count)
		}
	}
	base := model.List{Window: model.BaseWindow, AsOf: b, Boundary: b, Version: 1, Source: model.SourceBatch, Status: model.StatusExact, Exact: true}
	for i, en := range topk.TopK(len(before), before) {
		base.Items = append(base.Items, model.Item{Rank: i + 1, ItemID: en.Item, Views: en.Count, Exact: true})
	}
	if err := e.st.Put(context.Background(), base); err != nil {
		t.Fatal(err)
	}
	e.startMerger(t)
	stop := e.startWorker(t, func(c *worker.Config) {
		c.Window.SinceDays, c.BaseRefresh = 3, 50*time.Millisecond
		c.Base = func(ctx context.Context) (model.List, error) {
			return e.st.Get(ctx, model.Key{Window: model.BaseWindow})
		}
	})
	defer stop(false)
	e.produce(t, evs)
	e.produce(t, sentinels(b.Add(40*time.Minute)))
	e.waitFor(t, model.Key{Window: "all"}, e.truth(time.Time{}, b.Add(39*time.Minute)), 60*time.Second)
	l, err := e.st.Get(context.Background(), model.Key{Window: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Boundary.Equal(b) || l.Incomplete || !l.Exact {
		t.Fatalf("all list: boundary %s partial %t exact %t: want the boundary, whole and proven exact", l.Boundary, l.Incomplete, l.Exact)
	}
}
