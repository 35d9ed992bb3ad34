package loadgen

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/setting"
	"trending/internal/stream"
	"trending/model/event"
	"trending/model/salt"
)

// readAll reads every message of topic's partitions up to their current end.
func readAll(t *testing.T, addr, topic string, partitions int) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []kafka.Message
	for p := range partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MaxWait: 50 * time.Millisecond})
		for off := int64(0); off < last; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("partition %d offset %d: %v", p, off, err)
			}
			out = append(out, m)
		}
		r.Close()
	}
	return out
}

// TestRunEmbedded produces a stream with late and malformed events to the
// embedded broker and checks the log holds exactly what the stream.Truth and the
// Stats say, each key in kafka-go's hash partition.
func TestRunEmbedded(t *testing.T) {
	kf, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, parts = "views", 4
	if _, err := eventlog.EnsureTopics(ctx, []string{kf.Addr}, eventlog.Spec{Name: topic, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
	w := eventlog.NewWriter([]string{kf.Addr}, topic)
	defer w.Close()
	truth := stream.NewTruth()
	var progress []Stats
	var mu sync.Mutex
	rc := DefaultRunConfig()
	rc.Stream = streamOf(2000, 1500, 40, 8*time.Second, 4, func(c *stream.Config) { c.Late, c.Malformed = 0.05, 0.02 })
	rc.Speedup, rc.Truth, rc.BatchSize, rc.ProgressEvery = 0, truth, 700, time.Millisecond
	rc.Progress = func(s Stats) { mu.Lock(); progress = append(progress, s); mu.Unlock() }
	st, err := Run(ctx, rc, w)
	if err != nil {
		t.Fatal(err)
	}
	if st.Seconds != 8 || st.Views != 8*1500 || truth.Views() != st.Views || truth.Events() != st.Events {
		t.Fatalf("stats %+v, truth %d views in %d events", st, truth.Views(), truth.Events())
	}
	if len(progress) == 0 || progress[len(progress)-1] != st {
		t.Fatalf("the last progress report is not the final stats")
	}

	msgs := readAll(t, kf.Addr, topic, parts)
	if uint64(len(msgs)) != st.Messages {
		t.Fatalf("%d messages in the topic, stats say %d", len(msgs), st.Messages)
	}
	got := stream.NewTruth()
	var malformed, late uint64
	for _, m := range msgs {
		if want := stream.PartitionOf(string(m.Key), parts); m.Partition != want {
			t.Fatalf("key %s in partition %d, want %d", m.Key, m.Partition, want)
		}
		ev, err := event.Decode(m.Value)
		if err != nil {
			malformed++
			continue
		}
		if string(m.Key) != ev.ItemID {
			t.Fatalf("event for %s keyed %s", ev.ItemID, m.Key)
		}
		if ev.TS.Before(stream.DefaultStart) {
			late++
		}
		got.Add(ev)
	}
	if malformed != st.Malformed || malformed == 0 {
		t.Fatalf("%d malformed messages in the topic, stats say %d", malformed, st.Malformed)
	}
	if late == 0 || late > st.Late {
		t.Fatalf("%d events before the start, stats say %d late", late, st.Late)
	}
	var a, b bytes.Buffer
	truth.WriteTo(&a)
	got.WriteTo(&b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the topic's events differ from the truth")
	}
}

// fakeWriter records what it is given; it can fail or block.
type fakeWriter struct {
	mu     sync.Mutex
	msgs   []kafka.Message
	fail   func(n int) error
	writes int
}

func (f *fakeWriter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.fail != nil {
		if err := f.fail(f.writes); err != nil {
			var we kafka.WriteErrors
			if errors.As(err, &we) {
				for i, e := range we {
					if e == nil {
						f.msgs = append(f.msgs, msgs[i])
					}
				}
			}
			return err
		}
	}
	f.msgs = append(f.msgs, msgs...)
	return nil
}

func truthOf(t *testing.T, msgs []kafka.Message) *stream.Truth {
	tr := stream.NewTruth()
	for _, m := range msgs {
		if ev, err := event.Decode(m.Value); err == nil {
			tr.Add(ev)
		}
	}
	return tr
}

func sameTruth(t *testing.T, a, b *stream.Truth) {
	t.Helper()
	var x, y bytes.Buffer
	a.WriteTo(&x)
	b.WriteTo(&y)
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("truths differ")
	}
}

// streamOf is stream.DefaultConfig with the catalog, rate, servers, duration and seed given,
// then mod (if not nil) applied.
func streamOf(items int, rate float64, servers int, d time.Duration, seed uint64, mod func(*stream.Config)) stream.Config {
	c := stream.DefaultConfig()
	c.Items, c.Rate, c.Servers, c.Duration, c.Seed = items, rate, servers, d, seed
	if mod != nil {
		mod(&c)
	}
	return c
}

// TestRunStopsCleanly: cancelling a paced run writes whole seconds only and
// returns nil, with the truth equal to what was written.
func TestRunStopsCleanly(t *testing.T) {
	w := &fakeWriter{}
	truth := stream.NewTruth()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(350*time.Millisecond, cancel)
	rc := DefaultRunConfig()
	rc.Stream, rc.Speedup, rc.Truth = streamOf(100, 100, 5, 0, 1, nil), 10, truth
	st, err := Run(ctx, rc, w)
	if err != nil {
		t.Fatalf("a cancelled run returned %v, want nil", err)
	}
	// Speedup 10: a second of event time every 100 ms; seconds are sent
	// when over, so 3 in 350 ms (fewer on a loaded machine, never more).
	if st.Seconds < 1 || st.Seconds > 4 || st.Views != uint64(st.Seconds)*100 {
		t.Fatalf("stats %+v after 350 ms at speedup 10", st)
	}
	sameTruth(t, truth, truthOf(t, w.msgs))
}

// TestRunWriteError: a partly failed write stops the run with the error,
// and the truth holds exactly the acknowledged events.
func TestRunWriteError(t *testing.T) {
	boom := errors.New("broker gone")
	w := &fakeWriter{fail: func(n int) error {
		if n < 3 {
			return nil
		}
		we := make(kafka.WriteErrors, 50)
		for i := range we {
			if i%2 == 1 {
				we[i] = boom
			}
		}
		return we
	}}
	truth := stream.NewTruth()
	rc := DefaultRunConfig()
	rc.Stream, rc.Speedup, rc.Truth, rc.BatchSize = streamOf(100, 500, 50, 10*time.Second, 1, nil), 0, truth, 50
	st, err := Run(context.Background(), rc, w)
	if err == nil || !strings.Contains(err.Error(), "broker gone") {
		t.Fatalf("error %v, want the write error", err)
	}
	if st.Messages != uint64(len(w.msgs)) || st.Messages != 100+25 {
		t.Fatalf("stats say %d messages, the writer took %d, want 125", st.Messages, len(w.msgs))
	}
	sameTruth(t, truth, truthOf(t, w.msgs))
}

func TestRunConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod   func(*RunConfig)
		field string
	}{
		{func(c *RunConfig) { c.Stream.Items = -1 }, "Stream.Items"},
		{func(c *RunConfig) { c.Stream.Servers = 0 }, "Stream.Servers"},
		{func(c *RunConfig) { c.BatchSize = -1 }, "BatchSize"},
		{func(c *RunConfig) { c.BatchSize = 0 }, "BatchSize"},
		{func(c *RunConfig) { c.Speedup = math.Inf(1) }, "Speedup"},
		{func(c *RunConfig) { c.Speedup = -1 }, "Speedup"},
		{func(c *RunConfig) { c.ProgressEvery = -time.Second }, "ProgressEvery"},
		{func(c *RunConfig) { c.FlushTimeout = -time.Second }, "FlushTimeout"},
	} {
		c := DefaultRunConfig()
		tc.mod(&c)
		_, err := Run(context.Background(), c, &fakeWriter{})
		es := setting.Errors(err)
		if !errors.Is(err, stream.ErrConfig) || !errors.Is(err, setting.ErrConfig) || len(es) != 1 || es[0].Field != tc.field {
			t.Errorf("%s: Run = %v, want one setting error naming it, wrapping stream.ErrConfig", tc.field, err)
		}
	}
	if err := DefaultRunConfig().Validate(); err != nil {
		t.Errorf("DefaultRunConfig: %v", err)
	}
}

// TestZeroMeansZero: a zero Speedup is no pacing, not the default real time (20 seconds of
// event time would take 20s). A zero ProgressEvery reports once, at the end, and starts no
// ticker (time.NewTicker(0) panics).
func TestZeroMeansZero(t *testing.T) {
	rc := DefaultRunConfig()
	rc.Stream = streamOf(100, 50, 5, 20*time.Second, 1, nil)
	rc.Speedup, rc.ProgressEvery = 0, 0
	var calls int
	rc.Progress = func(Stats) { calls++ }
	began := time.Now()
	st, err := Run(context.Background(), rc, &fakeWriter{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second || st.Seconds != 20 {
		t.Errorf("Speedup 0: %d seconds of event time took %s, want all 20 unpaced, far under 20s", st.Seconds, took)
	}
	if calls != 1 {
		t.Errorf("ProgressEvery 0: Progress called %d times, want once, at the end", calls)
	}
}

// TestRunWriteErrorEndless: a failed write ends a run of an endless stream too (the
// generator is stopped, not drained forever).
func TestRunWriteErrorEndless(t *testing.T) {
	boom := errors.New("broker gone")
	w := &fakeWriter{fail: func(int) error { return boom }}
	done := make(chan error, 1)
	go func() {
		rc := DefaultRunConfig()
		rc.Stream, rc.Speedup = streamOf(100, 500, 5, 0, 1, nil), 0
		_, err := Run(context.Background(), rc, w)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Fatalf("error %v, want the write error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run of an endless stream did not return after its writer failed")
	}
}

// TestRunSalts: with a Salter, the messages of a salted item (the catalog's first) spread
// over its sub-keys with the salt header, every event unchanged, and nothing else salted;
// the truth is the same as without salting.
func TestRunSalts(t *testing.T) {
	sc := streamOf(100, 2000, 50, 3*time.Second, 7, nil)
	g, err := stream.NewGenerator(sc)
	if err != nil {
		t.Fatal(err)
	}
	hot := g.ItemID(1)
	s, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: hot, Ways: 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	w, plain := &fakeWriter{}, &fakeWriter{}
	rc := DefaultRunConfig()
	rc.Stream, rc.Speedup = sc, 0
	if _, err := Run(context.Background(), rc, plain); err != nil {
		t.Fatal(err)
	}
	rc.Salter = s
	if _, err := Run(context.Background(), rc, w); err != nil {
		t.Fatal(err)
	}
	sameTruth(t, truthOf(t, plain.msgs), truthOf(t, w.msgs))
	keys := map[string]int{}
	for _, m := range w.msgs {
		ev, err := event.Decode(m.Value)
		salted := len(m.Headers) == 1 && m.Headers[0].Key == salt.Header
		switch {
		case err != nil && salted:
			t.Fatalf("a malformed message was salted: %q", m.Value)
		case err != nil:
		case ev.ItemID == hot && salted:
			keys[string(m.Key)]++
		case salted || string(m.Key) != ev.ItemID:
			t.Fatalf("item %s keyed %s, headers %v", ev.ItemID, m.Key, m.Headers)
		}
	}
	if len(keys) != 4 {
		t.Fatalf("the hot item's sub-keys %v, want 4", keys)
	}
	for k, n := range keys {
		if lo, hi := slices.Min(mapsValues(keys)), n; hi-lo > 1 {
			t.Fatalf("sub-key %s took %d messages, another %d: round robin is within one", k, hi, lo)
		}
	}
}

func mapsValues(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// flakyWriter fails its first fails writes: a whole write with a refused dial, or (odd
// calls) every other message of it with kafka.WriteErrors; then it keeps what it gets.
type flakyWriter struct {
	fails int
	calls int
	got   []kafka.Message
}

func (w *flakyWriter) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	w.calls++
	if w.calls > w.fails {
		w.got = append(w.got, msgs...)
		return nil
	}
	if w.calls%2 == 0 {
		return errors.New("dial tcp 127.0.0.1:39092: connect: connection refused")
	}
	werrs := make(kafka.WriteErrors, len(msgs))
	for i := range msgs {
		if i%2 == 1 {
			werrs[i] = kafka.NotLeaderForPartition
		} else {
			w.got = append(w.got, msgs[i])
		}
	}
	return werrs
}

// TestRunRidesOutKafka: with RunConfig.Kafka a run whose writes fail for a while (whole
// writes refused, or some messages of one) retries only what was not acknowledged and
// ends with every message written once, the truth equal to what the writer kept and
// Retried counting the messages written again; without it the first failure ends the run.
func TestRunRidesOutKafka(t *testing.T) {
	rc := DefaultRunConfig()
	rc.Stream = streamOf(200, 150, 40, 4*time.Second, 4, nil)
	rc.Speedup, rc.BatchSize, rc.ProgressEvery = 0, 100, 0
	if _, err := Run(context.Background(), rc, &flakyWriter{fails: 3}); err == nil {
		t.Fatal("a run without RunConfig.Kafka survived a failed write")
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role = "loadgen"
	kh, err := eventlog.NewHealth(hc)
	if err != nil {
		t.Fatal(err)
	}
	truth := stream.NewTruth()
	rc.Truth, rc.Kafka = truth, kh
	w := &flakyWriter{fails: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := Run(ctx, rc, w)
	if err != nil {
		t.Fatal(err)
	}
	kept := stream.NewTruth()
	for _, m := range w.got {
		if ev, err := event.Decode(m.Value); err == nil {
			kept.Add(ev)
		}
	}
	if uint64(len(w.got)) != st.Messages || st.Views != 4*150 || kept.Views() != truth.Views() || truth.Views() != st.Views {
		t.Fatalf("writer kept %d messages (%d views), stats %+v, truth %d views", len(w.got), kept.Views(), st, truth.Views())
	}
	if st.Retried == 0 || !kh.Up() {
		t.Fatalf("retried %d, Kafka up %v: want retries and the outage over", st.Retried, kh.Up())
	}
}
