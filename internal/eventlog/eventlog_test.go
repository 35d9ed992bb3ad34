package eventlog_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
)

// roundTrip is the contract kafka-go must keep on any broker we run: topics are created once,
// messages keyed by item land in one partition, a consumer group reads them all and its
// commits stick.
func roundTrip(t *testing.T, addr string) {
	ctx := itest.Context(t, 90*time.Second)
	topic := itest.Name(t, "rt")
	got, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 3})
	if err != nil {
		t.Fatalf("ensure: %v", err)
	}
	if got[topic] != 3 {
		t.Fatalf("partitions %v, want 3", got)
	}
	// Second call: nothing to create, same answer.
	if got, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 3}); err != nil || got[topic] != 3 {
		t.Fatalf("ensure again: %v %v", got, err)
	}
	if offs, err := eventlog.TopicOffsets(ctx, []string{addr}, topic); err != nil || len(offs) != 3 {
		t.Fatalf("offsets of the new topic: %v %v, want 3 partitions", offs, err)
	} else {
		for i, o := range offs {
			if o.Partition != i || o.First != 0 || o.Last != 0 {
				t.Fatalf("offsets of the new topic: %+v, want every partition empty at 0", offs)
			}
		}
	}
	if _, err := eventlog.TopicOffsets(ctx, []string{addr}, topic+"-missing"); err == nil {
		t.Fatal("offsets of a missing topic: no error")
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	const n = 60
	var msgs []kafka.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte("V" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, GroupID: topic + "-g", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	partOf := map[string]int{}
	for i := 0; i < n; i++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch %d: %v", i, err)
		}
		if p, ok := partOf[string(m.Key)]; ok && p != m.Partition {
			t.Fatalf("key %s in partitions %d and %d: keys must map to one partition", m.Key, p, m.Partition)
		}
		partOf[string(m.Key)] = m.Partition
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	offs, err := eventlog.TopicOffsets(ctx, []string{addr}, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, o := range offs {
		total += o.Last - o.First
	}
	if total != n {
		t.Fatalf("offsets after %d messages: %+v (sum %d)", n, offs, total)
	}
}

func TestEmbeddedRoundTrip(t *testing.T) {
	e, err := eventlog.StartEmbedded(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	roundTrip(t, e.Addr)
}

func TestKafkaRoundTrip(t *testing.T) {
	roundTrip(t, itest.Kafka(t))
}

func TestEnsureTopicsUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := eventlog.EnsureTopics(ctx, []string{"127.0.0.1:1"}, eventlog.Spec{Name: "x", Partitions: 1}); err == nil {
		t.Fatal("want an error for an unreachable broker")
	}
	if _, err := eventlog.EnsureTopics(ctx, nil); err == nil {
		t.Fatal("want an error for no brokers")
	}
}

// TestEnsureTopicsRace: roles that start together create the same topic at once, asking
// for different partition counts (a worker 1 partials partition, a shard merger 2): every
// call returns the count the topic got, none waits for its own count until it times out.
func TestEnsureTopicsRace(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	raceEnsure(t, k.Addr)
}

func TestEnsureTopicsRaceKafka(t *testing.T) { raceEnsure(t, itest.Kafka(t)) }

func raceEnsure(t *testing.T, addr string) {
	ctx := itest.Context(t, 40*time.Second)
	for round := range 3 {
		topic := itest.Name(t, "race")
		type res struct {
			n   int
			err error
		}
		out := make(chan res, 6)
		for i := range 6 {
			go func() {
				got, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1 + i%2})
				out <- res{got[topic], err}
			}()
		}
		first := -1
		for range 6 {
			r := <-out
			if r.err != nil {
				t.Fatalf("round %d: %v", round, r.err)
			}
			if first == -1 {
				first = r.n
			}
			if r.n != first || (r.n != 1 && r.n != 2) {
				t.Fatalf("round %d: partitions %d and %d: every call must see the count the topic got", round, first, r.n)
			}
		}
	}
}
