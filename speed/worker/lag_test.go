package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
)

func TestConsumerLag(t *testing.T) {
	b := eventlog.Offsets{Partition: 0, First: 100, Last: 500}
	for _, c := range []struct {
		name       string
		next, seen int64
		broker     bool
		want       int64
	}{
		{"broker ahead of the fetches", 300, 400, true, 200},
		{"fetches ahead of the last broker read", 300, 600, true, 300},
		{"no broker read yet", 300, 400, false, 100},
		{"caught up", 500, 500, true, 0},
		{"a stale broker read is never negative", 700, 0, true, 0},
		{"nothing consumed: from the start of the log", kafka.FirstOffset, 0, true, 400},
		{"nothing consumed, nothing known", kafka.FirstOffset, 0, false, 0},
	} {
		if got := consumerLag(c.next, c.seen, b, c.broker); got != c.want {
			t.Errorf("%s: consumerLag(%d, %d, %+v, %v) = %d, want %d", c.name, c.next, c.seen, b, c.broker, got, c.want)
		}
	}
}

// TestHighWatermarksRefresh: one read per lagEvery however many partitions tick, a failed
// read keeps the offsets held.
func TestHighWatermarksRefresh(t *testing.T) {
	var h highWatermarks
	reads := 0
	var fail bool
	read := func(context.Context) ([]eventlog.Offsets, error) {
		reads++
		if fail {
			return nil, errors.New("broker away")
		}
		return []eventlog.Offsets{{Partition: 0, Last: int64(10 * reads)}, {Partition: 1, Last: 7}}, nil
	}
	ctx := context.Background()
	t0 := time.Unix(1_700_000_000, 0)
	if _, ok := h.get(0); ok {
		t.Fatal("offsets before the first read")
	}
	for i := range 8 { // 8 partitions ticking within the same second
		h.refresh(ctx, read, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if reads != 1 {
		t.Fatalf("%d reads within one interval, want 1", reads)
	}
	if o, ok := h.get(0); !ok || o.Last != 10 {
		t.Fatalf("partition 0: %+v %v, want Last 10", o, ok)
	}
	h.refresh(ctx, read, t0.Add(lagEvery-time.Millisecond))
	if reads != 1 {
		t.Fatalf("read again before lagEvery")
	}
	h.refresh(ctx, read, t0.Add(lagEvery))
	if o, _ := h.get(0); reads != 2 || o.Last != 20 {
		t.Fatalf("after lagEvery: %d reads, partition 0 at %d, want 2 and 20", reads, o.Last)
	}
	fail = true
	h.refresh(ctx, read, t0.Add(2*lagEvery))
	if o, ok := h.get(1); reads != 3 || !ok || o.Last != 7 {
		t.Fatalf("after a failed read: %d reads, partition 1 %+v %v; want the offsets held", reads, o, ok)
	}
}
