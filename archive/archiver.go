package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/internal/setting"
	"trending/model/event"
)

// Config configures an Archiver. Start from DefaultConfig: New takes every field as it is,
// and a zero field means zero (see each field).
type Config struct {
	// Kafka is the client of the archiver's reader and offset queries (brokers, TLS, SASL).
	// Required.
	Kafka *eventlog.Client
	// Topic is the topic archived; default eventlog.TopicViews. Required.
	Topic string
	// ConsumerGroup is the archiver's own consumer group; default "trending-archive". Required. It
	// must differ from the speed layer's: each group gets every event.
	ConsumerGroup string
	// Root is the key prefix of the archive in the bucket; default "archive". Required.
	Root string
	// RollBytes rolls a partition once its buffered message bytes reach it; default 64 MiB.
	// Positive, and at most MaxBufferBytes. It bounds buffered raw bytes: the Parquet
	// objects are several times smaller.
	RollBytes int64
	// RollAge rolls a partition once its oldest buffered message has waited this long;
	// default 5 minutes; positive. It bounds how stale the archive is on a quiet partition.
	RollAge time.Duration
	// MaxBufferBytes bounds buffered message bytes over all partitions; beyond it the
	// largest buffer rolls early. Default 256 MiB; positive.
	MaxBufferBytes int64
	// RowGroupRows caps rows per Parquet row group; default DefaultRowGroupRows; positive.
	RowGroupRows int64
	// RetryMin and RetryMax bound the exponential backoff between S3 retries; defaults
	// 250 ms and 30 s; 0 < RetryMin <= RetryMax. The archiver retries S3 for as long as it
	// runs: giving up would only mean fetching the same messages again.
	RetryMin, RetryMax time.Duration
	// StopTimeout is how long a graceful stop may spend uploading what is buffered;
	// default 30 s; positive. What does not make it is not committed and is fetched again
	// on restart.
	StopTimeout time.Duration
	// MaxWait bounds how long one Kafka fetch waits for data; default 500 ms. Positive
	// (kafka-go would read zero as its own 10 s).
	MaxWait time.Duration
	// MaxFuture: an event dated more than this ahead of the clock (event.Ahead: the
	// message's Kafka timestamp, or the wall clock when that is earlier) goes to the
	// quarantine with reason future_ts instead of the archive, by the same rule and default
	// as the speed layer's (event.DefaultMaxFuture, 10m), so the batch never counts what the
	// speed layer refused, and no such event moves the archive's progress. Zero quarantines
	// every event dated ahead of the clock at all; negative disables the check.
	MaxFuture time.Duration
	// RefreshEvery is how often the archiver asks Kafka for every partition's offsets,
	// records the topic's partition count and marks partitions with nothing left to archive
	// as caught up (an idle or empty partition, whose event time stands still, so that
	// Complete can close hours it has no events in). Zero, the default, derives it from
	// RollAge: RollAge, at least 1 s and at most 30 s.
	RefreshEvery time.Duration
	// ReplayQuiet is how long a partition whose producer writes the past must have
	// received nothing before it counts as caught up (Progress.CaughtUpAt); default 10 s.
	// A partition's producer writes the past when its last roll's events entered the log,
	// by the median, more than ReplayQuiet after their event time (Progress.LagMS: a
	// replay, a backfill, a producer catching up). Such a partition's caught-up time would
	// close every hour up to the wall clock, ahead of the event time the replay reached,
	// so a replay that merely paused for RollAge (a loaded machine, a producer between two
	// batches) must not count as finished. A live partition still counts as caught up after
	// RollAge. Zero applies RollAge to every partition (the rule before); not negative.
	ReplayQuiet time.Duration
}

// DefaultConfig returns the defaults, with Kafka still to be set.
func DefaultConfig() Config {
	return Config{
		Topic:          eventlog.TopicViews,
		ConsumerGroup:  eventlog.GroupArchive,
		Root:           DefaultRoot,
		RollBytes:      64 << 20,
		RollAge:        5 * time.Minute,
		MaxBufferBytes: 256 << 20,
		RowGroupRows:   DefaultRowGroupRows,
		RetryMin:       250 * time.Millisecond,
		RetryMax:       30 * time.Second,
		StopTimeout:    30 * time.Second,
		MaxWait:        500 * time.Millisecond,
		MaxFuture:      event.DefaultMaxFuture,
		ReplayQuiet:    10 * time.Second,
	}
}

// refreshEvery is RefreshEvery, or when zero the interval derived from RollAge.
func (c Config) refreshEvery() time.Duration {
	if c.RefreshEvery != 0 {
		return c.RefreshEvery
	}
	return min(max(c.RollAge, time.Second), 30*time.Second)
}

// Validate reports settings that cannot work, by field (setting.ErrConfig).
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	bad := func(field, format string, args ...any) { errs = append(errs, setting.Invalid(field, format, args...)) }
	if c.Kafka == nil {
		bad("Kafka", "no Kafka brokers")
	}
	if c.Topic == "" {
		bad("Topic", "empty: name the topic to archive (default %s)", d.Topic)
	}
	if c.ConsumerGroup == "" {
		bad("ConsumerGroup", "empty: name the archiver's consumer group (default %s)", d.ConsumerGroup)
	}
	if c.Root == "" {
		bad("Root", "empty: name the key prefix of the archive in the bucket (default %s)", d.Root)
	}
	if c.RollBytes <= 0 {
		bad("RollBytes", "%d: must be positive (default %d)", c.RollBytes, d.RollBytes)
	}
	if c.RollAge <= 0 {
		bad("RollAge", "%s: must be positive (default %s)", c.RollAge, d.RollAge)
	}
	if c.MaxBufferBytes <= 0 {
		bad("MaxBufferBytes", "%d: must be positive (default %d)", c.MaxBufferBytes, d.MaxBufferBytes)
	} else if c.RollBytes > c.MaxBufferBytes {
		bad("RollBytes", "%d exceeds the max buffer of %d bytes: raise the buffer or lower the roll size", c.RollBytes, c.MaxBufferBytes)
	}
	if c.RowGroupRows <= 0 {
		bad("RowGroupRows", "%d: must be positive (default %d)", c.RowGroupRows, d.RowGroupRows)
	}
	if c.RetryMin <= 0 {
		bad("RetryMin", "%s: must be positive (default %s)", c.RetryMin, d.RetryMin)
	}
	if c.RetryMax <= 0 || c.RetryMax < c.RetryMin {
		bad("RetryMax", "%s: retry backoff %s..%s: want 0 < min <= max (default %s)", c.RetryMax, c.RetryMin, c.RetryMax, d.RetryMax)
	}
	if c.StopTimeout <= 0 {
		bad("StopTimeout", "%s: must be positive (default %s)", c.StopTimeout, d.StopTimeout)
	}
	if c.MaxWait <= 0 {
		bad("MaxWait", "%s: must be positive (default %s)", c.MaxWait, d.MaxWait)
	}
	if c.RefreshEvery < 0 {
		bad("RefreshEvery", "%s: must not be negative (0 derives it from RollAge)", c.RefreshEvery)
	}
	if c.ReplayQuiet < 0 {
		bad("ReplayQuiet", "%s: must not be negative (default %s; 0 is RollAge for every partition)", c.ReplayQuiet, d.ReplayQuiet)
	}
	return errors.Join(errs...)
}

// Archiver copies every message of the topic to the archive. Run it once; it is not safe
// for concurrent use (it is one consumer loop).
type Archiver struct {
	cfg   Config
	store *objstore.Client
	log   *slog.Logger
	m     *metrics
	lay   layout
	// kafka is the archiver's view of the brokers (eventlog.Health): an outage is waited
	// out with the buffers and progress kept, logged once, trending_kafka_up{role="archive"}.
	kafka *eventlog.Health

	parts    map[int32]*partBuf
	buffered int64 // message bytes over all partitions
	// kafkaUp caches kafka.Up() for the fetch loop (no lock per message).
	kafkaUp  bool
	progress map[int32]*Progress
	// nextRefresh is when refresh next asks Kafka for the partitions' offsets; manifest is
	// the topic manifest last written (nil before the first refresh of this run).
	nextRefresh time.Time
	manifest    *TopicManifest
	// offsets, when set, replaces eventlog.TopicOffsets (tests).
	offsets func(ctx context.Context) ([]eventlog.Offsets, error)

	// beforeCommit, when set, runs after a roll's uploads and before its commit; an error
	// ends Run at once, as a crash there would. Tests only: set by the package's tests, or
	// from FaultEnv (fault.go).
	beforeCommit func(partition int32) error
}

// partBuf is one partition's messages since its last roll: a contiguous run of offsets
// first..last, which is what lets a reader dedup by offset range (see Reader).
type partBuf struct {
	rows  []Row
	bad   []QuarantineRecord
	n     int
	first int64
	last  int64
	bytes int64
	// maxMsgTime is the latest Kafka timestamp (or, when a message has none, the wall
	// clock at fetch) in the buffer: the roll's archived events entered the log by then.
	maxMsgTime time.Time
	started    time.Time // wall clock when the first message was buffered
	lastMsg    kafka.Message
	// seenHW is the newest high watermark a fetched message carried; reporting says the
	// partition was fetched since the last rebalance (trending_archive_consumer_lag).
	seenHW    int64
	reporting bool
}

// commitTimeout bounds one offset commit after a roll.
const commitTimeout = 10 * time.Second

// rowOverhead approximates a buffered Row's memory beyond its message bytes.
const rowOverhead = 96

// New builds an Archiver of cfg, which must Validate; reg may be nil. It contacts nothing
// until Run.
func New(cfg Config, store *objstore.Client, log *slog.Logger, reg prometheus.Registerer) (*Archiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if store == nil {
		panic("BUG: archive.New without a store")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hook, err := faultHook(os.Getenv(FaultEnv))
	if err != nil {
		return nil, err
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "archive", log.With("component", "archive"), reg
	health, err := eventlog.NewHealth(hc)
	if err != nil {
		return nil, err
	}
	a := &Archiver{
		cfg: cfg, store: store, log: log.With("component", "archive"), m: newMetrics(reg),
		lay: layout{root: cfg.Root}, parts: map[int32]*partBuf{}, progress: map[int32]*Progress{},
		beforeCommit: hook, kafka: health, kafkaUp: true,
	}
	if hook != nil {
		a.log.Warn("test-only fault injection on: the process kills itself between a roll's upload and its commit", "env", FaultEnv, "value", os.Getenv(FaultEnv))
	}
	return a, nil
}

// Run consumes until ctx ends, then stops gracefully: it uploads every buffer, commits, and
// returns nil. Uploads during the stop get Config.StopTimeout; whatever is not uploaded by
// then is not committed and will be fetched again by the next run.
//
// While the brokers are away (any eventlog.Retryable failure) it keeps its buffers and
// progress, still rolls what is due to S3, asks again with a bounded backoff, and resumes
// from the group's committed offsets when they answer; it returns an error wrapping
// eventlog.ErrUnrecoverable only for what a retry cannot fix (an authorization or
// credential failure, a topic that stays unknown).
func (a *Archiver) Run(ctx context.Context) error {
	// Work (uploads, commits) runs on its own context so that a stop signal does not abort a
	// roll half-way; it ends StopTimeout after ctx does.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	go func() {
		select {
		case <-ctx.Done():
		case <-work.Done():
			return
		}
		t := time.NewTimer(a.cfg.StopTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancelWork()
		case <-work.Done():
		}
	}()

	if err := a.store.EnsureBucket(ctx); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	r := a.cfg.Kafka.Reader(kafka.ReaderConfig{
		GroupID:        a.cfg.ConsumerGroup,
		Topic:          a.cfg.Topic,
		StartOffset:    kafka.FirstOffset,
		MaxWait:        a.cfg.MaxWait,
		CommitInterval: 0, // synchronous: CommitMessages returns once Kafka has the offset
		// kafka-go's own queue is the only buffering beyond ours: keep it small so that a
		// stalled archiver holds little more than MaxBufferBytes.
		QueueCapacity: 100,
		MaxBytes:      4 << 20,
		// As the speed workers': a crashed archiver's partitions move to another within about
		// 10 s, not kafka-go's default 30 s session.
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			// kafka-go retries these itself (fetch timeouts, reconnects); lag_messages and
			// stalled show when it matters.
			a.log.Debug("kafka: " + fmt.Sprintf(msg, args...))
		}),
	})
	defer r.Close()
	a.log.Info("archiving", "topic", a.cfg.Topic, "group", a.cfg.ConsumerGroup, "bucket", a.store.Bucket(), "root", a.cfg.Root,
		"roll_bytes", a.cfg.RollBytes, "roll_age", a.cfg.RollAge)

	// The reader retries on its own and reports failures as it goes; the pause only keeps a
	// burst of them from spinning the loop. At most a second, so rolls by age stay on time.
	pause := eventlog.Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	for {
		wait := a.untilDue(time.Now())
		fctx, cancel := context.WithTimeout(ctx, wait)
		m, err := r.FetchMessage(fctx)
		cancel()
		switch {
		case err == nil:
			if !a.kafkaUp {
				a.kafka.OK()
				a.kafkaUp = true
				pause.Reset()
			}
			a.add(m)
		case ctx.Err() != nil:
			return a.stop(work, r)
		case errors.Is(err, context.DeadlineExceeded):
			// Nothing arrived in time: a roll may be due by age.
		default:
			// Before issue 28 any such error ended the process ("a part failed") after
			// about 10 s of an unreachable broker.
			if ferr := a.kafka.Failed("fetch from "+a.cfg.Topic, err); ferr != nil {
				return fmt.Errorf("archive: %w", ferr)
			}
			a.kafkaUp = false
			pause.Wait(ctx)
		}
		if err := a.rollDue(work, r, time.Now()); err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return fmt.Errorf("archive: stopped with uploads unfinished (not committed, they will be fetched again): %w", err)
			}
			return err
		}
	}
}

// untilDue returns how long the loop may wait for a message before a roll by age is due.
func (a *Archiver) untilDue(now time.Time) time.Duration {
	wait := a.cfg.RollAge
	if wait > time.Second {
		wait = time.Second // also the pace of idle progress refreshes
	}
	for _, pb := range a.parts {
		if pb.n > 0 {
			wait = min(wait, pb.started.Add(a.cfg.RollAge).Sub(now))
		}
	}
	return max(wait, time.Millisecond)
}

// add buffers one message.
func (a *Archiver) add(m kafka.Message) {
	p := int32(m.Partition)
	pb := a.parts[p]
	if pb == nil {
		pb = &partBuf{}
		a.parts[p] = pb
	}
	if pb.n > 0 && m.Offset <= pb.last {
		// Kafka went back (a rebalance handed the partition back at its committed offset).
		// Start the buffer again so it stays one contiguous run of offsets.
		a.log.Info("partition rewound; refetching its buffer", "partition", p, "offset", m.Offset, "buffered_from", pb.first)
		a.m.discarded.Inc()
		a.drop(pb)
	}
	size := int64(len(m.Value)+len(m.Key)) + rowOverhead
	if pb.n == 0 {
		pb.first = m.Offset
		pb.started = time.Now()
		pb.maxMsgTime = time.Time{}
	}
	pb.n++
	pb.last = m.Offset
	pb.bytes += size
	pb.lastMsg = kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	msgTime := m.Time
	if msgTime.IsZero() {
		msgTime = time.Now()
	}
	if msgTime.After(pb.maxMsgTime) {
		pb.maxMsgTime = msgTime
	}
	a.buffered += size
	a.m.bufferBytes.Set(float64(a.buffered))
	a.m.bufferEvents.Inc()
	a.m.lag.WithLabelValues(strconv.Itoa(int(p))).Set(float64(max(m.HighWaterMark-m.Offset-1, 0)))
	pb.seenHW = max(pb.seenHW, m.HighWaterMark)
	pb.reporting = true
	a.m.consumerLag.WithLabelValues(strconv.Itoa(int(p))).Set(float64(max(pb.seenHW-m.Offset-1, 0)))

	e, err := event.Decode(m.Value)
	if err != nil {
		var de *event.DecodeError
		rec := QuarantineRecord{Partition: p, Offset: m.Offset, Reason: string(event.ReasonOf(err)), Detail: err.Error(),
			IngestTS: m.Time.UTC(), Key: m.Key, Value: m.Value}
		if errors.As(err, &de) {
			rec.Field, rec.Detail = de.Field, de.Detail
		}
		if rec.Reason == "" {
			rec.Reason = "undecodable"
		}
		pb.bad = append(pb.bad, rec)
		return
	}
	if mf := a.cfg.MaxFuture; mf >= 0 {
		if ahead := event.Ahead(e.TS, m.Time, time.Now()); ahead > mf {
			pb.bad = append(pb.bad, QuarantineRecord{Partition: p, Offset: m.Offset, Reason: string(event.ReasonFutureTS), Field: event.FieldTS,
				Detail: fmt.Sprintf("event time %s is %s ahead of the clock, over the %s allowed", e.TS.UTC().Format(time.RFC3339Nano),
					ahead.Round(time.Millisecond), mf),
				IngestTS: m.Time.UTC(), Key: m.Key, Value: m.Value})
			return
		}
	}
	ms := e.UnixMilli()
	row := Row{ItemID: e.ItemID, Count: e.Count, TS: ms, Region: e.Region,
		Partition: p, Offset: m.Offset, IngestTS: m.Time.UnixMilli(), UserID: e.UserID}
	if e.HasAccountAge {
		row.AccountAgeDays = &e.AccountAgeDays
	}
	pb.rows = append(pb.rows, row)
}

func (a *Archiver) drop(pb *partBuf) {
	a.buffered -= pb.bytes
	a.m.bufferBytes.Set(float64(a.buffered))
	a.m.bufferEvents.Sub(float64(pb.n))
	pb.rows, pb.bad = nil, nil
	pb.n, pb.bytes = 0, 0
}

// rollDue rolls every partition whose buffer is due by size or age, then the largest ones
// while the total is over budget, then refreshes the progress of idle caught-up partitions.
func (a *Archiver) rollDue(ctx context.Context, r *kafka.Reader, now time.Time) error {
	for _, p := range a.partitions() {
		pb := a.parts[p]
		why := ""
		switch {
		case pb.n == 0:
			continue
		case pb.bytes >= a.cfg.RollBytes:
			why = whySize
		case now.Sub(pb.started) >= a.cfg.RollAge:
			why = whyAge
		default:
			continue
		}
		if err := a.roll(ctx, r, p, why); err != nil {
			return err
		}
	}
	for a.buffered > a.cfg.MaxBufferBytes {
		var big int32 = -1
		for p, pb := range a.parts {
			if pb.n > 0 && (big < 0 || pb.bytes > a.parts[big].bytes) {
				big = p
			}
		}
		if big < 0 {
			panic("BUG: buffered bytes over budget with every partition buffer empty")
		}
		if err := a.roll(ctx, r, big, whyMemory); err != nil {
			return err
		}
	}
	if !now.Before(a.nextRefresh) {
		a.nextRefresh = now.Add(a.cfg.refreshEvery())
		if r != nil && r.Stats().Rebalances > 0 {
			a.forgetOwners()
		}
		if err := a.refresh(ctx); err != nil {
			// Not worth stalling for: it only delays Complete. The next refresh tries again.
			// While the brokers are away the outage was logged once (eventlog.Health).
			a.m.refreshFailures.Inc()
			if a.kafka.Up() {
				a.log.Warn("refresh partition progress", "err", err)
			}
		}
	}
	return nil
}

// refresh asks Kafka for every partition of the topic, records their count in the topic
// manifest (so the batch knows how many partitions must have archived past an hour, and a
// partition without a marker holds it open), and marks each partition with nothing left to
// archive as caught up: its marker's NextOffset is at the partition's high watermark and
// no roll has moved it for RollAge, or for ReplayQuiet when its producer writes the past (a
// replay pausing between two batches on a loaded machine is quiet for more than a short
// RollAge, and its caught-up time would close hours it has not reached). A partition that
// never held a message gets its first marker here. Markers are written conditionally
// (create if absent, replace if unchanged since read), so a refresh never overwrites a roll
// of whichever archiver owns the partition, and every archiver of the group may run it.
func (a *Archiver) refresh(ctx context.Context) error {
	// at is taken before the offsets are read: every message produced before it is below
	// the high watermark read after it.
	at := time.Now().UTC()
	offs, err := a.topicOffsets(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.kafka.Failed("read the offsets of "+a.cfg.Topic, err) // a lasting failure shows in the fetch too
			a.kafkaUp = false                                       // the next fetched message says it is back
		}
		return err
	}
	if a.manifest == nil || a.manifest.Partitions != len(offs) {
		m := TopicManifest{Topic: a.cfg.Topic, Partitions: len(offs), Updated: at}
		if err := a.putManifest(ctx, m); err != nil {
			return err
		}
		a.manifest = &m
	}
	var errs []error
	for _, o := range offs {
		p := int32(o.Partition)
		if pb := a.parts[p]; pb != nil && pb.reporting {
			pb.seenHW = max(pb.seenHW, o.Last)
			a.m.consumerLag.WithLabelValues(strconv.Itoa(int(p))).Set(float64(max(pb.seenHW-pb.last-1, 0)))
		}
		if pb := a.parts[p]; pb != nil && pb.n > 0 {
			continue // buffered, so not caught up
		}
		if err := a.markCaughtUp(ctx, p, o, at); err != nil {
			errs = append(errs, fmt.Errorf("partition %d: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// forgetOwners stops reporting the consumer lag of every partition after a consumer-group
// rebalance (the reader does not say which partitions it holds now): each is reported
// again from its next fetched message, so a partition another archiver took over does
// not show a lag that only grows.
func (a *Archiver) forgetOwners() {
	for p, pb := range a.parts {
		if pb.reporting {
			pb.reporting = false
			a.m.consumerLag.DeleteLabelValues(strconv.Itoa(int(p)))
		}
	}
}

func (a *Archiver) topicOffsets(ctx context.Context) ([]eventlog.Offsets, error) {
	if a.offsets != nil {
		return a.offsets(ctx)
	}
	return a.cfg.Kafka.TopicOffsets(ctx, a.cfg.Topic)
}

// markCaughtUp sets partition p's CaughtUpAt to at when everything it held at at is
// archived (see refresh).
func (a *Archiver) markCaughtUp(ctx context.Context, p int32, o eventlog.Offsets, at time.Time) error {
	key := a.lay.progressKey(p)
	b, ver, err := a.store.GetVersion(ctx, key)
	var next Progress
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		if o.First < o.Last {
			return nil // it holds messages nobody archived yet: its archiver's first roll writes the marker
		}
		next = Progress{Partition: p, NextOffset: o.Last, CaughtUpAt: at, Updated: at}
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(b, &next); err != nil {
			return nil // loadProgress starts a corrupt marker again at the next roll
		}
		if next.NextOffset < o.Last || at.Sub(next.Updated) < a.quietFor(next) || !next.CaughtUpAt.Before(at) {
			return nil
		}
		next.CaughtUpAt, next.Updated = at, at
	}
	body, err := json.Marshal(next)
	if err != nil {
		panic("BUG: encoding progress: " + err.Error())
	}
	if ver == "" {
		_, err = a.store.PutIfAbsent(ctx, key, body)
	} else {
		_, err = a.store.PutIfMatch(ctx, key, body, ver)
	}
	if errors.Is(err, objstore.ErrExists) || errors.Is(err, objstore.ErrChanged) {
		return nil // a roll or another archiver's refresh got there first; the next refresh looks again
	}
	if err != nil {
		return err
	}
	a.m.objects.WithLabelValues(kindProgress).Inc()
	a.m.bytes.Add(float64(len(body)))
	if cached := a.progress[p]; cached != nil {
		*cached = next
	}
	return nil
}

// quietFor is how long partition progress p must have gone without a roll before it counts
// as caught up: RollAge, or ReplayQuiet when that is longer and p's producer writes the past
// (Config.ReplayQuiet).
func (a *Archiver) quietFor(p Progress) time.Duration {
	q := a.cfg.RollAge
	if rq := a.cfg.ReplayQuiet; rq > q && time.Duration(p.LagMS)*time.Millisecond > rq {
		q = rq
	}
	return q
}

func (a *Archiver) putManifest(ctx context.Context, m TopicManifest) error {
	body, err := json.Marshal(m)
	if err != nil {
		panic("BUG: encoding the topic manifest: " + err.Error())
	}
	return a.retry(ctx, "upload "+a.lay.manifestKey(), func(ctx context.Context) error {
		_, err := a.store.Put(ctx, a.lay.manifestKey(), body)
		return err
	})
}

// partitions returns the buffered partitions in order, so rolls and logs are deterministic.
func (a *Archiver) partitions() []int32 {
	ps := make([]int32, 0, len(a.parts))
	for p := range a.parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// stop rolls every buffer and commits: the graceful end of Run.
func (a *Archiver) stop(ctx context.Context, r *kafka.Reader) error {
	a.log.Info("stopping: uploading buffers", "bytes", a.buffered)
	for _, p := range a.partitions() {
		if a.parts[p].n == 0 {
			continue
		}
		if err := a.roll(ctx, r, p, whyStop); err != nil {
			return fmt.Errorf("archive: stop: %w (not committed; fetched again on restart)", err)
		}
	}
	a.log.Info("stopped")
	return nil
}

// roll uploads one partition's buffer (one Parquet object per event-time hour, the
// quarantine object, the progress marker) and only then commits its last offset. Uploads
// are retried until they succeed or ctx ends; the loop does not fetch meanwhile, which is
// the backpressure that keeps memory bounded while S3 is away.
func (a *Archiver) roll(ctx context.Context, r *kafka.Reader, p int32, why string) error {
	pb := a.parts[p]
	log := a.log.With("partition", p, "first_offset", pb.first, "last_offset", pb.last)

	prog, err := a.loadProgress(ctx, p)
	if err != nil {
		return err
	}
	objs, lowTS := buildObjects(a.lay, p, pb.first, pb.last, pb.rows, pb.bad, EncodeOptions{RowGroupRows: a.cfg.RowGroupRows})
	// Late data: an hour whose end this partition's progress had already passed may have
	// been computed exactly by the batch without these events. A marker per such hour (after
	// its object, before the progress and the commit, so a crash repeats both) tells the
	// batch to recompute it (Reader.Dirty).
	passed := prog.passed()
	for _, o := range objs {
		if o.kind == kindParquet && !o.hour.Add(time.Hour).After(passed) {
			body, _ := json.Marshal(DirtyMark{Partition: p, FirstOffset: pb.first, LastOffset: pb.last, Hour: o.hour, Progress: passed})
			objs = append(objs, object{key: a.lay.dirtyKey(o.hour, p, pb.first, pb.last), kind: kindDirty, body: body})
		}
	}
	for _, o := range objs {
		err := a.retry(ctx, "upload "+o.key, func(ctx context.Context) error {
			_, err := a.store.Put(ctx, o.key, o.body)
			return err
		})
		if err != nil {
			return err
		}
		a.m.objects.WithLabelValues(o.kind).Inc()
		a.m.bytes.Add(float64(len(o.body)))
	}

	next := *prog
	now := time.Now().UTC()
	next.NextOffset = max(next.NextOffset, pb.last+1)
	if wm := rollWatermark(lowTS, pb.maxMsgTime, now); wm.After(next.Watermark) {
		next.Watermark = wm
	}
	if len(pb.rows) > 0 {
		next.LagMS = rollLag(pb.rows)
	}
	// CaughtUpAt is not set here: a roll that reached the log's end says nothing about event
	// time when producers replay or buffer the past (a backfill would close hours it has not
	// reached yet). Only the idle path in tick sets it, once nothing new came for RollAge, or
	// for ReplayQuiet when LagMS says the producer writes the past.
	next.Updated = now
	if err := a.putProgress(ctx, next); err != nil {
		return err
	}

	if a.beforeCommit != nil {
		if err := a.beforeCommit(p); err != nil {
			return err
		}
	}
	// Bounded: while the group has no generation (the brokers are away) kafka-go holds a
	// commit until the next one starts. A commit left queued then is harmless: its offset
	// is archived.
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	err = r.CommitMessages(cctx, pb.lastMsg)
	cancel()
	if err != nil && ctx.Err() == nil {
		// The objects are safe in S3; an uncommitted offset only means these messages are
		// archived again after a restart, and readers dedup them. Keep going: the next
		// roll's commit covers this one.
		a.m.commitFailures.Inc()
		if ferr := a.kafka.Failed("commit the offset of partition "+strconv.Itoa(int(p)), err); ferr != nil {
			return fmt.Errorf("archive: %w", ferr)
		}
		a.kafkaUp = false
		log.Debug("commit after upload failed; will be covered by the next commit", "err", err)
	}
	a.m.rolls.WithLabelValues(why).Inc()
	a.m.events.Add(float64(len(pb.rows)))
	for _, rec := range pb.bad {
		a.m.quarantined.WithLabelValues(rec.Reason).Inc()
	}
	log.Debug("rolled", "why", why, "events", len(pb.rows), "quarantined", len(pb.bad), "objects", len(objs))
	a.drop(pb)
	return nil
}

// loadProgress returns the partition's marker as stored now, with every field moved
// forward to what this run last wrote. It reads the marker at every roll, not once a run:
// another archiver of the group may have marked the partition caught up meanwhile (every
// archiver's refresh marks every partition with nothing left to archive), and the late-data
// rule of roll must judge by that newest progress, or an hour the batch closed on it would
// get no DirtyMark.
func (a *Archiver) loadProgress(ctx context.Context, p int32) (*Progress, error) {
	prog := &Progress{Partition: p}
	err := a.retry(ctx, "read progress", func(ctx context.Context) error {
		*prog = Progress{Partition: p}
		b, err := a.store.Get(ctx, a.lay.progressKey(p))
		if errors.Is(err, objstore.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, prog); err != nil {
			// A corrupt marker only delays Complete; start it again rather than stall.
			a.log.Warn("progress marker unreadable; starting it again", "partition", p, "err", err)
			*prog = Progress{Partition: p}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c := a.progress[p]; c != nil {
		prog.NextOffset = max(prog.NextOffset, c.NextOffset)
		if c.Watermark.After(prog.Watermark) {
			prog.Watermark = c.Watermark
		}
		if c.CaughtUpAt.After(prog.CaughtUpAt) {
			prog.CaughtUpAt = c.CaughtUpAt
		}
		if c.Updated.After(prog.Updated) {
			prog.Updated, prog.LagMS = c.Updated, c.LagMS
		}
	}
	a.progress[p] = prog
	return prog, nil
}

func (a *Archiver) putProgress(ctx context.Context, next Progress) error {
	body, err := json.Marshal(next)
	if err != nil {
		panic("BUG: encoding progress: " + err.Error())
	}
	key := a.lay.progressKey(next.Partition)
	if err := a.retry(ctx, "upload "+key, func(ctx context.Context) error {
		_, err := a.store.Put(ctx, key, body)
		return err
	}); err != nil {
		return err
	}
	a.m.objects.WithLabelValues(kindProgress).Inc()
	a.m.bytes.Add(float64(len(body)))
	a.progress[next.Partition] = &next
	return nil
}

// retry runs op until it succeeds or ctx ends, backing off exponentially with jitter
// between RetryMin and RetryMax. S3 errors are all retried: a permanent one (a missing
// bucket, a refused credential) is logged at error level and needs an operator, and
// giving up would only mean fetching the same messages again.
func (a *Archiver) retry(ctx context.Context, what string, op func(context.Context) error) error {
	backoff := a.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			if attempt > 1 {
				a.m.stalled.Set(0)
				a.log.Info("S3 reachable again; resuming", "what", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
		a.m.uploadFailures.Inc()
		a.m.stalled.Set(1)
		lvl := slog.LevelWarn
		if !objstore.IsRetryable(err) {
			lvl = slog.LevelError
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		a.log.Log(ctx, lvl, "S3 request failed; not fetching or committing until it succeeds", "what", what,
			"attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		case <-t.C:
		}
		a.m.uploadRetries.Inc()
		backoff = min(backoff*2, a.cfg.RetryMax)
	}
}

// object is one upload of a roll.
type object struct {
	key, kind string
	hour      time.Time // the event-time hour of a Parquet object
	body      []byte
}

// WatermarkQuantile is the share of a roll's events whose event time may lie above the
// watermark the roll moves its partition's progress to (rollWatermark): a low quantile,
// not the maximum, so that a few events dated ahead (within MaxFuture) cannot close hours
// that most of the partition has not reached.
const WatermarkQuantile = 0.1

// rollWatermark is the event time a roll's partition has been archived up to: the roll's
// low quantile of event time (lowTS, in Unix ms; 0 when the roll had no valid event),
// capped by when its newest message entered the log and by now. The cap makes the
// progress follow the offsets archived rather than any event's claim: whatever an event
// says, nothing produced after maxMsgTime is in the roll.
func rollWatermark(lowTS int64, maxMsgTime, now time.Time) time.Time {
	if lowTS == 0 {
		return time.Time{}
	}
	wm := time.UnixMilli(lowTS).UTC()
	if !maxMsgTime.IsZero() && maxMsgTime.Before(wm) {
		wm = maxMsgTime.UTC()
	}
	if now.Before(wm) {
		wm = now.UTC()
	}
	return wm
}

// rollLag is how far behind the log a roll's producer wrote: the median over its rows of
// the Kafka timestamp minus the event time, in milliseconds (Progress.LagMS). The median, so
// that a few late events of a live stream, or a few dated ahead, do not decide it.
func rollLag(rows []Row) int64 {
	lags := make([]int64, len(rows))
	for i, r := range rows {
		lags[i] = r.IngestTS - r.TS
	}
	slices.Sort(lags)
	return lags[len(lags)/2]
}

// buildObjects encodes one roll of partition p, offsets first..last: one Parquet object per
// event-time hour its rows touch, in hour order, then the quarantine object when some
// messages were invalid. rows are sorted in place. lowTS is the WatermarkQuantile of the
// rows' event times (Unix ms; 0 for no rows), read off the sorted hours.
func buildObjects(lay layout, p int32, first, last int64, rows []Row, bad []QuarantineRecord, opt EncodeOptions) (objs []object, lowTS int64) {
	byHour := map[time.Time][]Row{}
	for _, row := range rows {
		h := hourOf(row.TS)
		byHour[h] = append(byHour[h], row)
	}
	hours := make([]time.Time, 0, len(byHour))
	for h := range byHour {
		hours = append(hours, h)
	}
	slices.SortFunc(hours, time.Time.Compare)
	k := int(float64(len(rows)) * WatermarkQuantile) // index of the quantile in event-time order
	for _, h := range hours {
		hr := byHour[h]
		body, err := encodeFile(hr, p, first, last, opt) // sorts hr by event time
		if err != nil {
			panic("BUG: encoding archived rows as Parquet: " + err.Error())
		}
		if k >= 0 && k < len(hr) {
			lowTS = hr[k].TS
		}
		k -= len(hr)
		objs = append(objs, object{key: lay.objectKey(h, p, first, last), kind: kindParquet, hour: h, body: body})
	}
	if len(bad) > 0 {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, rec := range bad {
			if err := enc.Encode(rec); err != nil {
				panic("BUG: encoding a quarantine record: " + err.Error())
			}
		}
		objs = append(objs, object{key: lay.quarantineKey(bad[0].IngestTS, p, first, last), kind: kindQuarantine, body: buf.Bytes()})
	}
	return objs, lowTS
}
