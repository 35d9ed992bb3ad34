package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/itest"
	"trending/model"
	"trending/model/event"
	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
)

// TestSplitRolesFrequent runs `trending speed` (two processes over three partitions) and
// `trending merge` as child processes on the real Kafka, MinIO and ClickHouse with the
// calendar hour counted in frequent mode at 64 counters a summary, under the 300 uniform
// items of the hour, five hot items above them, and K 10 (issue 32): the hour's list in ClickHouse, through the partials topic and the
// merger, and the all-time list (no base store: the speed layer's own), are frequent lists
// whose every item's true views lie in [views, views_upper] and
// which misses no item with more views than its cutoff.
func TestSplitRolesFrequent(t *testing.T) {
	ctx := itest.Context(t, 3*time.Minute)
	f := newFixture(t, ctx, "frequent", 3)
	chAddr := itest.ClickHouse(t)
	bin := binary(t)

	o := chstore.DefaultOptions()
	o.Addr, o.Database = chAddr, itest.Underscored(t, "trending_e2e_frequent")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database); conn.Close() })
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	st, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dsn := "clickhouse://" + chAddr + "/" + o.Database

	ws := []string{"--window-set", "hour=sliding:1h/1m:exact,calendar:hour:frequent/64,all=alltime:frequent/64", "--k", "10"}
	speedArgs := append([]string{"--checkpoint-every", "1s", "--publish-every", "500ms", "--topics-sketch-width", "1024"}, ws...)
	roles := []*child{
		newChild(bin, "speed-a", f.args("speed", speedArgs...)),
		newChild(bin, "speed-b", f.args("speed", speedArgs...)),
		newChild(bin, "merge", append(append([]string{"merge", "--store", dsn, "--publish-every", "500ms",
			"--metrics-addr", "", "--log-format", "json"}, ws...), f.kafka...)),
	}
	for _, c := range roles {
		c.start(t)
	}
	t.Cleanup(func() {
		for _, c := range roles {
			c.kill()
			if t.Failed() {
				t.Logf("%s output (last 25 lines):\n%s", c.name, c.logs.tail(25))
			}
		}
	})

	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	// Five hot items over the uniform 300 of the producer, so that the list has leaders the
	// guarantee must keep: hot-i gets 40*(i+1) events of 5 views across the hour.
	hot := map[string]uint64{}
	w := f.kc.NewWriter(f.topic)
	var msgs []kafka.Message
	for i := range 5 {
		id := fmt.Sprintf("hot-%d", i)
		for j := range 40 * (i + 1) {
			e := event.Event{ItemID: id, Count: 5, TS: hour.Add(time.Duration(j) * time.Hour / time.Duration(40*(i+1)))}
			msgs = append(msgs, kafka.Message{Key: []byte(id), Value: e.AppendJSON(nil)})
			hot[id] += 5
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	prod := f.startProducer(ctx, hour, time.Hour, 200, 8000, 0, 32)
	prod.wait(t)
	truth := map[string]uint64{}
	prod.truth.Range(hour, hour.Add(time.Hour)).Each(func(item string, n uint64) { truth[item] = n })
	for id, n := range hot {
		truth[id] = n
	}
	for _, key := range []model.Key{{Window: "hour", Start: hour}, {Window: "all"}} {
		checkFrequentServed(t, ctx, st, key, truth)
	}
}

// checkFrequentServed waits for the frequent list of key in the store to bound the truth,
// then checks its guarantee.
func checkFrequentServed(t *testing.T, ctx context.Context, st *chstore.Store, key model.Key, truth map[string]uint64) {
	t.Helper()
	var l model.List
	waitFor(t, time.Now().Add(90*time.Second), "the merger's frequent list of "+key.Name()+" bounding the truth", func() (bool, string) {
		var err error
		if l, err = st.Get(ctx, key); err != nil {
			return false, err.Error()
		}
		if !l.Frequent || l.Incomplete || len(l.Items) != 10 {
			return false, fmt.Sprintf("%s list, frequent %v, partial %v, %d items", l.Source, l.Frequent, l.Incomplete, len(l.Items))
		}
		for _, it := range l.Items {
			if v := truth[it.ItemID]; v < it.Views || v > it.ViewsUpper {
				return false, fmt.Sprintf("%s: %d views, listed [%d, %d]", it.ItemID, v, it.Views, it.ViewsUpper)
			}
		}
		return true, ""
	})
	listed, loose, over := map[string]bool{}, 0, 0
	for _, it := range l.Items {
		listed[it.ItemID] = true
		if it.ViewsUpper > it.Views {
			loose++
		}
	}
	for item, n := range truth {
		if n > l.Cutoff {
			over++
		}
		if n > l.Cutoff && !listed[item] {
			t.Errorf("%s has %d views, over the cutoff %d, and is missing", item, n, l.Cutoff)
		}
	}
	if l.Exact || l.Source != model.SourceSpeed || l.Cutoff == 0 || loose == 0 || over == 0 {
		t.Errorf("exact %v source %s cutoff %d, %d items with loose bounds, %d over the cutoff: want a speed list, compacted summaries and a guarantee that covers some item",
			l.Exact, l.Source, l.Cutoff, loose, over)
	}
	t.Logf("%s: top %s [%d, %d] (truth %d), cutoff %d, %d items over it", key.Name(), l.Items[0].ItemID, l.Items[0].Views, l.Items[0].ViewsUpper, truth[l.Items[0].ItemID], l.Cutoff, over)
}
