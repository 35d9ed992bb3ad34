package eventlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/setting"
)

// PartitionReaderConfig configures a PartitionReader. Start from DefaultPartitionReaderConfig
// and set Topic and Partition.
type PartitionReaderConfig struct {
	// Topic and Partition to read. Topic may not be empty; Partition not negative.
	Topic     string
	Partition int
	// MaxBytes is the most a fetch response may hold (default 16 MB); the broker still sends
	// a first record batch larger than it whole. At least 1.
	MaxBytes int
	// MaxWait is how long the broker holds a fetch that finds nothing new before it answers
	// empty (default 250ms): how often an idle partition is asked again. Positive.
	MaxWait time.Duration
	// ReadTimeout bounds every wait on the connection beyond MaxWait (default 10s): a broker
	// that stops answering is given up on and dialed again after it. Positive.
	ReadTimeout time.Duration
	// RetryMin and RetryMax bound the pause before dialing again after a failure, doubling
	// from the first to the second (defaults 100ms and 5s). Positive, RetryMin <= RetryMax.
	RetryMin, RetryMax time.Duration
	// Log receives a warning for every retried failure, or with Health only the changes of
	// state (Health's lines) and the failures at debug level. nil discards.
	Log *slog.Logger
	// Health, when set, is told of every failure and every fetch answered (the role's
	// trending_kafka_up and its one line per outage), and decides when to give up: a failure
	// it calls unrecoverable (an unknown topic that persists) is returned by Fetch.
	Health *Health
}

// DefaultPartitionReaderConfig returns the defaults, without Topic.
func DefaultPartitionReaderConfig() PartitionReaderConfig {
	return PartitionReaderConfig{
		MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond, ReadTimeout: 10 * time.Second,
		RetryMin: 100 * time.Millisecond, RetryMax: 5 * time.Second,
	}
}

// Validate reports every setting that cannot work, by field.
func (c PartitionReaderConfig) Validate() error {
	d := DefaultPartitionReaderConfig()
	var errs []error
	if c.Topic == "" {
		errs = append(errs, setting.Invalid("Topic", "must not be empty"))
	}
	if c.Partition < 0 {
		errs = append(errs, setting.Invalid("Partition", "%d: must not be negative", c.Partition))
	}
	if c.MaxBytes < 1 {
		errs = append(errs, setting.Invalid("MaxBytes", "%d: must be positive (default %d)", c.MaxBytes, d.MaxBytes))
	}
	for _, f := range []struct {
		name   string
		v, def time.Duration
	}{{"MaxWait", c.MaxWait, d.MaxWait}, {"ReadTimeout", c.ReadTimeout, d.ReadTimeout}, {"RetryMin", c.RetryMin, d.RetryMin}, {"RetryMax", c.RetryMax, d.RetryMax}} {
		if f.v <= 0 {
			errs = append(errs, setting.Invalid(f.name, "%s: must be positive (default %v)", f.v, f.def))
		}
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMin > c.RetryMax {
		errs = append(errs, setting.Invalid("RetryMax", "%s: must not be below RetryMin (%s)", c.RetryMax, c.RetryMin))
	}
	return errors.Join(errs...)
}

// PartitionReader reads one partition of a topic from its leader, whole fetch responses at a
// time, on the calling goroutine: no goroutine, channel or lock per message between the
// socket and the caller, which is what kafka.Reader spends most of its CPU on (BENCHMARKS.md,
// "Speed runtime"). It tracks no consumer group: the caller owns the offset (a checkpoint's)
// and commits it where it wants.
//
// Failures it can outlast (a lost connection, a leader that moved, a broker that restarts)
// are retried with a growing pause; an offset the log no longer holds skips to the oldest
// one it does, as kafka.Reader does. A PartitionReader is not safe for concurrent use.
type PartitionReader struct {
	c      *Client
	cfg    PartitionReaderConfig
	log    *slog.Logger
	next   int64 // the offset of the next message to return (FirstOffset or LastOffset until resolved)
	conn   *kafka.Conn
	shared atomic.Pointer[kafka.Conn] // conn, for abort on the context's goroutine
	batch  *kafka.Batch               // the open fetch response, nil between them
	hw     int64
	failed int // consecutive failures, for the pause
	// checkRange: the last fetch was out of range; the next connection reads the log's
	// offsets before fetching.
	checkRange bool
}

// PartitionReader returns a reader of cfg's partition that starts at offset (an offset, or
// kafka.FirstOffset or kafka.LastOffset). It connects on the first Fetch.
func (c *Client) PartitionReader(cfg PartitionReaderConfig, offset int64) (*PartitionReader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &PartitionReader{c: c, cfg: cfg, log: log, next: offset}, nil
}

// Offset returns the offset of the next message Fetch returns (kafka.FirstOffset or
// kafka.LastOffset before the first fetch resolved it).
func (r *PartitionReader) Offset() int64 { return r.next }

// Fetch appends to msgs the next messages of the partition, in offset order, at most
// cap(msgs)-len(msgs) of them (at least one: a msgs with no room gets room for 256), and
// returns the slice. It waits until at least one message is there, or ctx ends (then it
// returns ctx's error and the messages so far, if any). Each message's Key and Value are its
// own memory; its HighWaterMark is the partition's high watermark when its fetch was
// answered. Messages come from one open fetch response until it is used up, so a caller
// with a small msgs reads the socket as it goes rather than holding a whole response.
//
// Errors it cannot outlast (one the broker says will not go away, such as an authorization
// failure) are returned; the reader stays usable and the next Fetch tries again.
func (r *PartitionReader) Fetch(ctx context.Context, msgs []kafka.Message) ([]kafka.Message, error) {
	if cap(msgs) == len(msgs) {
		msgs = append(make([]kafka.Message, 0, len(msgs)+256), msgs...)
	}
	start := len(msgs)
	if err := ctx.Err(); err != nil {
		return msgs, err
	}
	// A read blocked on the socket does not see ctx: closing the connection ends it. When
	// that ran (or runs now), the connection is gone: the next call dials again.
	stop := context.AfterFunc(ctx, r.abort)
	defer func() {
		if !stop() {
			r.drop()
		}
	}()
	if r.batch != nil {
		r.conn.SetReadDeadline(time.Now().Add(r.cfg.ReadTimeout))
	}
	for len(msgs) < cap(msgs) {
		if r.batch == nil {
			if len(msgs) > start {
				break // return what is here rather than wait for more
			}
			if err := ctx.Err(); err != nil {
				return msgs, err
			}
			if err := r.open(ctx); err != nil {
				if ctx.Err() != nil {
					return msgs, ctx.Err()
				}
				var fatal fatalError
				if errors.As(err, &fatal) {
					if r.cfg.Health != nil {
						r.cfg.Health.Failed("fetch "+r.cfg.Topic, fatal.error)
					}
					return msgs, fatal.error
				}
				if r.cfg.Health != nil {
					if ferr := r.cfg.Health.Failed(fmt.Sprintf("fetch %s/%d", r.cfg.Topic, r.cfg.Partition), err); ferr != nil {
						return msgs, ferr
					}
				}
				if !r.pause(ctx, err) {
					return msgs, ctx.Err()
				}
			}
			continue
		}
		m, err := r.batch.ReadMessage()
		if err != nil {
			r.closeBatch(ctx, err)
			continue
		}
		r.failed = 0
		r.next = m.Offset + 1
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// fatalError is a failure Fetch returns instead of retrying.
type fatalError struct{ error }

// open sends the next fetch request, dialing the partition's leader first when there is no
// connection, and leaves its response as r.batch. A nil error with r.batch nil means: ask
// again now (an offset outside the log was moved).
func (r *PartitionReader) open(ctx context.Context) error {
	if r.conn == nil {
		if err := r.dial(ctx); err != nil {
			return err
		}
	}
	r.conn.SetReadDeadline(time.Now().Add(r.cfg.MaxWait + r.cfg.ReadTimeout))
	if _, err := r.conn.Seek(r.next, kafka.SeekAbsolute|kafka.SeekDontCheck); err != nil {
		r.drop()
		return err
	}
	b := r.conn.ReadBatchWith(kafka.ReadBatchConfig{MinBytes: 1, MaxBytes: r.cfg.MaxBytes, MaxWait: r.cfg.MaxWait})
	if err := b.Err(); err != nil {
		b.Close()
		if errors.Is(err, kafka.OffsetOutOfRange) {
			// The connection does not answer another request after this one: ask for the
			// log's range on a new one.
			r.drop()
			r.checkRange = true
			return nil
		}
		var ke kafka.Error
		if !Retryable(err) || errors.As(err, &ke) && !ke.Temporary() && !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.NotLeaderForPartition) {
			return fatalError{fmt.Errorf("fetch %s/%d at offset %d: %w", r.cfg.Topic, r.cfg.Partition, r.next, err)}
		}
		r.drop()
		return fmt.Errorf("fetch %s/%d at offset %d: %w", r.cfg.Topic, r.cfg.Partition, r.next, err)
	}
	r.batch, r.hw = b, b.HighWaterMark()
	if r.cfg.Health != nil && r.failed > 0 {
		r.cfg.Health.OK()
	}
	return nil
}

// HighWaterMark returns the partition's high watermark as of the newest fetch response (0
// before the first).
func (r *PartitionReader) HighWaterMark() int64 { return r.hw }

// closeBatch ends the open fetch response at err from its ReadMessage: io.EOF is its normal
// end, and so is RequestTimedOut: kafka-go reports it instead of io.EOF at the end of a
// response the broker cut at MaxBytes when it is read after the deadline the request was
// sent with (a caller that works on each slice for a while reads a large response for
// longer than that), the connection still good. Anything else drops the connection so the
// next fetch dials again.
func (r *PartitionReader) closeBatch(ctx context.Context, err error) {
	cerr := r.batch.Close()
	r.batch = nil
	if (errors.Is(err, io.EOF) || errors.Is(err, kafka.RequestTimedOut)) && (cerr == nil || errors.Is(cerr, kafka.RequestTimedOut)) {
		return
	}
	if ctx.Err() == nil {
		r.log.Warn("kafka fetch interrupted; reconnecting", "topic", r.cfg.Topic, "partition", r.cfg.Partition, "offset", r.next, "err", errors.Join(err, cerr))
	}
	r.drop()
}

// dial connects to the partition's leader through any bootstrap broker and resolves a
// symbolic start offset.
func (r *PartitionReader) dial(ctx context.Context) error {
	var errs []error
	for _, b := range r.c.brokers {
		conn, err := r.c.dialer.DialLeader(ctx, "tcp", b, r.cfg.Topic, r.cfg.Partition)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.conn = conn
		r.shared.Store(conn)
		if r.next == kafka.FirstOffset || r.next == kafka.LastOffset || r.checkRange {
			return r.seek()
		}
		return nil
	}
	return fmt.Errorf("reach the leader of %s/%d through %v: %w", r.cfg.Topic, r.cfg.Partition, r.c.brokers, errors.Join(errs...))
}

// seek resolves a symbolic start offset to the log's first or last, and after an
// OffsetOutOfRange answer does as kafka.Reader does: an offset before the oldest the log
// holds (retention deleted it) moves to that oldest one, with a warning; an offset past the
// end waits for the log to reach it (an error, so the caller pauses and asks again).
func (r *PartitionReader) seek() error {
	r.conn.SetReadDeadline(time.Now().Add(r.cfg.ReadTimeout))
	first, last, err := r.conn.ReadOffsets()
	if err != nil {
		r.drop()
		return fmt.Errorf("read the offsets of %s/%d: %w", r.cfg.Topic, r.cfg.Partition, err)
	}
	r.checkRange = false
	switch {
	case r.next == kafka.FirstOffset:
		r.next = first
	case r.next == kafka.LastOffset:
		r.next = last
	case r.next < first:
		r.log.Warn("offset no longer in the log; skipping to the oldest it holds", "topic", r.cfg.Topic, "partition", r.cfg.Partition,
			"offset", r.next, "first", first, "skipped", first-r.next)
		r.next = first
	case r.next > last:
		r.checkRange = true
		return fmt.Errorf("fetch %s/%d: offset %d is past the end of the log (%d)", r.cfg.Topic, r.cfg.Partition, r.next, last)
	}
	return nil
}

// pause waits before the next attempt after err, doubling from RetryMin to RetryMax over
// consecutive failures; false when ctx ended first.
func (r *PartitionReader) pause(ctx context.Context, err error) bool {
	d := r.cfg.RetryMin << min(r.failed, 16)
	if d > r.cfg.RetryMax || d <= 0 {
		d = r.cfg.RetryMax
	}
	r.failed++
	lvl := slog.LevelWarn
	if r.cfg.Health != nil {
		lvl = slog.LevelDebug // Health logged the outage once
	}
	r.log.Log(ctx, lvl, "kafka fetch failed; retrying", "topic", r.cfg.Topic, "partition", r.cfg.Partition, "offset", r.next, "in", d, "err", err)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// abort ends a blocked read when the caller's context ends: the connection is closed and
// the next Fetch dials again.
func (r *PartitionReader) abort() {
	if c := r.shared.Load(); c != nil {
		c.Close()
	}
}

// drop closes the connection (and any open response): the next fetch dials again.
func (r *PartitionReader) drop() {
	if r.batch != nil {
		r.batch.Close()
		r.batch = nil
	}
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
		r.shared.Store(nil)
	}
}

// Close closes the connection. The reader may not be used after it.
func (r *PartitionReader) Close() error {
	r.drop()
	return nil
}
