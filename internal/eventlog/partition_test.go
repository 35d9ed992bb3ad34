package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/setting"
)

// produce writes values from..to-1 (value and key "k<i mod 7>", every tenth with a header
// "tenth" holding its value) to partition 0 of topic, in record batches of batch messages.
func produce(t *testing.T, ctx context.Context, addr, topic string, from, to, batch int) {
	t.Helper()
	w := eventlog.NewWriter([]string{addr}, topic)
	w.BatchSize = batch
	defer w.Close()
	var msgs []kafka.Message
	for i := from; i < to; i++ {
		m := kafka.Message{Key: []byte("k" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))}
		if i%10 == 0 {
			m.Headers = []kafka.Header{{Key: "tenth", Value: []byte(strconv.Itoa(i))}}
		}
		msgs = append(msgs, m)
		if len(msgs) == batch || i == to-1 {
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				t.Fatalf("produce: %v", err)
			}
			msgs = msgs[:0]
		}
	}
}

// readN reads n messages with a slice of room chunk and checks they are offsets from..from+n-1
// with the values produce wrote.
func readN(t *testing.T, ctx context.Context, r *eventlog.PartitionReader, from int64, n, chunk int) {
	t.Helper()
	msgs := make([]kafka.Message, 0, chunk)
	want := from
	for want < from+int64(n) {
		var err error
		msgs, err = r.Fetch(ctx, msgs[:0])
		if err != nil {
			t.Fatalf("fetch at %d: %v", want, err)
		}
		if len(msgs) == 0 || len(msgs) > chunk {
			t.Fatalf("fetch at %d: %d messages in a slice of room %d", want, len(msgs), chunk)
		}
		for _, m := range msgs {
			if m.Offset != want || string(m.Value) != strconv.FormatInt(want, 10) || string(m.Key) != "k"+strconv.FormatInt(want%7, 10) {
				t.Fatalf("message at %d: offset %d key %q value %q", want, m.Offset, m.Key, m.Value)
			}
			if m.Time.IsZero() || m.HighWaterMark <= m.Offset || m.Partition != 0 {
				t.Fatalf("message at %d: time %v, high watermark %d, partition %d", want, m.Time, m.HighWaterMark, m.Partition)
			}
			if hasHeader := len(m.Headers) == 1 && m.Headers[0].Key == "tenth" && string(m.Headers[0].Value) == string(m.Value); hasHeader != (want%10 == 0) {
				t.Fatalf("message at %d: headers %v (the speed worker's salting reads them)", want, m.Headers)
			}
			want++
		}
		if r.Offset() != want {
			t.Fatalf("Offset() = %d after reading up to %d", r.Offset(), want-1)
		}
	}
}

// partitionReader is the PartitionReader's contract on a broker: every message once, in
// order, from any start, across record batches and fetch responses; a start past the end
// waits for the log to reach it; a context that ends returns at once, and the reader goes on
// afterwards.
func partitionReader(t *testing.T, addr string) {
	ctx := itest.Context(t, 90*time.Second)
	topic := itest.Name(t, "pr")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, addr, topic, 0, 1000, 64)
	kc := eventlog.Plain(addr)
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic, cfg.MaxBytes = topic, 4<<10 // a few record batches a response
	open := func(offset int64) *eventlog.PartitionReader {
		r, err := kc.PartitionReader(cfg, offset)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	t.Run("from the first offset, small slices", func(t *testing.T) { readN(t, ctx, open(kafka.FirstOffset), 0, 1000, 7) })
	t.Run("from the middle of a record batch", func(t *testing.T) { readN(t, ctx, open(500), 500, 500, 512) })
	t.Run("a full slice gets room", func(t *testing.T) {
		r := open(10)
		msgs, err := r.Fetch(ctx, make([]kafka.Message, 1))
		if err != nil || len(msgs) < 2 || msgs[1].Offset != 10 {
			t.Fatalf("fetch into a full slice: %d messages, %v", len(msgs), err)
		}
	})
	t.Run("past the end waits for the log", func(t *testing.T) {
		r := open(1005)
		done := make(chan []kafka.Message, 1)
		go func() {
			msgs, err := r.Fetch(ctx, make([]kafka.Message, 0, 100))
			if err != nil {
				t.Errorf("fetch past the end: %v", err)
			}
			done <- msgs
		}()
		time.Sleep(300 * time.Millisecond)
		produce(t, ctx, addr, topic, 1000, 1010, 10)
		select {
		case msgs := <-done:
			if len(msgs) != 5 || msgs[0].Offset != 1005 || string(msgs[4].Value) != "1009" {
				t.Fatalf("fetch past the end: %d messages from %v", len(msgs), msgs)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("fetch past the end did not return after the log reached it")
		}
	})
	t.Run("an ending context returns at once and the reader goes on", func(t *testing.T) {
		long := cfg
		long.MaxWait = 20 * time.Second // the broker holds the fetch: only closing the connection ends it
		r, err := kc.PartitionReader(long, 1010)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		msgs, err := r.Fetch(cctx, nil)
		if !errors.Is(err, context.DeadlineExceeded) || len(msgs) != 0 {
			t.Fatalf("idle fetch under a 300ms context: %d messages, %v", len(msgs), err)
		}
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("idle fetch returned %s after its context ended", el)
		}
		produce(t, ctx, addr, topic, 1010, 1020, 10)
		readN(t, ctx, r, 1010, 10, 4)
	})
}

func TestPartitionReaderEmbedded(t *testing.T) {
	e, err := eventlog.StartEmbedded(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	partitionReader(t, e.Addr)
}

func TestPartitionReaderKafka(t *testing.T) {
	partitionReader(t, itest.Kafka(t))
}

// TestPartitionReaderBrokerRestart: the broker goes away under a reader and comes back on the
// same address with its log; the reader retries meanwhile and goes on at the next offset,
// nothing skipped or read twice. (The embedded broker: the shared Kafka is not to be
// restarted by a unit test.)
func TestPartitionReaderBrokerRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := eventlog.StartEmbedded(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, portText, _ := net.SplitHostPort(e.Addr)
	port, _ := strconv.Atoi(portText)
	ctx := itest.Context(t, 90*time.Second)
	if _, err := eventlog.EnsureTopics(ctx, []string{e.Addr}, eventlog.Spec{Name: "restart", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, e.Addr, "restart", 0, 100, 10)
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic, cfg.RetryMin, cfg.RetryMax = "restart", 20*time.Millisecond, 200*time.Millisecond
	r, err := eventlog.Plain(e.Addr).PartitionReader(cfg, kafka.FirstOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readN(t, ctx, r, 0, 100, 512)
	e.Close()
	done := make(chan error, 1)
	go func() {
		defer close(done)
		msgs, err := r.Fetch(ctx, make([]kafka.Message, 0, 512))
		if err == nil && (len(msgs) == 0 || msgs[0].Offset != 100) {
			err = fmt.Errorf("first fetch after the restart: %d messages from %v", len(msgs), msgs)
		}
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // a few failed attempts
	if e, err = eventlog.StartEmbedded(dir, port); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	produce(t, ctx, e.Addr, "restart", 100, 150, 10)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r.Offset() < 101 {
		t.Fatalf("Offset() = %d after the restart's first fetch", r.Offset())
	}
	// The rest, from where the first fetch stopped.
	readN(t, ctx, r, r.Offset(), int(150-r.Offset()), 512)
}

func TestPartitionReaderConfigZeroRefused(t *testing.T) {
	kc := eventlog.Plain("127.0.0.1:1")
	for _, tc := range []struct {
		field string
		mod   func(*eventlog.PartitionReaderConfig)
	}{
		{"Topic", func(c *eventlog.PartitionReaderConfig) { c.Topic = "" }},
		{"Partition", func(c *eventlog.PartitionReaderConfig) { c.Partition = -1 }},
		{"MaxBytes", func(c *eventlog.PartitionReaderConfig) { c.MaxBytes = 0 }},
		{"MaxWait", func(c *eventlog.PartitionReaderConfig) { c.MaxWait = 0 }},
		{"ReadTimeout", func(c *eventlog.PartitionReaderConfig) { c.ReadTimeout = 0 }},
		{"RetryMin", func(c *eventlog.PartitionReaderConfig) { c.RetryMin = 0 }},
		{"RetryMax", func(c *eventlog.PartitionReaderConfig) { c.RetryMax = 0 }},
		{"RetryMax", func(c *eventlog.PartitionReaderConfig) { c.RetryMin, c.RetryMax = time.Second, time.Millisecond }},
	} {
		cfg := eventlog.DefaultPartitionReaderConfig()
		cfg.Topic = "views"
		tc.mod(&cfg)
		_, err := kc.PartitionReader(cfg, 0)
		es := setting.Errors(err)
		if len(es) != 1 || es[0].Field != tc.field {
			t.Errorf("%s: got %v, want one error naming %s", tc.field, err, tc.field)
		}
	}
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic = "views"
	if _, err := kc.PartitionReader(cfg, 0); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
}

// An unreachable broker is retried until the context ends: Fetch then returns the context's
// error, not the dial's.
func TestPartitionReaderUnreachable(t *testing.T) {
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic, cfg.RetryMin, cfg.RetryMax = "views", 10*time.Millisecond, 50*time.Millisecond
	r, err := eventlog.Plain("127.0.0.1:1").PartitionReader(cfg, kafka.FirstOffset)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if msgs, err := r.Fetch(ctx, nil); !errors.Is(err, context.DeadlineExceeded) || len(msgs) != 0 {
		t.Fatalf("fetch from an unreachable broker: %d messages, %v", len(msgs), err)
	}
}

// deleteRecords moves the log start of partition 0 of topic to offset, as retention does.
func deleteRecords(t *testing.T, ctx context.Context, addr, topic string, offset int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10_000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil || rp.LowWatermark != offset {
				t.Fatalf("delete records: %v, log start %d, want %d", err, rp.LowWatermark, offset)
			}
		}
	}
}

// TestPartitionReaderSkipsDeletedKafka: a start offset the log no longer holds (retention
// deleted it while the worker was away) skips to the oldest offset there, as kafka.Reader
// does, rather than failing or waiting.
func TestPartitionReaderSkipsDeletedKafka(t *testing.T) {
	addr := itest.Kafka(t)
	ctx := itest.Context(t, 60*time.Second)
	topic := itest.Name(t, "deleted")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, addr, topic, 0, 200, 50)
	deleteRecords(t, ctx, addr, topic, 120)
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic = topic
	r, err := eventlog.Plain(addr).PartitionReader(cfg, 30)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readN(t, ctx, r, 120, 80, 512)
}

// warnings counts the records at warning level and above a logger gets.
type warnings struct{ n atomic.Int64 }

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.n.Add(1)
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// TestPartitionReaderSlowCaller: a caller that works on each slice for longer than the
// reader's timeouts still gets every message in order, on one connection: the end of a
// response read after its request's deadline is the response's end, not a failure
// (kafka-go reports it as RequestTimedOut), so there is nothing to retry or warn about.
func TestPartitionReaderSlowCaller(t *testing.T) {
	addr := itest.Kafka(t)
	ctx := itest.Context(t, 60*time.Second)
	topic := itest.Name(t, "slow")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, addr, topic, 0, 300, 10)
	warn := &warnings{}
	cfg := eventlog.DefaultPartitionReaderConfig()
	cfg.Topic, cfg.MaxBytes, cfg.MaxWait, cfg.ReadTimeout, cfg.Log = topic, 2<<10, 10*time.Millisecond, 100*time.Millisecond, slog.New(warn)
	r, err := eventlog.Plain(addr).PartitionReader(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	msgs := make([]kafka.Message, 0, 20)
	for want := int64(0); want < 300; {
		if msgs, err = r.Fetch(ctx, msgs[:0]); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if m.Offset != want {
				t.Fatalf("offset %d, want %d", m.Offset, want)
			}
			want++
		}
		time.Sleep(40 * time.Millisecond) // the caller's work: a response outlives its request's deadline
	}
	if n := warn.n.Load(); n != 0 {
		t.Fatalf("%d warnings (reconnects) reading at a slow caller's pace, want none", n)
	}
}
