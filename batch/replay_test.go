package batch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/batch"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/serving/store"
)

// TestReplayPauseCannotCloseAWeekEmbedded reproduces "the closed week marked exact with
// counts below the truth" (TestUpSeed004Windows under load): a producer replays a past ISO
// week into Kafka (every event's log time is now, its event time days ago) and pauses
// halfway, as a loaded producer does between two batches. The archiver archives the first
// half and sees nothing new for longer than its RollAge. Before the fix it marked every
// partition caught up at the wall clock, which closed every hour up to now, and the batch
// published the week exact from its first half. Now a partition whose producer writes the
// past counts as caught up only after ReplayQuiet of silence, so the week stays open until
// the replay's own event time passes it; then it is exact and equal to the truth. Late
// events of one of its days, archived afterwards, mark that hour dirty, and RecomputeDirty
// rebuilds the day and republishes the week (the sum of its days) with them.
func TestReplayPauseCannotCloseAWeekEmbedded(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx := itest.Context(t, 90*time.Second)
	e, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	obj, err := objstore.New(ctx, objConfig(e.Endpoint, itest.Name(t, "replay"), "test", "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	topic := itest.Name(t, "views")
	const parts = 2
	if _, err := eventlog.EnsureTopics(ctx, []string{k.Addr}, eventlog.Spec{Name: topic, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(k.Addr), Topic: topic, Balancer: byPartition, BatchTimeout: 5 * time.Millisecond, BatchSize: 1000,
		Transport: &kafka.Transport{}}
	defer w.Close()

	// The ISO week before last: it and the day after it lie wholly in the past.
	week := model.Week.Back(model.Week.Align(time.Now().UTC()), 2)
	weekEnd := model.Week.Next(week)
	truth := map[string]uint64{} // of the week
	sent := [parts]int64{}
	seq := 0
	// produce sends n events spread evenly over [from, to), in event-time order.
	produce := func(n int, from, to time.Time) {
		t.Helper()
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			ev := event.Event{ItemID: fmt.Sprintf("V%d", seq%13), Count: 1 + uint32(seq%4), TS: from.Add(time.Duration(i) * to.Sub(from) / time.Duration(n))}
			if !ev.TS.Before(week) && ev.TS.Before(weekEnd) {
				truth[ev.ItemID] += uint64(ev.Count)
			}
			p := seq % parts
			sent[p]++
			msgs[i] = kafka.Message{Partition: p, Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)}
			seq++
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}

	cfg := archive.DefaultConfig() // ReplayQuiet 10 s
	cfg.Kafka, cfg.Topic, cfg.ConsumerGroup = eventlog.Plain(k.Addr), topic, topic+"-archive"
	cfg.RollAge, cfg.MaxWait, cfg.RefreshEvery = 200*time.Millisecond, 100*time.Millisecond, 200*time.Millisecond
	a, err := archive.New(cfg, obj, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- a.Run(actx) }()
	defer func() {
		stop()
		if err := <-errc; err != nil {
			t.Errorf("archiver: %v", err)
		}
	}()
	reader := archive.NewReader(obj)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				prog, err := reader.Progress(context.Background())
				t.Fatalf("timed out waiting for %s; progress %+v %v", what, prog, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	archived := func() bool { return nextOffsets(ctx, reader, sent[:]...) }

	eng, st := nativeEngine(t), boltStore(t)
	bcfg := batch.DefaultConfig()
	bcfg.AllowedLateness = time.Minute
	bcfg.Windows, err = windowset.Preset("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := batch.NewRunner(bcfg, eng, reader, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	weekW := batch.Window{Level: batch.Week, Start: week}

	// The replay's first half, Monday to Thursday noon; then the producer pauses for 2 s,
	// ten times the RollAge and refresh interval.
	half := week.Add(84 * time.Hour)
	produce(1400, week, half)
	waitFor("the first half archived", archived)
	time.Sleep(2 * time.Second)
	if _, err := runner.Recompute(ctx, []batch.Window{weekW}); !errors.Is(err, batch.ErrWindowOpen) {
		prog, _ := reader.Progress(ctx)
		l, _ := st.Get(ctx, weekW.Key())
		t.Fatalf("the week published (%v) with the replay halfway through it: exact %v, %d items, top %v; progress %+v",
			err, l.Exact, len(l.Items), l.Items[:min(3, len(l.Items))], prog)
	}
	if err := runner.Closed(ctx, weekW); !errors.Is(err, batch.ErrWindowOpen) {
		prog, _ := reader.Progress(ctx)
		t.Fatalf("the week with half its events archived and the replay paused for 2 s: Closed = %v, want ErrWindowOpen (progress %+v)", err, prog)
	}
	if _, err := st.Get(ctx, weekW.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run wrote the week's list: %v", err)
	}

	// The replay goes on to the end of the week, then through the following Monday: the
	// partitions' event time passes the week's end plus the lateness, which closes it.
	produce(1400, half, weekEnd)
	waitFor("the rest of the week archived", archived)
	produce(200, weekEnd, weekEnd.Add(24*time.Hour))
	waitFor("the week complete", func() bool { return archived() && runner.Closed(ctx, weekW) == nil })
	if _, err := runner.Recompute(ctx, []batch.Window{weekW}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) model.List {
		t.Helper()
		l, err := st.Get(ctx, weekW.Key())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, it := range l.Items {
			got[it.ItemID] = it.Views
		}
		if !l.Exact || l.Status != model.StatusExact || !maps.Equal(got, truth) {
			t.Fatalf("%s: the week's list (exact %v, status %s) %v, want exactly the truth %v", when, l.Exact, l.Status, got, truth)
		}
		return l
	}
	first := check("the replay past the week")

	// Late events of the week's Wednesday, archived after it was published: the day's
	// rollup is rebuilt and the week, the sum of its days, republished with them.
	wed := week.Add(2*24*time.Hour + 5*time.Hour)
	produce(60, wed, wed.Add(30*time.Minute))
	waitFor("the late events archived", archived)
	if marks, err := reader.Dirty(ctx); err != nil || len(marks) == 0 {
		t.Fatalf("late-data marks %v, %v: want Wednesday's", marks, err)
	}
	rep, err := runner.RecomputeDirty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again := check("after the late events")
	if again.Version <= first.Version {
		t.Fatalf("the week republished at version %d, not after %d (%+v)", again.Version, first.Version, rep.Outcomes)
	}
}
