package worker

import (
	"context"
	"sync"
	"time"

	"trending/internal/eventlog"
)

// lagEvery is how often a worker asks Kafka for the input topic's high watermarks behind
// trending_speed_consumer_lag: one ListOffsets request for all of its partitions per
// interval, at a publish tick, never one per event. Between reads the gauge also uses the
// newest high watermark the partition's fetches carried (every message has its batch's), so
// it moves with the fetches and still grows while a partition fetches nothing.
const lagEvery = 5 * time.Second

// highWatermarks holds the input topic's newest offsets as last read from Kafka, shared by
// the worker's partitions. At most one read is in flight; a failed read keeps the offsets
// held until the next interval.
type highWatermarks struct {
	mu      sync.Mutex
	at      time.Time // when the last read started
	reading bool
	offs    map[int]eventlog.Offsets
}

// refresh reads the offsets again when lagEvery has passed since the last read started.
// It runs outside the partition's lock: a slow broker delays the gauge, not the publish.
func (h *highWatermarks) refresh(ctx context.Context, read func(context.Context) ([]eventlog.Offsets, error), now time.Time) {
	h.mu.Lock()
	due := !h.reading && (h.at.IsZero() || now.Sub(h.at) >= lagEvery)
	if due {
		h.at, h.reading = now, true
	}
	h.mu.Unlock()
	if !due {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, lagEvery)
	offs, err := read(rctx)
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reading = false
	if err != nil {
		return // the held offsets stay; the next interval tries again
	}
	m := make(map[int]eventlog.Offsets, len(offs))
	for _, o := range offs {
		m[o.Partition] = o
	}
	h.offs = m
}

// get returns partition id's offsets as last read, and whether there are any.
func (h *highWatermarks) get(id int) (eventlog.Offsets, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.offs[id]
	return o, ok
}

// consumerLag is the messages of a partition not yet counted: its high watermark (the newer
// of Kafka's answer, broker, and the one the fetches carried, seen) minus next, the first
// offset not yet in the state. Before the first message next is kafka.FirstOffset (negative),
// which stands for the start of the log (broker.First). Never negative.
func consumerLag(next, seen int64, broker eventlog.Offsets, haveBroker bool) int64 {
	hw := seen
	if haveBroker && broker.Last > hw {
		hw = broker.Last
	}
	if next < 0 {
		next = 0
		if haveBroker {
			next = broker.First
		}
	}
	return max(hw-next, 0)
}
