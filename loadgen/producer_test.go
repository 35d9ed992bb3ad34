package loadgen

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/stream"
	"trending/model/event"
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
	st, err := Run(ctx, RunConfig{
		Stream:  streamOf(2000, 1500, 40, 8*time.Second, 4, func(c *stream.Config) { c.Late, c.Malformed = 0.05, 0.02 }),
		Speedup: -1, Truth: truth, BatchSize: 700, ProgressEvery: time.Millisecond,
		Progress: func(s Stats) { mu.Lock(); progress = append(progress, s); mu.Unlock() },
	}, w)
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
	st, err := Run(ctx, RunConfig{Stream: streamOf(100, 100, 5, 0, 1, nil), Speedup: 10, Truth: truth}, w)
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
	st, err := Run(context.Background(), RunConfig{
		Stream:  streamOf(100, 500, 50, 10*time.Second, 1, nil),
		Speedup: -1, Truth: truth, BatchSize: 50,
	}, w)
	if err == nil || !strings.Contains(err.Error(), "broker gone") {
		t.Fatalf("error %v, want the write error", err)
	}
	if st.Messages != uint64(len(w.msgs)) || st.Messages != 100+25 {
		t.Fatalf("stats say %d messages, the writer took %d, want 125", st.Messages, len(w.msgs))
	}
	sameTruth(t, truth, truthOf(t, w.msgs))
}

func TestRunConfigValidate(t *testing.T) {
	for _, c := range []RunConfig{
		{Stream: streamOf(-1, 500, 5, 0, 1, nil)},
		{BatchSize: -1},
		{Speedup: math.Inf(1)},
	} {
		if _, err := Run(context.Background(), c, &fakeWriter{}); !errors.Is(err, stream.ErrConfig) {
			t.Errorf("Run(%+v): %v, want stream.ErrConfig", c, err)
		}
	}
}

// TestRunWriteErrorEndless: a failed write ends a run of an endless stream too (the
// generator is stopped, not drained forever).
func TestRunWriteErrorEndless(t *testing.T) {
	boom := errors.New("broker gone")
	w := &fakeWriter{fail: func(int) error { return boom }}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), RunConfig{Stream: streamOf(100, 500, 5, 0, 1, nil), Speedup: -1}, w)
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
