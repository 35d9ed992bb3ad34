package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/model/event"
)

// fixture is one test's topic on the real Kafka and its bucket on the real MinIO (both named
// after the test), with the flags that point the binary's roles at them.
type fixture struct {
	kafkaAddr string
	topic     string
	kc        *eventlog.Client
	obj       *objstore.Client
	kafka     []string // --kafka, --views-topic, --partitions
	s3        []string // --s3-*
}

func newFixture(t *testing.T, ctx context.Context, prefix string, partitions int) *fixture {
	t.Helper()
	f := &fixture{kafkaAddr: itest.Kafka(t), topic: itest.Name(t, prefix)}
	s3 := itest.S3(t)
	f.kc = eventlog.Plain(f.kafkaAddr)
	if _, err := f.kc.EnsureTopics(ctx, eventlog.Spec{Name: f.topic, Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, f.topic, s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	f.obj = obj
	f.kafka = []string{"--kafka", f.kafkaAddr, "--views-topic", f.topic, "--partitions", fmt.Sprint(partitions)}
	f.s3 = []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", f.topic}
	return f
}

// args is a role's command line: name, then the Kafka and S3 flags, no metrics listener,
// JSON logs, then extra.
func (f *fixture) args(name string, extra ...string) []string {
	a := append([]string{name}, f.kafka...)
	a = append(a, f.s3...)
	a = append(a, "--metrics-addr", "", "--log-format", "json")
	return append(a, extra...)
}

// waitArchived waits until the archive's progress of every partition is at its end offset.
func (f *fixture) waitArchived(t *testing.T, ctx context.Context, ends []eventlog.Offsets, within time.Duration) {
	t.Helper()
	rd := archive.NewReader(f.obj)
	waitFor(t, time.Now().Add(within), "the archive's progress at the end of every partition", func() (bool, string) {
		ps, err := rd.Progress(ctx)
		if err != nil {
			return false, err.Error()
		}
		next := map[int]int64{}
		for _, p := range ps {
			next[int(p.Partition)] = p.NextOffset
		}
		for _, o := range ends {
			if next[o.Partition] < o.Last {
				return false, fmt.Sprintf("progress %v, ends %v", next, ends)
			}
		}
		return true, ""
	})
}

// producer writes chunks of valid events with event times spread over [from, from+span) to
// a topic until stopped, keeping as its truth what Kafka acknowledged.
type producer struct {
	truth *stream.Truth
	sent  int
	// retries counts failed writes retried (retry set): a write that failed may still have
	// reached the log, so the topic can hold an event more than the truth does.
	retries int
	lastErr error
	// ts, when set, dates the i-th event (from 0) instead of the random time in the span.
	ts      func(i int) time.Time
	retry   bool
	stopc   chan struct{}
	stopped bool // stop or wait was called (the test's goroutine only)
	done    chan error
}

// startProducer starts writing a chunk of n events every pause, until stopped or, when
// limit is positive, until it wrote limit events; items are item-000 to item-299 with counts
// 1-5, reproducible from seed.
func (f *fixture) startProducer(ctx context.Context, from time.Time, span time.Duration, n, limit int, pause time.Duration, seed uint64) *producer {
	p := &producer{truth: stream.NewTruth(), stopc: make(chan struct{}), done: make(chan error, 1)}
	return p.start(ctx, f, from, span, n, limit, pause, seed)
}

// startOrdered is startProducer with event times in order, the i-th event at from + i*step,
// and failed writes retried until ctx ends (what a producer does across a broker restart).
func (f *fixture) startOrdered(ctx context.Context, from time.Time, step time.Duration, n, limit int, pause time.Duration, seed uint64) *producer {
	p := &producer{truth: stream.NewTruth(), stopc: make(chan struct{}), done: make(chan error, 1), retry: true,
		ts: func(i int) time.Time { return from.Add(time.Duration(i) * step) }}
	return p.start(ctx, f, from, 0, n, limit, pause, seed)
}

func (p *producer) start(ctx context.Context, f *fixture, from time.Time, span time.Duration, n, limit int, pause time.Duration, seed uint64) *producer {
	w := f.kc.NewWriter(f.topic)
	go func() {
		defer w.Close()
		rng := rand.New(rand.NewPCG(seed, 1))
		for {
			msgs := make([]kafka.Message, n)
			evs := make([]event.Event, n)
			for i := range msgs {
				e := event.Event{ItemID: fmt.Sprintf("item-%03d", rng.IntN(300)), Count: uint32(1 + rng.IntN(5))}
				if p.ts != nil {
					e.TS = p.ts(p.sent + i).Truncate(time.Millisecond)
				} else {
					e.TS = from.Add(time.Duration(rng.Int64N(int64(span)))).Truncate(time.Millisecond)
				}
				msgs[i] = kafka.Message{Key: []byte(e.ItemID), Value: e.AppendJSON(nil)}
				evs[i] = e
			}
			for {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := w.WriteMessages(wctx, msgs...)
				cancel()
				if err == nil {
					break
				}
				if !p.retry || ctx.Err() != nil {
					p.done <- fmt.Errorf("produce: %w (last retried: %v)", err, p.lastErr)
					return
				}
				p.retries++
				p.lastErr = err
				time.Sleep(200 * time.Millisecond)
			}
			for _, e := range evs {
				p.truth.Add(e)
			}
			p.sent += n
			if limit > 0 && p.sent >= limit {
				p.done <- nil
				return
			}
			select {
			case <-p.stopc:
				p.done <- nil
				return
			case <-time.After(pause):
			}
		}
	}()
	return p
}

// stop stops the producer after its current chunk (or waits for its limit); the truth and
// count are then final.
func (p *producer) stop(t *testing.T) {
	t.Helper()
	if p.stopped {
		return
	}
	p.stopped = true
	close(p.stopc)
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
}

// wait waits for a producer with a limit to write it all.
func (p *producer) wait(t *testing.T) {
	t.Helper()
	p.stopped = true
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
}
