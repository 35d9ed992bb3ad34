package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
)

// The DLQ holds each invalid message of the input topic once: one DLQ message per source
// (partition, offset), named by its "source" header (topic/partition@offset). Copies came
// from two places, and each has its guard here:
//
//   - a partition replayed from its checkpoint by its next owner re-judged messages whose
//     DLQ copy the previous owner had already written (a queue flushed at 512, or flushed
//     and then the checkpoint lost: a worker paused past its session, killed, or a broker
//     outage): before replaying, the new owner reads the DLQ from a minute before its
//     checkpoint was taken (dlqWritten) and skips the offsets found (partition.dlqDone);
//   - a worker that wakes from a pause past its session still holds a queue of DLQ messages
//     and flushes it before it learns that its partitions moved, while the new owner writes
//     the same ones: a flush first commits the partition's checkpointed offset under the
//     worker's generation (fence), which the coordinator refuses once the generation is
//     over, and then writes nothing.
//
// What remains is narrower than a pause: a produce whose acknowledgement a crashing broker
// lost, written again by kafka-go's retry, and a worker frozen in the milliseconds between
// its fence and its write. Readers that must be exact deduplicate by the source header
// (DESIGN.md, "Correctness, where it is enforced").

// dlqLookback is how far before a checkpoint's time the DLQ is read on restore: the DLQ
// messages about offsets after the checkpoint were produced after its snapshot, which is
// taken before CreatedAt (by the time the state takes to encode and upload); the messages'
// timestamps come from the same worker's clock as CreatedAt.
const dlqLookback = time.Minute

// dlqWritten returns the offsets of partition id of the input topic, from offset from on,
// that the DLQ already holds, reading the DLQ from dlqLookback before since (zero: from its
// start, for a partition without a checkpoint). nil when there are none.
func (w *Worker) dlqWritten(ctx context.Context, id int, from int64, since time.Time) (map[int64]bool, error) {
	c := w.cfg
	offs, err := c.Kafka.TopicOffsets(ctx, c.DLQTopic)
	if err != nil {
		return nil, fmt.Errorf("read the offsets of %s: %w", c.DLQTopic, err)
	}
	prefix := c.Topic + "/" + strconv.Itoa(id) + "@"
	var done map[int64]bool
	for _, o := range offs {
		start := o.First
		if !since.IsZero() && o.First < o.Last {
			at, err := w.dlqOffsetAt(ctx, o.Partition, since.Add(-dlqLookback))
			if err != nil {
				return nil, err
			}
			if at < 0 {
				continue // nothing written since
			}
			start = max(start, at)
		}
		if start >= o.Last {
			continue
		}
		rc := eventlog.DefaultPartitionReaderConfig()
		rc.Topic, rc.Partition, rc.Log = c.DLQTopic, o.Partition, c.Log
		r, err := c.Kafka.PartitionReader(rc, start)
		if err != nil {
			return nil, err
		}
		msgs := make([]kafka.Message, 0, 256)
		for r.Offset() < o.Last {
			if msgs, err = r.Fetch(ctx, msgs[:0]); err != nil {
				r.Close()
				return nil, fmt.Errorf("read %s/%d: %w", c.DLQTopic, o.Partition, err)
			}
			for i := range msgs {
				for _, h := range msgs[i].Headers {
					if h.Key != "source" || !strings.HasPrefix(string(h.Value), prefix) {
						continue
					}
					if off, err := strconv.ParseInt(string(h.Value[len(prefix):]), 10, 64); err == nil && (from < 0 || off >= from) {
						if done == nil {
							done = map[int64]bool{}
						}
						done[off] = true
					}
				}
			}
		}
		r.Close()
	}
	return done, nil
}

// dlqOffsetAt returns the first offset of the DLQ's partition whose timestamp is at or after
// t (-1: none).
func (w *Worker) dlqOffsetAt(ctx context.Context, partition int, t time.Time) (int64, error) {
	var errs []error
	for _, b := range w.cfg.Kafka.Brokers() {
		conn, err := w.cfg.Kafka.Dialer().DialLeader(ctx, "tcp", b, w.cfg.DLQTopic, partition)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		off, err := conn.ReadOffset(t)
		conn.Close()
		if err != nil {
			return 0, fmt.Errorf("find the offset of %s/%d at %s: %w", w.cfg.DLQTopic, partition, t.Format(time.RFC3339), err)
		}
		return off, nil
	}
	return 0, fmt.Errorf("reach the leader of %s/%d: %w", w.cfg.DLQTopic, partition, errors.Join(errs...))
}

// dlqWrittenRetrying is dlqWritten retried with a bounded backoff while the brokers do not
// answer (the partition cannot fetch either meanwhile), until ctx ends.
func (w *Worker) dlqWrittenRetrying(ctx context.Context, id int, from int64, since time.Time) (map[int64]bool, error) {
	pause := eventlog.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		done, err := w.dlqWritten(ctx, id, from, since)
		if err == nil {
			return done, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if ferr := w.kafka.Failed("read "+w.cfg.DLQTopic, err); ferr != nil {
			return nil, ferr
		}
		if !pause.Wait(ctx) {
			return nil, ctx.Err()
		}
	}
}
