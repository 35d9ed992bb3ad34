// Package worker runs the speed core (speed/window) against Kafka: `trending speed`.
//
// A kafka-go consumer group on topic views hands each worker a set of partitions. For each
// one the worker loads the newest valid checkpoint from S3 (state and offset in one object),
// seeks to its offset and replays, so the state is exact again: nothing lost, nothing counted
// twice. Kafka's committed offsets are only advisory; the checkpoint is the truth.
//
// Per partition, one goroutine owns the window state (no locks on the hot path):
//
//	fetch -> decode -> Add (or DLQ with the reason: invalid, or dated over MaxFuture ahead) ->
//	every publish tick: top m*K per window
//	to trending.partials -> every checkpoint tick, on revocation and on graceful stop: flush
//	the DLQ, snapshot + offset to S3, then commit the offset to Kafka.
//
// With Config.TrendingTopics set, each partition also counts trending topics (speed/topics,
// docs/topics.md): every event is a mention of the topic item_id; the topics lists are
// refreshed and published every publish tick as live lists topics/<region>/<score>, and
// checkpointed with the window state (topics.go).
//
// In detail (DESIGN.md's file map has the line): `trending speed`: the consumer group, one
// goroutine per partition owning its state (it reads the partition with
// `eventlog.PartitionReader` and counts 512 messages per hold of the partition's lock),
// DLQ, partials, checkpoints, restore and replay; events dated more than `--max-future`
// ahead go to the DLQ as `future_ts` so one bad clock cannot jump the watermark;
// `salted.go`: a message with the `trending-salt` header tracks its item (its count then
// published in full, `Partial.Salted`), the tracked items checkpointed in the state bundle
// (version 2, format (docs/format/checkpoint.md)); every partial carries its partition in
// a header (`eventlog.SourceBalancer`: partials partition p mod G for a two-level merge) ;
// `groups.go`: the lists per group value (`Config.Groups`), one `window.Partition` per
// region beside the partition's, its watermark moved to the partition's before each of its
// events and at each publish, published under `model.Key{Window, Group}` (a salted event
// is tracked in its region's state too); every value seen up to a cap
// (`trending_speed_group_events_dropped_total`, `groups_full` on the partials once a value
// was refused); `dlqonce.go`: the DLQ once per source offset (the new owner's read of what
// the DLQ holds, the generation fence before a flush); `bundle.go`: the checkpoint state
// bundle (window, topics, tracked items, and from version 3 the group states with their
// pieces and tracked items; one counted under other groups is refused)
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"trending/internal/topicstore"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/internal/setting"
	"trending/model"
	"trending/model/event"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/speed/checkpoint"
	"trending/speed/topics"
	"trending/speed/viewcap"
	"trending/speed/window"
)

// ErrKilled, given as the cancel cause of Run's context, makes the worker stop like a crash:
// no final publish, checkpoint or commit; in-memory state is simply dropped. Failure tests use
// it; production never does.
var ErrKilled = errors.New("worker killed")

// DefaultMaxFuture is DefaultConfig's MaxFuture (event.DefaultMaxFuture, shared with the
// archive): far more than any clock skew between producers, far less than the hour window an
// early event would empty.
const DefaultMaxFuture = event.DefaultMaxFuture

// ReasonFutureTS is the DLQ reason (header and metric label) of an event dated more than
// Config.MaxFuture ahead of the clock; the archive quarantines the same events under it.
const ReasonFutureTS = string(event.ReasonFutureTS)

// Config configures a Worker. Start from DefaultConfig, which holds every default: a zero
// field means zero (see each field), and New refuses an empty topic or group name or a zero
// count or interval that cannot work by the field's name. Nil collaborators have no-op
// meanings: a nil Log discards, a nil TrendingTopics, Blocklist or Base is off, a nil Review
// is a new queue.
type Config struct {
	// Kafka is the client every reader, consumer group and writer of the worker uses
	// (brokers, TLS, SASL). Required.
	Kafka *eventlog.Client
	// Topic is the input (default "views"), DLQTopic where invalid events go (default
	// "views.dlq"), PartialsTopic where top lists go (default "trending.partials"). None
	// may be empty.
	Topic, DLQTopic, PartialsTopic string
	// ConsumerGroup is the consumer group (default "trending-speed"); not empty.
	ConsumerGroup string
	// Partitions is used when the input topic must be created, at least 1 (default 8).
	Partitions int
	// PartialsPartitions is used when the partials topic must be created: G, the group
	// mergers of a two-level merge (docs/scale-out.md), at least 1 (default 1: one merger).
	PartialsPartitions int
	// Window configures every partition's state. Default window.DefaultConfig().
	Window window.Config
	// PublishEvery: how often each partition publishes its top lists, positive (default 1s:
	// the live lists include the open minutes, so they move with every event; a publish
	// costs about the events since the previous one, see window.Partition.LiveAll).
	PublishEvery time.Duration
	// ClosedMinutesOnly publishes the lists of closed minutes only (window.Partition.Top),
	// as the worker did before its lists included the open minutes: an event then shows
	// once its minute has closed (its end plus the allowed lateness), up to a minute and a
	// half later, for a publish that costs a scan of each window. Off by default.
	ClosedMinutesOnly bool
	// CheckpointEvery: how often each partition checkpoints, positive (default 1m).
	CheckpointEvery time.Duration
	// KeepCheckpoints per partition, at least 1 (default 5; the store keeps at least 2).
	KeepCheckpoints int
	// CheckpointPrefix in the bucket (default "checkpoints"); not empty.
	CheckpointPrefix string
	// IdleAdvance: when a partition has received nothing for this long, move its watermark
	// with the wall clock so its lists and calendar windows keep moving. 0 (default) never
	// does: lists then move only with event time, and replays are exactly repeatable.
	// Idleness is judged at publish ticks, from the first tick that found the partition's
	// offset unchanged (no clock read per event), so it may start up to one PublishEvery
	// later than IdleAdvance after the last message, never earlier.
	IdleAdvance time.Duration
	// MaxFuture: an event dated more than this ahead of the clock is not counted; it goes to
	// the DLQ with reason "future_ts", like an invalid event. One event dated a year ahead
	// (still inside the decoder's 2000-2100) would otherwise jump its partition's watermark and
	// make every later event too late. The clock is the message's Kafka timestamp (when it
	// entered the log), or the worker's wall clock when that is earlier or the timestamp is
	// missing: the Kafka timestamp makes a replay decide as the first run did, however much
	// later it runs; the wall clock caps a producer whose own clock runs ahead. Default 10m
	// (DefaultMaxFuture); 0 turns the guard off; negative is refused.
	MaxFuture time.Duration
	// Cap is the per-account cap (docs/moderation.md#per-account-caps): with Cap.Views > 0 an
	// event's account (its user_id) adds at most Cap.Views views to an item per UTC hour of
	// event time, in the lists of all items and in each region's, as the batch's
	// sum(least(c, N)); events without an account are not capped. Each partition keeps a
	// table of Cap.Slots slots (16 bytes each, sized by `trending plan --cap-pairs`),
	// checkpointed with its state; an event that finds no free slot, or is older than the
	// newest hour minus Cap.KeepHours, is counted uncapped
	// (trending_speed_cap_uncapped_events_total). Default: off (Views 0), 1,048,576 slots,
	// 2 hours kept.
	Cap viewcap.Config
	// TrendingTopics turns on trending topics (docs/topics.md; not Topic, the Kafka topic):
	// one topics.State per partition, counting every event as a mention of the topic
	// item_id. Default nil: off. A checkpoint taken
	// with other topics settings (regions, sketch shapes) restores the window state and
	// starts the topics state empty.
	TrendingTopics *topics.Config
	// Blocklist is the banned terms every partition's topics state drops, shared by the
	// process; Run reloads it every minute. Default none.
	Blocklist *topicrules.Blocklist
	// Review is the topics review queue every partition holds into and decides against, one
	// per process (serve it with serving/api.TopicsReviewRoute). Default: a new queue, see
	// Worker.Review.
	Review   *topicrules.Review
	Objects  *objstore.Client
	Log      *slog.Logger
	Registry prometheus.Registerer

	// Base reads the batch layer's exact all-time base (model.BaseWindow), usually a serving
	// store's Get. With Window.SinceDays positive, each partition moves its time boundary to
	// the base's and publishes its exact counts since it, with those of the base's items it
	// holds (model.SinceWindow), for the merger's all-time hybrid. nil (default): no base is
	// read, no such partial is published and no counts since a boundary are kept (New sets
	// Window.SinceDays to 0: there is no base to count since).
	Base func(ctx context.Context) (model.List, error)
	// BaseRefresh is how often Base is read again (default 30s); 0 reads it at every publish
	// tick. Negative is refused.
	BaseRefresh time.Duration

	// Groups are the group values that get lists of their own (model/windowset.Groups: the
	// event's region): each partition keeps one more window state per value it sees events
	// of (groups.go) and publishes its lists under model.Key{Window, Group}. Default: none.
	// The checkpoint carries the group states; one counted under other groups is refused
	// (the partition replays from an earlier one or the start of the log), so turning group
	// lists on or changing the values costs a replay, and turning them off does not.
	Groups windowset.Groups
	// GroupSketchWidth is the width of the group states' sketches (their sketch windows'
	// memory: a group counts a share of the traffic, so a narrower sketch keeps about the
	// same error bound relative to it). 0 (the default) is Window.Sketch.Width; else a power
	// of two, as that width.
	GroupSketchWidth int
}

// groupWindow is every group state's window configuration: the partition's windows, the
// group sketch width, and no counts since the all-time boundary (the exact all-time hybrid is
// of the list of all items only).
func (c Config) groupWindow() window.Config {
	g := c.Window
	g.SinceDays = 0
	if c.GroupSketchWidth > 0 {
		g.Sketch.Width = c.GroupSketchWidth
	}
	return g
}

// DefaultConfig returns the documented defaults, without the collaborators (Kafka,
// Objects) New requires. It is the one place the defaults live.
func DefaultConfig() Config {
	return Config{
		Topic:              eventlog.TopicViews,
		DLQTopic:           eventlog.TopicDLQ,
		PartialsTopic:      eventlog.TopicPartials,
		ConsumerGroup:      "trending-speed",
		Partitions:         8,
		PartialsPartitions: 1,
		Window:             window.DefaultConfig(),
		Cap:                viewcap.Config{Slots: 1 << 20, KeepHours: 2},
		PublishEvery:       time.Second,
		CheckpointEvery:    time.Minute,
		KeepCheckpoints:    5,
		CheckpointPrefix:   "checkpoints",
		MaxFuture:          DefaultMaxFuture,
		BaseRefresh:        30 * time.Second,
	}
}

// nest names every setting error in err (a nested config's Validate) as a field of parent
// ("Window.K"); an err without setting errors is wrapped with parent's name.
func nest(parent string, err error) error {
	es := setting.Errors(err)
	if len(es) == 0 {
		return fmt.Errorf("%s: %w", parent, err)
	}
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = setting.Invalid(parent+"."+e.Field, "%s", e.Problem)
	}
	return errors.Join(out...)
}

// Validate reports every setting that cannot work, each an error wrapping setting.ErrConfig
// that names its field ("PublishEvery", "Window.K", "TrendingTopics.Width").
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.Kafka == nil {
		errs = append(errs, setting.Invalid("Kafka", "no Kafka brokers"))
	}
	if c.Objects == nil {
		errs = append(errs, setting.Invalid("Objects", "no object store for checkpoints"))
	}
	for _, f := range []struct{ name, v, def string }{
		{"Topic", c.Topic, d.Topic}, {"DLQTopic", c.DLQTopic, d.DLQTopic}, {"PartialsTopic", c.PartialsTopic, d.PartialsTopic},
		{"ConsumerGroup", c.ConsumerGroup, d.ConsumerGroup}, {"CheckpointPrefix", c.CheckpointPrefix, d.CheckpointPrefix},
	} {
		if f.v == "" {
			errs = append(errs, setting.Invalid(f.name, "must not be empty (default %q)", f.def))
		}
	}
	if c.Partitions < 1 {
		errs = append(errs, setting.Invalid("Partitions", "%d: must be positive (default %v)", c.Partitions, d.Partitions))
	}
	if c.PartialsPartitions < 1 {
		errs = append(errs, setting.Invalid("PartialsPartitions", "%d: must be positive (default %v)", c.PartialsPartitions, d.PartialsPartitions))
	}
	if c.PublishEvery <= 0 {
		errs = append(errs, setting.Invalid("PublishEvery", "%s: must be positive (default %v)", c.PublishEvery, d.PublishEvery))
	}
	if c.CheckpointEvery <= 0 {
		errs = append(errs, setting.Invalid("CheckpointEvery", "%s: must be positive (default %v)", c.CheckpointEvery, d.CheckpointEvery))
	}
	if c.KeepCheckpoints < 1 {
		errs = append(errs, setting.Invalid("KeepCheckpoints", "%d: must be positive (default %v)", c.KeepCheckpoints, d.KeepCheckpoints))
	}
	if c.MaxFuture < 0 {
		errs = append(errs, setting.Invalid("MaxFuture", "%s: must not be negative (0: no limit; default %v)", c.MaxFuture, d.MaxFuture))
	}
	if c.Cap.Views > 0 {
		if _, err := viewcap.New(c.Cap); err != nil {
			errs = append(errs, setting.Invalid("Cap", "%v", err))
		}
	}
	if c.BaseRefresh < 0 {
		errs = append(errs, setting.Invalid("BaseRefresh", "%s: must not be negative (0: every publish tick; default %v)", c.BaseRefresh, d.BaseRefresh))
	}
	if c.TrendingTopics != nil {
		if err := c.TrendingTopics.Validate(); err != nil {
			errs = append(errs, nest("TrendingTopics", err))
		}
	}
	if err := c.Window.Validate(); err != nil {
		errs = append(errs, nest("Window", err))
	}
	if err := c.Groups.Validate(); err != nil {
		errs = append(errs, setting.Invalid("Groups", "%v", err))
	}
	if c.GroupSketchWidth < 0 {
		errs = append(errs, setting.Invalid("GroupSketchWidth", "%d: must not be negative (0: Window.Sketch.Width)", c.GroupSketchWidth))
	} else if c.Groups.On() && c.GroupSketchWidth > 0 {
		if err := c.groupWindow().Validate(); err != nil {
			for _, e := range setting.Errors(err) {
				if e.Field == "Sketch.Width" {
					errs = append(errs, setting.Invalid("GroupSketchWidth", "%s", e.Problem))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Worker is one member of the speed consumer group.
type Worker struct {
	cfg   Config
	ckpts *checkpoint.Keeper
	m     *metrics
	base  baseCache
	hw    highWatermarks // for trending_speed_consumer_lag
	// hours stores the partitions' hourly topic sketches (topicshours.go); nil when topics
	// are off.
	hours     hourStore
	hourRetry time.Duration // hourRetry, or a test's
	// kafka is the worker's view of the brokers, shared by its partitions: an outage is
	// logged once and shown as trending_kafka_up{role="speed"}; the partitions keep their
	// state and retry.
	kafka *eventlog.Health
	// fatal holds the first unrecoverable Kafka error of a partition (ErrUnrecoverable),
	// which ends Run with it; stopFatal wakes Run's loop.
	fatalOnce sync.Once
	fatal     error
	stopFatal chan struct{}
}

// giveUp records a partition's unrecoverable error and makes Run return it.
func (w *Worker) giveUp(err error) {
	w.fatalOnce.Do(func() {
		w.fatal = err
		close(w.stopFatal)
	})
}

// New builds a Worker, or returns the settings that cannot work (Validate).
func New(cfg Config) (*Worker, error) {
	if cfg.Base == nil {
		cfg.Window.SinceDays = 0 // no base to count since
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	if cfg.TrendingTopics != nil && cfg.Review == nil {
		cfg.Review = topicrules.NewReview(cfg.TrendingTopics.ReviewMax)
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "speed", cfg.Log, cfg.Registry
	health, err := eventlog.NewHealth(hc)
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, ckpts: checkpoint.NewKeeper(cfg.Objects, cfg.CheckpointPrefix, cfg.KeepCheckpoints, cfg.Log), m: m,
		kafka: health, stopFatal: make(chan struct{}), hourRetry: hourRetry}
	if cfg.TrendingTopics != nil && cfg.Objects != nil {
		w.hours = topicstore.NewHours(cfg.Objects, "")
	}
	return w, nil
}

// Review returns the topics review queue shared by the worker's partitions (nil when topics
// are off): mount it with serving/api.TopicsReviewRoute.
func (w *Worker) Review() *topicrules.Review { return w.cfg.Review }

// Run consumes until ctx ends, then stops in order: stop fetching, publish, checkpoint,
// commit. With context.Cause(ctx) == ErrKilled it stops like a crash instead.
func (w *Worker) Run(ctx context.Context) error {
	c := w.cfg
	if _, err := c.Kafka.EnsureTopics(ctx,
		eventlog.Spec{Name: c.Topic, Partitions: c.Partitions},
		eventlog.Spec{Name: c.DLQTopic, Partitions: 1},
		eventlog.Spec{Name: c.PartialsTopic, Partitions: c.PartialsPartitions}); err != nil {
		return fmt.Errorf("speed: %w", err)
	}
	if err := c.Objects.EnsureBucket(ctx); err != nil {
		return fmt.Errorf("speed: %w", err)
	}
	out := c.Kafka.NewTopicsWriter(c.PartialsTopic, c.DLQTopic)
	out.Balancer = &eventlog.SourceBalancer{}
	// Every partition publishes every window's top m x K about every second, mostly the same
	// items with new counts: zstd takes the JSON to a fraction (BENCHMARKS.md).
	out.Compression = kafka.Zstd
	defer out.Close()
	if c.TrendingTopics != nil && c.Blocklist != nil {
		// The reloader is the worker's: Run waits for it before returning.
		bctx, stopReload := context.WithCancel(ctx)
		reloaded := make(chan struct{})
		go func() {
			defer close(reloaded)
			c.Blocklist.Run(bctx, topicrules.DefaultBlocklistInterval, func(reloaded bool, err error) {
				switch {
				case err != nil:
					c.Log.Warn("blocklist reload failed; keeping the previous terms", "err", err)
				case reloaded:
					c.Log.Info("blocklist reloaded", "terms", c.Blocklist.Len())
				}
			})
		}()
		defer func() { stopReload(); <-reloaded }()
	}

	cg, err := c.Kafka.ConsumerGroup(kafka.ConsumerGroupConfig{
		ID: c.ConsumerGroup, Topics: []string{c.Topic},
		StartOffset: kafka.FirstOffset, HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 30 * time.Second, JoinGroupBackoff: 500 * time.Millisecond,
	})
	if err != nil {
		return fmt.Errorf("speed: join group %s: %w", c.ConsumerGroup, err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { cg.Close() })
	defer stop()
	stopOnFatal := make(chan struct{})
	defer close(stopOnFatal)
	go func() {
		select {
		case <-w.stopFatal:
			cg.Close()
		case <-stopOnFatal:
		}
	}()
	for {
		gen, err := cg.Next(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				wg.Wait()
				if w.fatal != nil {
					return fmt.Errorf("speed: %w", w.fatal)
				}
				return nil
			}
			// The group rejoins by itself once the brokers answer (kafka-go backs off
			// between attempts); the outage is logged once.
			if ferr := w.kafka.Failed("join group "+c.ConsumerGroup, err); ferr != nil {
				cg.Close()
				wg.Wait()
				return fmt.Errorf("speed: %w", ferr)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			continue
		}
		w.kafka.OK()
		assigned := gen.Assignments[c.Topic]
		c.Log.Info("partitions assigned", "generation", gen.ID, "partitions", len(assigned))
		w.m.assigned.Set(float64(len(assigned)))
		for _, a := range assigned {
			p := a.ID
			wg.Add(1)
			gen.Start(func(gctx context.Context) {
				defer wg.Done()
				if err := w.runPartition(ctx, gctx, gen, out, p); err != nil {
					c.Log.Error("partition stopped", "partition", p, "err", err)
					if errors.Is(err, eventlog.ErrUnrecoverable) {
						w.giveUp(err)
					}
				}
			})
		}
	}
}

// fetchChunk is how many messages the fetch loop counts under one hold of the partition's
// lock: about half a millisecond of work, so a publish or checkpoint waits no longer than
// that, while the lock and the fetch call are paid once per 512 events, not per event.
const fetchChunk = 512

// partition is one assigned partition's state, owned by one goroutine.
type partition struct {
	w      *Worker
	id     int
	state  *window.Partition
	topics *topics.State  // nil when topics are off
	groups *groupStates   // nil when group lists are off
	cap    *viewcap.Table // nil when caps are off
	capKey []byte         // the region's cap key (region, 0, item), reused
	next   int64          // first offset not yet in state
	seenHW int64          // the newest high watermark a fetched message carried
	dlq    []kafka.Message
	// dlqDone holds the offsets to be replayed whose DLQ message the DLQ already has
	// (dlqonce.go): not written again. nil once none is left.
	dlqDone map[int64]bool
	// fenceAt is the offset of the newest checkpoint (restored or saved), which a DLQ flush
	// commits first as its fence; -1 before any.
	fenceAt int64
	out     *eventlog.Writer
	gen     *kafka.Generation
	dec     event.Decoder
	clock   time.Time // the last wall-clock reading of the future guard (see future)
	lblP    string
	served  map[string]servingName
}

type servingName struct {
	window string
	live   bool
}

// served maps a window to the serving layer's key: a calendar window to its span's calendar
// lists ("hour", "day", "month" with a start), a sliding or all-time window to the live list
// of its name ("hour", "day", "month", "all").
func served(wc window.WindowConfig) servingName {
	if wc.Kind == windowset.Calendar {
		return servingName{window: string(wc.Span)}
	}
	return servingName{window: wc.Name, live: true}
}

func (w *Worker) runPartition(runCtx, gctx context.Context, gen *kafka.Generation, out *eventlog.Writer, id int) error {
	c := w.cfg
	rs, err := w.restore(gctx, id)
	if err != nil {
		return err
	}
	p := &partition{w: w, id: id, state: rs.state, topics: rs.topics, groups: rs.groups, cap: rs.cap, next: rs.next, out: out, gen: gen, lblP: strconv.Itoa(id), served: map[string]servingName{},
		fenceAt: -1}
	if rs.next >= 0 {
		p.fenceAt = rs.next
	}
	if p.dlqDone, err = w.dlqWrittenRetrying(gctx, id, rs.next, rs.at); err != nil {
		return err
	}
	if len(p.dlqDone) > 0 {
		c.Log.Info("the DLQ already holds messages of offsets to replay; not writing them again", "partition", id, "messages", len(p.dlqDone))
	}
	for _, wc := range p.state.Config().Windows {
		p.served[wc.Name] = served(wc)
	}
	rc := eventlog.DefaultPartitionReaderConfig()
	rc.Topic, rc.Partition, rc.Log, rc.Health = c.Topic, id, c.Log, w.kafka
	r, err := c.Kafka.PartitionReader(rc, p.next)
	if err != nil {
		return err
	}
	defer r.Close()
	// The fetch loop owns the state between fetches; the ticker goroutine takes the same lock
	// to publish and snapshot. Reading whole fetch responses on this goroutine (no reader
	// goroutine, no channel hop per message) into a reused slice, and counting each slice of
	// them under one lock, keeps the per-event overhead to the decoding of the record itself.
	var mu sync.Mutex
	tickCtx, stopTicks := context.WithCancel(gctx)
	ticksDone := make(chan struct{})
	idle := idleClock{next: p.next, at: time.Now()}
	var hours hourSync
	go func() {
		defer close(ticksDone)
		pub := time.NewTicker(c.PublishEvery)
		defer pub.Stop()
		ck := time.NewTicker(c.CheckpointEvery)
		defer ck.Stop()
		for {
			select {
			case <-tickCtx.Done():
				return
			case <-pub.C:
				w.base.refresh(tickCtx, c, time.Now()) // outside the lock: it may read a store
				w.hw.refresh(tickCtx, w.topicOffsets, time.Now())
				p.syncHours(tickCtx, &mu, &hours, time.Now()) // outside the lock: object-store I/O
				hw, haveHW := w.hw.get(id)
				mu.Lock()
				if now := time.Now(); idle.idle(p.next, now, c.IdleAdvance) {
					p.state.AdvanceTo(now.Add(-c.IdleAdvance))
				}
				err := p.publish(tickCtx)
				lag := consumerLag(p.next, p.seenHW, hw, haveHW)
				mu.Unlock()
				w.m.lag.WithLabelValues(p.lblP).Set(float64(lag))
				if err != nil && tickCtx.Err() == nil {
					w.warn("publish failed; will retry", "partition", id, "err", err)
				}
			case <-ck.C:
				if err := p.checkpoint(tickCtx, &mu); err != nil && tickCtx.Err() == nil {
					w.warn("checkpoint failed; will retry", "partition", id, "err", err)
				}
			}
		}
	}()
	var loopErr error
	msgs := make([]kafka.Message, 0, fetchChunk)
fetch:
	for {
		msgs, err = r.Fetch(gctx, msgs[:0])
		if len(msgs) > 0 {
			mu.Lock()
			for i := range msgs {
				if herr := p.handle(gctx, msgs[i]); herr != nil {
					loopErr = herr
					break
				}
			}
			mu.Unlock()
			clear(msgs) // let the collector have the messages' bytes before the next fetch fills the slice
			if loopErr != nil {
				break fetch
			}
		}
		if err != nil {
			if gctx.Err() == nil {
				loopErr = fmt.Errorf("fetch partition %d: %w", id, err)
			}
			break
		}
	}
	stopTicks()
	<-ticksDone
	// Another worker reports the partition from now on.
	defer w.m.lag.DeleteLabelValues(p.lblP)
	defer w.m.groupLists.DeleteLabelValues(p.lblP)
	defer w.m.topicsBaseline.DeletePartialMatch(prometheus.Labels{"partition": p.lblP})
	defer w.m.ckptTime.DeleteLabelValues(p.lblP)
	if loopErr != nil || errors.Is(context.Cause(runCtx), ErrKilled) {
		return loopErr // an error, or a crash: drop everything, the checkpoint has the truth
	}
	// Revocation or graceful stop: whatever was fetched is in state; publish and checkpoint it
	// so the next owner resumes exactly here.
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	perr := p.publish(fctx)
	cerr := p.checkpoint(fctx, &mu)
	if err := errors.Join(perr, cerr); err != nil {
		return fmt.Errorf("final flush of partition %d: %w", id, err)
	}
	c.Log.Info("partition released", "partition", id, "offset", p.next)
	return nil
}

// warn logs a retried failure: at warning level while the brokers answer, at debug level
// during an outage, which Health logged once (every partition's publish fails every second
// meanwhile).
func (w *Worker) warn(msg string, args ...any) {
	lvl := slog.LevelWarn
	if !w.kafka.Up() {
		lvl = slog.LevelDebug
	}
	w.cfg.Log.Log(context.Background(), lvl, msg, args...)
}

// topicOffsets reads the input topic's offsets for the consumer-lag gauge (highWatermarks).
func (w *Worker) topicOffsets(ctx context.Context) ([]eventlog.Offsets, error) {
	return w.cfg.Kafka.TopicOffsets(ctx, w.cfg.Topic)
}

// restored is a partition's state as restore found it.
type restored struct {
	state  *window.Partition
	topics *topics.State  // nil when topics are off
	groups *groupStates   // nil when group lists are off
	cap    *viewcap.Table // nil when caps are off
	next   int64
	at     time.Time // when the checkpoint was taken (zero: none)
}

// restore loads the newest usable checkpoint, or a fresh state from the start of the log.
// The topics state (nil when topics are off) comes from the same checkpoint; one taken
// without topics, or under other topics settings, gives an empty topics state. With group
// lists on, a checkpoint must hold the group states counted under the same groups (else the
// previous one is tried).
func (w *Worker) restore(ctx context.Context, id int) (restored, error) {
	c := w.cfg
	var st *window.Partition
	var topSnap []byte
	var gs *groupStates
	var capT *viewcap.Table
	cp, found, err := w.ckpts.Load(ctx, c.Topic, id, func(cp checkpoint.Checkpoint) error {
		b, err := unbundle(cp.State)
		if err != nil {
			return err
		}
		var tracked []window.TrackedItem
		if b.tracked != nil {
			if tracked, err = decodeTracked(b.tracked); err != nil {
				return err
			}
		}
		pieces := make([]window.Piece, len(cp.Pieces))
		for i, pc := range cp.Pieces {
			pieces[i] = window.Piece{Name: pc.Name, Data: pc.Data}
		}
		winPieces := pieces
		if b.groups != nil {
			if b.groups.winPieces > len(pieces) {
				return fmt.Errorf("%w: the window state lists %d pieces of %d", errBundle, b.groups.winPieces, len(pieces))
			}
			winPieces = pieces[:b.groups.winPieces]
		}
		var g *groupStates
		if c.Groups.On() {
			if g, err = restoreGroups(c.Groups, c.groupWindow(), b.groups, pieces); err != nil {
				return err
			}
		}
		// The caps' table of the same checkpoint: one taken under another cap is refused
		// (the previous checkpoint is tried, or the log replayed), one taken with caps off
		// starts an empty table (events counted before it were not capped).
		t, err := viewcap.New(c.Cap)
		if err != nil {
			return err
		}
		if t != nil && b.caps != nil {
			if err := t.UnmarshalBinary(b.caps); err != nil {
				return err
			}
		}
		s, err := window.RestoreIncremental(c.Window, b.win, winPieces)
		if err != nil {
			return err
		}
		s.SetTracked(tracked)
		st, topSnap, gs, capT = s, b.top, g, t
		return nil
	})
	if err != nil {
		return restored{}, err
	}
	if !found {
		topSnap = nil
	}
	top, err := w.restoreTopics(id, topSnap)
	if err != nil {
		return restored{}, err
	}
	if !found {
		s, err := window.New(c.Window)
		if err != nil {
			return restored{}, err
		}
		if c.Groups.On() {
			gs = newGroupStates(c.Groups, c.groupWindow())
		}
		t, err := viewcap.New(c.Cap)
		if err != nil {
			return restored{}, err
		}
		c.Log.Info("no checkpoint; replaying partition from the start", "partition", id)
		return restored{s, top, gs, t, kafka.FirstOffset, time.Time{}}, nil
	}
	w.m.restores.Inc()
	c.Log.Info("restored checkpoint", "partition", id, "offset", cp.Offset, "age", time.Since(cp.CreatedAt).Round(time.Second))
	return restored{st, top, gs, capT, cp.Offset, cp.CreatedAt}, nil
}

// restoreTopics builds the partition's topics state from its snapshot (nil: none), sharing
// the process's review queue. A snapshot under other settings is dropped with a warning: the
// window state is still good, and the topics lists rebuild from new mentions.
func (w *Worker) restoreTopics(id int, snap []byte) (*topics.State, error) {
	c := w.cfg
	if c.TrendingTopics == nil {
		return nil, nil
	}
	top, err := topics.New(*c.TrendingTopics, c.Blocklist)
	if err != nil {
		return nil, err
	}
	if snap != nil {
		if err := top.Restore(snap); err != nil {
			c.Log.Warn("topics state not restored; counting topics afresh", "partition", id, "err", err)
		} else {
			c.Review.Absorb(top.Review())
		}
	}
	top.ShareReview(c.Review)
	return top, nil
}

func (p *partition) handle(ctx context.Context, m kafka.Message) error {
	p.next = m.Offset + 1
	if m.HighWaterMark > p.seenHW {
		p.seenHW = m.HighWaterMark
	}
	f, err := p.dec.Decode(m.Value)
	if err != nil {
		reason := "malformed"
		var de *event.DecodeError
		if errors.As(err, &de) {
			reason = string(de.Reason)
		}
		return p.toDLQ(ctx, m, reason, err.Error())
	}
	if mf := p.w.cfg.MaxFuture; mf > 0 {
		ts := time.UnixMilli(f.TSMilli)
		if ahead, over := p.future(ts, m.Time, mf, time.Now); over {
			return p.toDLQ(ctx, m, ReasonFutureTS, fmt.Sprintf("event time %s is %s ahead of the clock, over the %s allowed",
				ts.UTC().Format(time.RFC3339Nano), ahead.Round(time.Millisecond), mf))
		}
	}
	count := f.Count
	capped := p.cap != nil && len(f.UserID) > 0
	if capped {
		full, late := p.cap.Full, p.cap.Late
		count = p.cap.Admit(f.UserID, f.ItemID, f.TSMilli, f.Count)
		p.w.m.capped.Add(float64(f.Count - count))
		if p.cap.Full != full {
			p.w.m.capUncapped[viewcap.ReasonFull].Inc()
		} else if p.cap.Late != late {
			p.w.m.capUncapped[viewcap.ReasonLate].Inc()
		}
	}
	// AddBytes interns the item from the message's bytes: no allocation for a known item. An
	// event the cap admits nothing of is not counted (nor does it move the watermark).
	if count > 0 {
		if o := p.state.AddBytes(f.ItemID, count, f.TSMilli); int(o) < len(p.w.m.outcomes) && p.w.m.outcomes[o] != nil {
			p.w.m.outcomes[o].Inc()
		}
	}
	salt := len(m.Headers) > 0 && salted(&m)
	if salt {
		p.state.Track(f.ItemID, f.TSMilli)
		p.w.m.salted.Inc()
	}
	if p.groups != nil && len(f.Region) > 0 {
		// A region's list caps the account within the region, as the batch's rows of each
		// group value do: its own key, (region, 0, item), in the same table.
		n := f.Count
		if capped {
			p.capKey = append(append(append(p.capKey[:0], f.Region...), 0), f.ItemID...)
			n = p.cap.Admit(f.UserID, p.capKey, f.TSMilli, f.Count)
		}
		if n > 0 {
			if why := p.groups.add(p.state, f.Region, f.ItemID, n, f.TSMilli, salt); why != "" {
				p.w.m.groupDropped[why].Inc()
			}
		}
	}
	if p.topics != nil {
		p.topics.Add(mention(f.Event(), p.topics.Config().Weight))
	}
	return nil
}

// future reports whether event time ts is more than mf ahead of the clock, as
// aheadBy(ts, msgTime, now()) > mf, and by how much. aheadBy is the larger of
// ts-msgTime (when msgTime is set) and ts-now, and the clock moves forward: an event within
// mf of msgTime and of an earlier clock reading is within mf of now too, so the clock is
// read only when that does not settle it. Live events are dated about now, so that is about
// once per mf rather than once per event (a clock read is a sizeable share of an event's
// cost). A step back of the wall clock goes unseen until the next reading: it can let
// through an event up to that step further ahead.
func (p *partition) future(ts, msgTime time.Time, mf time.Duration, now func() time.Time) (time.Duration, bool) {
	if (msgTime.IsZero() || ts.Sub(msgTime) <= mf) && !p.clock.IsZero() && ts.Sub(p.clock) <= mf {
		return 0, false
	}
	p.clock = now()
	ahead := aheadBy(ts, msgTime, p.clock)
	return ahead, ahead > mf
}

// idleClock tells, at publish ticks, how long a partition has received nothing, from its
// next offset alone: the fetch loop reads no clock per event.
type idleClock struct {
	next int64     // the partition's next offset at the last tick
	at   time.Time // the first tick that saw next, or the start
}

// idle records the partition's next offset at a tick at now and reports whether nothing
// has arrived for over d (never when d <= 0). It errs late, never early: at is the first
// tick after the last message, not the message's arrival.
func (c *idleClock) idle(next int64, now time.Time, d time.Duration) bool {
	if next != c.next {
		c.next, c.at = next, now
	}
	return d > 0 && now.Sub(c.at) > d
}

// aheadBy is the shared rule of event.Ahead: the speed layer and the archive judge a future
// event alike.
func aheadBy(ts, msgTime, now time.Time) time.Duration { return event.Ahead(ts, msgTime, now) }

// toDLQ queues m for the DLQ with its reason and error in headers; the queue is flushed
// before every checkpoint, so a checkpoint never covers an event the DLQ has not got.
func (p *partition) toDLQ(ctx context.Context, m kafka.Message, reason, errText string) error {
	p.w.m.dlq.WithLabelValues(reason).Inc()
	if p.dlqDone != nil {
		if p.dlqDone[m.Offset] {
			delete(p.dlqDone, m.Offset)
			if len(p.dlqDone) == 0 {
				p.dlqDone = nil
			}
			return nil // an earlier owner wrote it before this replay
		}
	}
	p.dlq = append(p.dlq, kafka.Message{Topic: p.w.cfg.DLQTopic, Key: m.Key, Value: m.Value, Headers: []kafka.Header{
		{Key: "reason", Value: []byte(reason)},
		{Key: "error", Value: []byte(errText)},
		{Key: "source", Value: []byte(fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset))},
	}})
	if len(p.dlq) >= 512 {
		return p.flushDLQWaiting(ctx)
	}
	return nil
}

func (p *partition) flushDLQ(ctx context.Context) error {
	if len(p.dlq) == 0 {
		return nil
	}
	// The fence: a worker whose generation is over (woken from a pause past its session, its
	// partition replayed by another) must not write what the new owner writes too.
	if p.fenceAt >= 0 {
		if err := p.gen.CommitOffsets(map[string]map[int]int64{p.w.cfg.Topic: {p.id: p.fenceAt}}); err != nil {
			return fmt.Errorf("write %d messages to %s: the generation's fence: %w", len(p.dlq), p.w.cfg.DLQTopic, err)
		}
	}
	if err := p.out.WriteMessages(ctx, p.dlq...); err != nil {
		return fmt.Errorf("write %d messages to %s: %w", len(p.dlq), p.w.cfg.DLQTopic, err)
	}
	p.dlq = p.dlq[:0]
	return nil
}

// flushDLQWaiting is flushDLQ for the fetch loop, whose queue is full: it retries a
// retryable failure with a bounded backoff until the write succeeds or ctx ends (the
// partition stops counting meanwhile: backpressure, as the brokers are away anyway), where
// an error would have stopped the partition until the next rebalance.
func (p *partition) flushDLQWaiting(ctx context.Context) error {
	pause := eventlog.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		err := p.flushDLQ(ctx)
		if err == nil || ctx.Err() != nil {
			if err == nil && len(p.dlq) == 0 {
				p.w.kafka.OK()
			}
			return err
		}
		if ferr := p.w.kafka.Failed("write to "+p.w.cfg.DLQTopic, err); ferr != nil {
			return ferr
		}
		if !pause.Wait(ctx) {
			return ctx.Err()
		}
	}
}

// publish sends the partition's top m*K of every window, the final lists of calendar
// windows that closed and the late-drop counts of closed ones that changed, to the partials
// topic: for all items, and for each group value it keeps lists of.
func (p *partition) publish(ctx context.Context) error {
	asOf := p.state.AsOf()
	if asOf.IsZero() {
		return nil // nothing seen yet
	}
	var msgs []kafka.Message
	if err := p.windowPartials(&msgs, p.state, ""); err != nil {
		return err
	}
	if p.topics != nil && p.topics.Minute() >= 0 {
		for _, pt := range topicsPartials(p.topics, p.id, asOf, time.Now()) {
			b, err := pt.Encode()
			if err != nil {
				return err
			}
			msgs = append(msgs, kafka.Message{Topic: p.w.cfg.PartialsTopic, Key: pt.MessageKey(), Value: b})
		}
	}
	if pt, ok := p.sincePartial(); ok {
		b, err := pt.Encode()
		if err != nil {
			return err
		}
		msgs = append(msgs, kafka.Message{Topic: p.w.cfg.PartialsTopic, Key: pt.MessageKey(), Value: b})
	}
	if p.groups != nil {
		p.groups.sync(p.state)
		for _, v := range p.groups.values {
			if err := p.windowPartials(&msgs, p.groups.states[v], v); err != nil {
				return err
			}
		}
		p.w.m.groupLists.WithLabelValues(p.lblP).Set(float64(len(p.groups.values)))
	}
	if err := p.out.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish %d partials: %w", len(msgs), err)
	}
	p.w.m.published.Add(float64(len(msgs)))
	for _, m := range msgs {
		p.w.m.publishedBytes.Add(float64(len(m.Value)))
	}
	p.w.m.watermark.WithLabelValues(p.lblP).Set(float64(p.state.Watermark().Unix()))
	return nil
}

// windowPartials appends the partials of one window state, st: the partition's (group "") or
// one group value's: final lists first, then the late-drop counts that amend them (and
// earlier ones), then every window's current list.
func (p *partition) windowPartials(msgs *[]kafka.Message, st *window.Partition, group string) error {
	full := p.groups != nil && p.groups.closed
	add := func(l window.List) error {
		sn := p.served[l.Window]
		pt := model.Partial{Kind: model.PartialItems, Window: model.Key{Window: sn.window, Group: group}.Name(), Partition: p.id, AsOf: l.AsOf, Version: l.AsOf.UnixMilli(), Exact: l.Exact,
			Total: l.Total, Items: l.Items, Final: l.Final, DroppedLate: l.DroppedLate, LateOnly: l.LateOnly, Salted: saltedCounts(l.Tracked), GroupsFull: full}
		if sn.live {
			pt.WindowStart = l.Start
		} else {
			pt.Start, pt.End = l.Start, l.End
		}
		if l.Bound != nil {
			pt.Bound = &model.Bound{MaxOvercount: l.Bound.MaxOvercount, Probability: l.Bound.Probability}
		}
		if l.Frequent {
			pt.Frequent, pt.MaxError, pt.Cutoff = true, l.MaxError, l.Cutoff
		}
		if l.HalfLife != 0 {
			pt.Kind, pt.HalfLifeSeconds, pt.Scored = model.PartialScored, int64(l.HalfLife/time.Second), l.Scored
			for _, e := range l.TrackedScored {
				pt.SaltedScored = append(pt.SaltedScored, model.SaltedScore{Item: e.Item, Score: e.Score})
			}
		}
		if pt.Version <= 0 {
			return nil
		}
		b, err := pt.Encode()
		if err != nil {
			return err
		}
		*msgs = append(*msgs, p.partialMessage(pt.MessageKey(), b))
		return nil
	}
	for _, l := range append(st.TakeClosed(), st.TakeLate()...) {
		if err := add(l); err != nil {
			return err
		}
	}
	var lives []window.List
	if !p.w.cfg.ClosedMinutesOnly {
		lives = st.LiveAll()
	}
	for i, wc := range st.Config().Windows {
		var l window.List
		if lives != nil {
			l = lives[i]
		} else {
			var err error
			if l, err = st.Top(wc.Name); err != nil {
				return err
			}
		}
		if wc.Kind == windowset.Calendar && l.Start.IsZero() {
			continue // no open period yet
		}
		if err := add(l); err != nil {
			return err
		}
	}
	return nil
}

// partialMessage is a partial on the wire: with the partition's number in the
// eventlog.SourceHeader, so a partials topic of G partitions takes the lists of partition p on
// partition p mod G (eventlog.SourceBalancer: the shard mergers of a two-level merge).
func (p *partition) partialMessage(key, value []byte) kafka.Message {
	return kafka.Message{Topic: p.w.cfg.PartialsTopic, Key: key, Value: value, Headers: []kafka.Header{{Key: eventlog.SourceHeader, Value: []byte(p.lblP)}}}
}

// checkpoint makes the DLQ durable and captures state + offset under mu (a copy of the open
// state: SnapshotIncremental), then encodes the new pieces and saves them with the manifest
// without holding it, then records under mu which pieces are stored and commits the offset
// to Kafka (advisory: monitoring tools read it; recovery reads the checkpoint).
func (p *partition) checkpoint(ctx context.Context, mu *sync.Mutex) error {
	mu.Lock()
	if p.next == kafka.FirstOffset {
		mu.Unlock()
		return nil // nothing consumed yet
	}
	if err := p.flushDLQ(ctx); err != nil {
		mu.Unlock()
		return err
	}
	start := time.Now()
	snap, err := p.state.SnapshotIncremental()
	tracked := encodeTracked(p.state.TrackedItems())
	var top []byte
	if err == nil && p.topics != nil {
		top, err = p.topics.Snapshot()
	}
	var gsnaps []groupSnap
	if err == nil && p.groups != nil {
		gsnaps, err = p.groups.snapshot()
	}
	var capSnap *viewcap.Table
	if err == nil && p.cap != nil {
		capSnap = p.cap.Clone() // encoded below, without the lock
	}
	next := p.next
	if err != nil && snap != nil {
		p.state.Abandon(snap)
	}
	mu.Unlock()
	p.w.m.ckptLocked.Observe(time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("snapshot partition %d: %w", p.id, err)
	}
	abandon := func() {
		mu.Lock()
		p.state.Abandon(snap)
		if p.groups != nil {
			p.groups.abandon(gsnaps)
		}
		mu.Unlock()
	}
	b := bundled{top: top, tracked: tracked}
	var pieces []window.Piece
	b.win, pieces, err = snap.Encode()
	if err == nil && capSnap != nil {
		b.caps, err = capSnap.MarshalBinary()
	}
	if err == nil && p.groups != nil {
		b.groups, pieces, err = p.groups.encode(gsnaps, len(pieces), pieces)
	}
	if err != nil {
		abandon()
		return fmt.Errorf("snapshot partition %d: %w", p.id, err)
	}
	cp := checkpoint.Checkpoint{Topic: p.w.cfg.Topic, Partition: p.id, Offset: next, CreatedAt: time.Now(), State: bundle(b), Pieces: make([]checkpoint.Piece, len(pieces))}
	for i, pc := range pieces {
		cp.Pieces[i] = checkpoint.Piece{Name: pc.Name, Data: pc.Data}
	}
	_, st, err := p.w.ckpts.SaveWithStats(ctx, cp)
	if err != nil {
		p.w.m.ckptFailures.Inc()
		abandon()
		if errors.Is(err, checkpoint.ErrMissingPiece) {
			mu.Lock()
			p.state.ForgetStored() // the next checkpoint writes every piece
			if p.groups != nil {
				p.groups.forgetStored()
			}
			mu.Unlock()
		}
		return err
	}
	mu.Lock()
	p.state.Stored(snap)
	if p.groups != nil {
		p.groups.stored(gsnaps)
	}
	mu.Unlock()
	p.w.m.ckpts.Inc()
	p.w.m.ckptBytes.Set(float64(st.ManifestBytes + st.PieceBytes))
	p.w.m.ckptSeconds.Observe(time.Since(start).Seconds())
	p.w.m.ckptTime.WithLabelValues(p.lblP).Set(float64(time.Now().Unix()))
	mu.Lock()
	p.fenceAt = next
	mu.Unlock()
	if err := p.gen.CommitOffsets(map[string]map[int]int64{p.w.cfg.Topic: {p.id: next}}); err != nil {
		p.w.cfg.Log.Debug("advisory offset commit failed", "partition", p.id, "err", err)
	}
	return nil
}
