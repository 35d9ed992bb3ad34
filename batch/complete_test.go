package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"trending/serving/store"
)

// The completeness gate, end to end through a real archiver: one event dated 2099 per
// partition used to move every partition's archive watermark to 2099 for good, and the
// batch then published an hour as exact while most of it was still unarchived in Kafka.

func TestFutureEventCannotCompleteAnHourEmbedded(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, guard := range []bool{true, false} {
		t.Run(fmt.Sprintf("future-guard=%v", guard), func(t *testing.T) {
			futureEventScenario(t, k.Addr, objConfig(e.Endpoint, itest.Name(t, "complete"), "test", "test"), guard)
		})
	}
}

func TestFutureEventCannotCompleteAnHourKafka(t *testing.T) {
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	futureEventScenario(t, broker, objConfig(s3.Endpoint, itest.Name(t, "complete"), s3.AccessKey, s3.SecretKey), true)
}

// byPartition sends each message to the partition it names.
var byPartition = kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition })

// futureEventScenario runs the reproduction; without guard (MaxFuture off) the 2099 events
// are archived as valid, and the watermark rule alone must still keep the hour open.
func futureEventScenario(t *testing.T, broker string, s3 objstore.Config, guard bool) {
	ctx := itest.Context(t, 90*time.Second)
	obj, err := objstore.New(ctx, s3)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	topic := itest.Name(t, "views")
	const parts = 2
	if _, err := eventlog.EnsureTopics(ctx, []string{broker}, eventlog.Spec{Name: topic, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(broker), Topic: topic, Balancer: byPartition, BatchTimeout: 5 * time.Millisecond, BatchSize: 1000,
		Transport: &kafka.Transport{}} // its own: the shared one caches metadata from before the topic existed
	defer w.Close()
	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	truth := map[string]uint64{}
	produce := func(n int, seq int) {
		t.Helper()
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			e := event.Event{ItemID: fmt.Sprintf("V%d", (seq+i)%37), Count: 1 + uint32((seq+i)%5),
				TS: hour.Add(time.Duration(seq+i) * time.Hour / 5500).UTC()}
			truth[e.ItemID] += uint64(e.Count)
			msgs[i] = kafka.Message{Partition: (seq + i) % parts, Key: []byte(e.ItemID), Value: e.AppendJSON(nil)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// 500 events of the hour and, on every partition, one dated 2099.
	produce(500, 0)
	for p := range parts {
		bad := event.Event{ItemID: "FUTURE", Count: 1, TS: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)}
		if err := w.WriteMessages(ctx, kafka.Message{Partition: p, Key: []byte("FUTURE"), Value: bad.AppendJSON(nil)}); err != nil {
			t.Fatal(err)
		}
	}

	// The archiver archives those and stops; it marks nothing caught up meanwhile (a long
	// refresh interval), as an archiver that falls behind would not.
	cfg := archive.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.ConsumerGroup = eventlog.Plain(broker), topic, topic+"-archive"
	cfg.RollAge, cfg.MaxWait, cfg.RefreshEvery = 200*time.Millisecond, 100*time.Millisecond, time.Hour
	if !guard {
		cfg.MaxFuture = -1
	}
	reader := archive.NewReader(obj)
	runArchiver(t, ctx, cfg, obj, "progress markers at offset 251", func() bool { return nextOffsets(ctx, reader, 251, 251) })

	// 5,000 more events of the hour arrive; the archiver is not running.
	produce(5000, 500)

	// The archive holds 500 of the hour's 5,500 events, and the 2099 events are in the
	// quarantine as future_ts.
	rows := 0
	if err := reader.ReadHour(ctx, hour, func(archive.Row) error { rows++; return nil }); err != nil || rows != 500 {
		t.Fatalf("archived %d events of the hour (%v), want 500", rows, err)
	}
	if guard {
		checkFutureQuarantined(t, ctx, obj, parts)
	}

	eng, st := nativeEngine(t), boltStore(t)
	bcfg := batch.DefaultConfig()
	bcfg.Now = func() time.Time { return hour.Add(90 * time.Minute) }
	run := func() (batch.Report, error) {
		r, err := batch.NewRunner(bcfg, eng, reader, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Recompute(ctx, []batch.Window{{Level: batch.Hour, Start: hour}})
	}
	_, err = run()
	if !errors.Is(err, batch.ErrWindowOpen) || !strings.Contains(err.Error(), "archived through") {
		t.Fatalf("batch run with 500 of 5,500 events archived: %v, want ErrWindowOpen naming the partition's progress", err)
	}
	if _, err := st.Get(ctx, model.Key{Window: batch.Hour, Start: hour}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run wrote a list: %v", err)
	}

	// The archiver catches up and, once idle, marks every partition caught up: now the hour
	// is complete, and its list is the truth.
	cfg.RefreshEvery = 0 // the default: about RollAge
	runArchiver(t, ctx, cfg, obj, "every partition caught up", func() bool {
		why, err := reader.Incomplete(ctx, hour, bcfg.AllowedLateness)
		return err == nil && why == "" && nextOffsets(ctx, reader, 2751, 2751)
	})
	if _, err := run(); err != nil {
		t.Fatalf("batch run after the archive caught up: %v", err)
	}
	l, err := st.Get(ctx, model.Key{Window: batch.Hour, Start: hour})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, it := range l.Items {
		got[it.ItemID] = it.Views
	}
	if fmt.Sprint(got) != fmt.Sprint(truth) || !l.Exact {
		t.Fatalf("exact list %v (exact %v), want the truth %v", got, l.Exact, truth)
	}
}

// runArchiver runs an archiver until done holds, then stops it gracefully.
func runArchiver(t *testing.T, ctx context.Context, cfg archive.Config, obj *objstore.Client, what string, done func() bool) {
	t.Helper()
	a, err := archive.New(cfg, obj, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- a.Run(actx) }()
	for !done() {
		if ctx.Err() != nil {
			prog, err := archive.NewReader(obj).Progress(context.Background())
			t.Fatalf("timed out waiting for %s; progress %+v %v", what, prog, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-errc; err != nil {
		t.Fatalf("archiver: %v", err)
	}
}

// nextOffsets reports whether the progress markers of partitions 0, 1, ... have exactly
// the given next offsets.
func nextOffsets(ctx context.Context, reader *archive.Reader, next ...int64) bool {
	prog, err := reader.Progress(ctx)
	if err != nil || len(prog) != len(next) {
		return false
	}
	for i, p := range prog {
		if p.Partition != int32(i) || p.NextOffset != next[i] {
			return false
		}
	}
	return true
}

// checkFutureQuarantined checks that each partition's 2099 event is in the quarantine with
// reason future_ts.
func checkFutureQuarantined(t *testing.T, ctx context.Context, obj *objstore.Client, parts int) {
	t.Helper()
	objs, err := obj.List(ctx, archive.DefaultRoot+"/quarantine/")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		b, err := obj.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.Contains(line, `"reason":"future_ts"`) || !strings.Contains(line, `"field":"ts"`) {
				t.Fatalf("quarantine record %s: want reason future_ts on field ts", line)
			}
			n++
		}
	}
	if n != parts {
		t.Fatalf("%d future_ts records in quarantine, want %d (one per partition)", n, parts)
	}
}

// TestLateDataRecomputedEmbedded: events that reach the archive after their hour was made
// exact mark the hour dirty; RecomputeDirty recomputes exactly that hour (and what holds it) with
// the new counts, a new version and an updated reconciliation, and clears the marks.
func TestLateDataRecomputedEmbedded(t *testing.T) {
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
	obj, err := objstore.New(ctx, objConfig(e.Endpoint, itest.Name(t, "late"), "test", "test"))
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	topic := itest.Name(t, "views")
	if _, err := eventlog.EnsureTopics(ctx, []string{k.Addr}, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(k.Addr), Topic: topic, Balancer: byPartition, BatchTimeout: 5 * time.Millisecond, BatchSize: 1000,
		Transport: &kafka.Transport{}}
	defer w.Close()
	now := time.Now().UTC()
	h1, h2 := now.Truncate(time.Hour).Add(-3*time.Hour), now.Truncate(time.Hour).Add(-2*time.Hour)
	truth := map[time.Time]map[string]uint64{}
	produce := func(hour time.Time, n, seq int) {
		t.Helper()
		if truth[hour] == nil {
			truth[hour] = map[string]uint64{}
		}
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			e := event.Event{ItemID: fmt.Sprintf("V%d", (seq+i)%11), Count: 1 + uint32((seq+i)%3), TS: hour.Add(time.Duration(i) * time.Hour / time.Duration(n))}
			truth[hour][e.ItemID] += uint64(e.Count)
			msgs[i] = kafka.Message{Partition: i % 2, Key: []byte(e.ItemID), Value: e.AppendJSON(nil)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	produce(h1, 400, 0)
	produce(h2, 400, 0)
	// Something of the current hour too, so the partitions' progress passes h1 and h2.
	produce(now.Truncate(time.Minute).Add(-time.Minute), 20, 0)

	cfg := archive.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.ConsumerGroup = eventlog.Plain(k.Addr), topic, topic+"-archive"
	cfg.RollAge, cfg.MaxWait = 200*time.Millisecond, 100*time.Millisecond
	reader := archive.NewReader(obj)
	bcfg := batch.DefaultConfig()
	caughtUp := func() bool {
		why, err := reader.Incomplete(ctx, h2, bcfg.AllowedLateness)
		return err == nil && why == "" && nextOffsets(ctx, reader, 410, 410)
	}
	runArchiver(t, ctx, cfg, obj, "the archive complete through h2", caughtUp)

	eng, st := nativeEngine(t), boltStore(t)
	// The speed layer's list of h1, which the batch replaces and reconciles.
	speed := model.List{Window: batch.Hour, Start: h1, End: h1.Add(time.Hour), AsOf: h1.Add(time.Hour), Version: h1.Add(time.Hour).UnixMilli(),
		Source: model.SourceSpeed, Status: model.StatusProvisional, Items: []model.Item{{Rank: 1, ItemID: "V1", Views: 50}}, ComputedAt: now}
	if err := st.Put(ctx, speed); err != nil {
		t.Fatal(err)
	}
	runner := func() *batch.Runner {
		r, err := batch.NewRunner(bcfg, eng, reader, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	hours := []batch.Window{{Level: batch.Hour, Start: h1}, {Level: batch.Hour, Start: h2}}
	if _, err := runner().Recompute(ctx, hours); err != nil {
		t.Fatal(err)
	}
	first, _ := st.Get(ctx, hours[0].Key())
	if first.Reconciliation == nil || first.Reconciliation.MaxAbsError != absDiff(50, truth[h1]["V1"]) {
		t.Fatalf("first exact list's reconciliation %+v, want max error |50 - %d|", first.Reconciliation, truth[h1]["V1"])
	}
	if rep, err := runner().RecomputeDirty(ctx); err != nil || len(rep.Outcomes) != 0 {
		t.Fatalf("RecomputeDirty without late data: %+v, %v; want nothing to do", rep.Outcomes, err)
	}

	// Late events of h1, archived after the archive passed it.
	produce(h1, 100, 400)
	runArchiver(t, ctx, cfg, obj, "the late events archived", func() bool { return nextOffsets(ctx, reader, 460, 460) })
	marks, err := reader.Dirty(ctx)
	if err != nil || len(marks) == 0 {
		t.Fatalf("late-data marks %v, %v: want h1's", marks, err)
	}
	for _, m := range marks {
		if !m.Hour.Equal(h1) {
			t.Fatalf("late-data mark of %s, want only %s", m.Hour, h1)
		}
	}
	rep, err := runner().RecomputeDirty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rep.Outcomes {
		if o.Window == hours[1] && o.Built {
			t.Fatalf("h2 rebuilt though nothing late arrived for it: %+v", o)
		}
	}
	again, err := st.Get(ctx, hours[0].Key())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, it := range again.Items {
		got[it.ItemID] = it.Views
	}
	if fmt.Sprint(got) != fmt.Sprint(truth[h1]) || !again.Exact || again.Version <= first.Version {
		t.Fatalf("after RecomputeDirty: %v exact %v version %d (was %d), want the new truth %v with a newer version", got, again.Exact, again.Version, first.Version, truth[h1])
	}
	if again.Reconciliation == nil || again.Reconciliation.MaxAbsError != absDiff(50, truth[h1]["V1"]) || again.Reconciliation.SpeedVersion != speed.Version {
		t.Fatalf("reconciliation after the recompute %+v, want the speed list against the new count %d", again.Reconciliation, truth[h1]["V1"])
	}
	if marks, err := reader.Dirty(ctx); err != nil || len(marks) != 0 {
		t.Fatalf("marks after RecomputeDirty: %v, %v; want none", marks, err)
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
