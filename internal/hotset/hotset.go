// Package hotset shares the hot set of hot-key salting (model/salt, docs/scale-out.md,
// "Hot keys") between the producers, and keys their Kafka messages by it.
//
// The set lives in a compacted Kafka topic (eventlog.Names.Salted, views.salted), one message
// per item, keyed by it, whose value is the item's salt.Entry: every producer (trending
// loadgen, the ingest of serve and up) already talks to Kafka, compaction keeps the newest
// entry of each item for good, and a producer that starts reads the whole set from the
// topic's beginning. An entry a producer detects is written there and applied locally at
// once; every producer follows the topic, so the others salt the item within a fetch. The
// speed workers and the mergers need no copy of the set: a salted message says so itself (the
// salt.Header), so producers that see a change at different moments, or a set that changes in
// the middle of a window, only change which partitions an item's events land on.
//
// In detail (DESIGN.md's file map has the line): the producers' shared hot set: a
// compacted Kafka topic `TOPIC.salted` (one `salt.Entry` per item) that `Shared.Run`
// creates, reads from its beginning (`Ready`) and follows into a `salt.Set`, writing what
// `Publish` queues; `Key` rewrites a batch of messages' keys and headers by a `Salter`
// (loadgen, the ingest). The speed workers and mergers need no copy: a salted message says
// so itself
package hotset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/setting"
	"trending/model/salt"
)

// Config configures a Shared set. Kafka, Topic and Set are required.
type Config struct {
	// Kafka is the client the topic is read and written through.
	Kafka *eventlog.Client
	// Topic is the compacted topic of the set (eventlog.Names.Salted).
	Topic string
	// Set is the set kept in step with the topic: configured entries may be in it already.
	Set *salt.Set
	// Log receives read and write failures (retried): a Kafka outage once when it starts
	// and once when it ends (eventlog.Health); nil discards.
	Log *slog.Logger
	// Registry takes trending_kafka_up{role="hotset"}; nil registers nothing.
	Registry prometheus.Registerer
}

// Shared keeps a salt.Set in step with the shared topic. Run follows the topic; Publish
// queues an entry for Run to write. Safe for concurrent use.
type Shared struct {
	cfg   Config
	queue chan salt.Entry
	ready chan struct{} // closed once the topic was read to its end at start
	kafka *eventlog.Health
}

// New checks cfg and returns a Shared set.
func New(cfg Config) (*Shared, error) {
	var errs []error
	if cfg.Kafka == nil {
		errs = append(errs, setting.Invalid("Kafka", "no Kafka brokers"))
	}
	if cfg.Topic == "" {
		errs = append(errs, setting.Invalid("Topic", "must not be empty (default %q)", eventlog.TopicSalted))
	}
	if cfg.Set == nil {
		errs = append(errs, setting.Invalid("Set", "no hot set"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("salting: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "hotset", cfg.Log, cfg.Registry
	h, err := eventlog.NewHealth(hc)
	if err != nil {
		return nil, fmt.Errorf("salting: %w", err)
	}
	return &Shared{cfg: cfg, queue: make(chan salt.Entry, 1024), ready: make(chan struct{}), kafka: h}, nil
}

// Publish queues e to be written to the topic (and so reach every producer); it never
// blocks: a salt.Salter's callback. An entry that finds the queue full is dropped (the
// detecting producer renews it while the item stays hot).
func (s *Shared) Publish(e salt.Entry) {
	select {
	case s.queue <- e:
	default:
		s.cfg.Log.Warn("hot-set queue full: an entry was not shared", "item", e.Item)
	}
}

// Ready is closed once Run has read the topic to the end it had when Run started: from then
// on the set holds every entry shared before.
func (s *Shared) Ready() <-chan struct{} { return s.ready }

// Run creates the topic if it is missing (compacted, one partition), reads it from the
// beginning into the set and follows it, and writes what Publish queues, until ctx ends;
// then it writes what is still queued (5 s at most). Broker errors are logged and retried.
func (s *Shared) Run(ctx context.Context) error {
	c := s.cfg
	if _, err := c.Kafka.EnsureTopics(ctx, eventlog.Spec{Name: c.Topic, Partitions: 1, Compact: true}); err != nil {
		return fmt.Errorf("salting: %w", err)
	}
	w := c.Kafka.NewWriter(c.Topic)
	defer w.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.follow(ctx)
	}()
	write := func(ctx context.Context, es []salt.Entry) {
		msgs := make([]kafka.Message, 0, len(es))
		for _, e := range es {
			b, err := e.Encode()
			if err != nil {
				continue
			}
			msgs = append(msgs, kafka.Message{Key: []byte(e.Item), Value: b})
		}
		for attempt := 0; ; attempt++ {
			err := w.WriteMessages(ctx, msgs...)
			if err == nil {
				s.kafka.OK()
				return
			}
			if ctx.Err() != nil {
				return
			}
			// Salting is an optimisation: even what Health calls unrecoverable only stops the
			// sharing, never the producer, so it is retried all the same.
			s.kafka.Failed("share hot items on "+c.Topic, err)
			c.Log.Debug("sharing hot items failed; retrying", "topic", c.Topic, "entries", len(msgs), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 5*time.Second)):
			}
		}
	}
	for {
		select {
		case e := <-s.queue:
			es := []salt.Entry{e}
			for len(es) < 100 && len(s.queue) > 0 {
				es = append(es, <-s.queue)
			}
			write(ctx, es)
		case <-ctx.Done():
			wg.Wait()
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			var es []salt.Entry
			for len(s.queue) > 0 {
				es = append(es, <-s.queue)
			}
			if len(es) > 0 {
				write(fctx, es)
			}
			return nil
		}
	}
}

// follow reads the topic from its beginning into the set until ctx ends, closing ready once
// it has read up to the end the topic had when it started.
func (s *Shared) follow(ctx context.Context) {
	c := s.cfg
	var once sync.Once
	markReady := func() { once.Do(func() { close(s.ready) }) }
	defer markReady()
	end := int64(-1)
	for backoff := 100 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
		// Asked on every attempt: an answer also ends an outage (the topic may stay quiet
		// for long after it, with nothing read or written to say so).
		offs, err := c.Kafka.TopicOffsets(ctx, c.Topic)
		if err == nil {
			s.kafka.OK()
			if end < 0 && len(offs) == 1 {
				end = offs[0].Last
			}
		}
		if end == 0 {
			markReady() // an empty topic
		}
		if err == nil {
			err = s.read(ctx, end, markReady)
		}
		if ctx.Err() != nil {
			return
		}
		s.kafka.Failed("read the hot set "+c.Topic, err)
		c.Log.Debug("reading the hot set failed; retrying", "topic", c.Topic, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// read applies the topic's entries from its beginning until an error or ctx's end, calling
// ready after the one before offset end.
func (s *Shared) read(ctx context.Context, end int64, ready func()) error {
	c := s.cfg
	r := c.Kafka.Reader(kafka.ReaderConfig{Topic: c.Topic, Partition: 0, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		return err
	}
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return err
		}
		if len(m.Value) > 0 { // a tombstone has nothing to apply: entries lapse by their Until
			if e, err := salt.DecodeEntry(m.Value); err != nil {
				c.Log.Warn("skipping a bad hot-set entry", "topic", c.Topic, "offset", m.Offset, "err", err)
			} else if c.Set.Put(e) {
				c.Log.Info("hot item salted", "item", e.Item, "ways", e.Ways, "until", e.Until, "by", e.By)
			}
		}
		if end >= 0 && m.Offset+1 >= end {
			ready()
		}
	}
}

// Key rewrites the keys of msgs (each keyed by its item id, as every producer keys them) by
// the salter at now: a salted item's message gets its sub-key and the salt.Header. Call it on
// the messages that may be salted: never on trending topics' mentions (events with a user),
// whose per-user dedupe needs every mention of a topic on one partition.
func Key(s *salt.Salter, msgs []kafka.Message, now time.Time) {
	if s == nil {
		return
	}
	for i := range msgs {
		key, h := s.Key(string(msgs[i].Key), now)
		if h == nil {
			continue
		}
		msgs[i].Key = []byte(key)
		msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: salt.Header, Value: h})
	}
}
