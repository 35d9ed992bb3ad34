package main

import (
	"cmp"
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/archive"
	"trending/batch"
	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/internal/titles"
	"trending/loadgen"
	"trending/model"
	"trending/model/topicrules"
	"trending/serving/store"
	"trending/speed/merge"
	"trending/speed/worker"
)

// Each role is built once: a flag group per role (speedFlags, mergeFlags, archiveFlags,
// batchSettings, batchTopicsFlags, loadFlags, apiFlags, saltFlags) and one constructor of its
// configuration from that group and the process's infra, called by the role's own command
// and by `up`. up fills each group from its own flags (upFlags' speed, merge, archive, batch
// and load methods): the differences of up are there, named, and nowhere else.
// TestRolesBuiltOnce builds every role both ways and compares the configurations.

// infra is what the roles of a process share, opened by the command before any role is
// built (the cluster commands from their flags, up from its embedded servers) and closed
// after the last role has stopped.
type infra struct {
	app   *app // the logger and the metrics registry; nil in tests: no logs, no metrics
	kc    *eventlog.Client
	names eventlog.Names
	obj   *objstore.Client
	// st is the serving store the writers (merger, batch) write through, and base the one the
	// speed workers read the batch's all-time base from (nil: none; up: its own store, speed:
	// --base-store).
	st, base store.Store
	attach   *titles.Attacher // the writers' titles (--titles), shared by the merger and the batch
	// parts tags each role's log lines with part=ROLE: up's roles share one log.
	parts bool
	// fieldFlags are this command's names of Config fields whose flag differs from the role's
	// own command (usageOf).
	fieldFlags map[string]string
}

// log is role's logger.
func (in *infra) log(role string) *slog.Logger {
	if in.app == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if in.parts {
		return in.app.log.With("part", role)
	}
	return in.app.log
}

// registry is the process's metrics registry (nil: none).
func (in *infra) registry() prometheus.Registerer {
	if in.app == nil {
		return nil
	}
	return in.app.registry
}

// writerStore is the store the merger and the batch write through: the serving store with
// the items' titles attached.
func (in *infra) writerStore() store.Store { return store.WithTitles(in.st, in.attach) }

// speedFlags are the speed workers' settings (speed; up sets a part of them).
type speedFlags struct {
	consumerGroup                                  string
	partitions, keep, partialsN                    int
	publishEvery, checkpointEvery, idle, maxFuture time.Duration
	capViews                                       uint32 // the per-account cap (--cap-views, --cap-slots)
	capSlots                                       int
	windows                                        *windowFlags
	topics                                         *topicsFlags
}

// newSpeedFlags returns the settings no flag has set yet: the worker's defaults.
func newSpeedFlags() *speedFlags {
	d := worker.DefaultConfig()
	return &speedFlags{partitions: d.Partitions, keep: d.KeepCheckpoints, partialsN: d.PartialsPartitions,
		publishEvery: d.PublishEvery, checkpointEvery: d.CheckpointEvery, idle: d.IdleAdvance, maxFuture: worker.DefaultMaxFuture,
		capViews: d.Cap.Views, capSlots: d.Cap.Slots}
}

// speedConfig is the speed workers' configuration: the one constructor of speed and up.
func speedConfig(f *speedFlags, in *infra) (worker.Config, error) {
	wc, tcfg, blocklist, mf, err := coreSettings(f.windows, f.topics, f.maxFuture)
	if err != nil {
		return worker.Config{}, err
	}
	if f.partitions < 1 {
		return worker.Config{}, usagef("--partitions %d: must be at least 1", f.partitions)
	}
	if f.publishEvery <= 0 || f.checkpointEvery <= 0 {
		return worker.Config{}, usagef("--publish-every and --checkpoint-every must be positive durations such as 1m or 10s")
	}
	c := worker.DefaultConfig()
	c.Kafka, c.Topic, c.DLQTopic, c.PartialsTopic = in.kc, in.names.Views, in.names.DLQ, in.names.Partials
	c.ConsumerGroup, c.Partitions, c.PartialsPartitions = cmp.Or(f.consumerGroup, in.names.SpeedGroup), f.partitions, f.partialsN
	c.Window, c.PublishEvery, c.CheckpointEvery, c.KeepCheckpoints = wc, f.publishEvery, f.checkpointEvery, f.keep
	c.IdleAdvance, c.MaxFuture = f.idle, mf
	c.Cap.Views, c.Cap.Slots = f.capViews, f.capSlots
	c.Objects, c.Log, c.Registry = in.obj, in.log("speed"), in.registry()
	c.TrendingTopics, c.Blocklist = tcfg, blocklist
	if st := in.base; st != nil { // else no base, and the worker keeps no counts since one
		c.Base = func(ctx context.Context) (model.List, error) { return st.Get(ctx, model.Key{Window: model.BaseWindow}) }
	}
	if err := f.windows.applyGroups(&c); err != nil {
		return worker.Config{}, err
	}
	return c, nil
}

// newSpeedRole builds the speed workers of speed and up.
func newSpeedRole(f *speedFlags, in *infra) (*worker.Worker, error) {
	c, err := speedConfig(f, in)
	if err != nil {
		return nil, err
	}
	w, err := worker.New(c)
	if err != nil {
		return nil, usageOf(err, in.fieldFlags)
	}
	return w, nil
}

// mergeFlags are the merger's settings (merge; up sets a part of them).
type mergeFlags struct {
	k, partitions, shard, partialsN int
	staleness, publishEvery         time.Duration
	level, topic, topTopic          string
	windows                         *windowSetFlags
}

// newMergeFlags returns the settings no flag has set yet: the merger's defaults, one level.
func newMergeFlags() *mergeFlags {
	d, rd := merge.DefaultConfig(), merge.DefaultRunConfig()
	return &mergeFlags{k: d.K, partitions: d.Partitions, shard: -1, partialsN: 1, staleness: d.Staleness, publishEvery: rd.PublishEvery, level: "one"}
}

// readTopic is the topic the merger reads: the partials, or the shard lists at the top.
func (f *mergeFlags) readTopic(names eventlog.Names) string {
	if f.level == "top" {
		return cmp.Or(f.topTopic, names.PartialsTop)
	}
	return cmp.Or(f.topic, names.Partials)
}

// mergeConfig is the merger's configuration and that of its Run: the one constructor of
// merge and up. A shard merger's Group is set here, its Emit by the caller (a writer to the
// top topic); the others write to in's serving store.
func mergeConfig(f *mergeFlags, in *infra) (merge.Config, merge.RunConfig, error) {
	var rc merge.RunConfig
	if f.k < 1 || f.k > 1000 {
		return merge.Config{}, rc, usagef("--k %d: must be 1..1000", f.k)
	}
	if f.staleness <= 0 || f.publishEvery <= 0 {
		return merge.Config{}, rc, usagef("--staleness and --publish-every must be positive durations such as 3m or 5s")
	}
	ws, err := f.windows.set()
	if err != nil {
		return merge.Config{}, rc, err
	}
	c := merge.DefaultConfig()
	c.K, c.Partitions, c.Staleness, c.Windows = f.k, f.partitions, f.staleness, ws
	c.Log, c.Registry = in.log("merge"), in.registry()
	if f.level == "shard" {
		c.Shard = merge.DefaultShard(f.shard)
		c.Partitions = 0 // the top merger names the missing partitions
	} else {
		c.Store = in.writerStore()
	}
	rc = c.RunDefaults()
	rc.Kafka, rc.Topic, rc.PublishEvery = in.kc, f.readTopic(in.names), f.publishEvery
	return c, rc, nil
}

// archiveFlags are the archiver's settings (archive; up sets a part of them).
type archiveFlags struct {
	cfg                  archive.Config // the flags' values over archive.DefaultConfig
	partitions           int
	rollBytes, maxBuffer float64
}

// newArchiveFlags returns the settings no flag has set yet: the archiver's defaults.
func newArchiveFlags() *archiveFlags {
	f := &archiveFlags{cfg: archive.DefaultConfig(), partitions: worker.DefaultConfig().Partitions}
	f.cfg.ConsumerGroup = "" // named after --views-topic unless given
	f.rollBytes, f.maxBuffer = float64(f.cfg.RollBytes), float64(f.cfg.MaxBufferBytes)
	return f
}

// archiveConfig is the archiver's configuration: the one constructor of archive and up.
func archiveConfig(f *archiveFlags, in *infra) (archive.Config, error) {
	c := f.cfg
	c.Kafka, c.Topic, c.ConsumerGroup = in.kc, in.names.Views, cmp.Or(c.ConsumerGroup, in.names.ArchiveGroup)
	c.RollBytes, c.MaxBufferBytes = int64(f.rollBytes), int64(f.maxBuffer)
	if f.partitions < 1 {
		return c, usagef("--partitions %d: must be at least 1", f.partitions)
	}
	if _, err := maxFuture(c.MaxFuture); err != nil {
		return c, err
	}
	if err := c.Validate(); err != nil {
		return c, usageOf(err, in.fieldFlags)
	}
	return c, nil
}

// newArchiveRole builds the archiver of archive and up.
func newArchiveRole(f *archiveFlags, in *infra) (*archive.Archiver, error) {
	c, err := archiveConfig(f, in)
	if err != nil {
		return nil, err
	}
	a, err := archive.New(c, in.obj, in.log("archive"), in.registry())
	if err != nil {
		return nil, usageOf(err, in.fieldFlags)
	}
	return a, nil
}

// batchConfig is the batch runner's configuration from its settings: the one constructor of
// every batch subcommand and up's scheduler (the subcommands then add their progress output
// and their mode: force, rebuild, parallel, lookback).
func batchConfig(s *batchSettings) (batch.Config, error) {
	c := batch.DefaultConfig()
	ws, err := s.windows.set()
	if err != nil {
		return c, err
	}
	c.K, c.AllowedLateness, c.BaseFactor, c.Windows, c.CapViews = s.k, s.lateness, s.baseFactor, ws, s.capViews
	return c, nil
}

// batchTopicsConfig is the trending-topics recompute's configuration (nil without --topics):
// the one constructor of batch run, batch nightly and up's scheduler; held keeps the review
// queue's pending and rejected topics off the lists.
func batchTopicsConfig(b *batchTopicsFlags, held func(string) bool, fieldFlags map[string]string) (*batch.TopicsConfig, error) {
	cfg, err := b.tf.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	tc := batch.DefaultTopicsConfig()
	tc.Regions, tc.Scores, tc.Blocklist, tc.ListSize = cfg.Regions, cfg.Scores, b.tf.blocklist, b.listSize
	tc.Surge.Floor, tc.Held = b.floor, held
	if err := tc.Validate(); err != nil {
		return nil, usageOf(err, fieldFlags)
	}
	return &tc, nil
}

// loadFlags are the load generator's settings, loadgen's and up's: its stream's flags,
// --rate, --malformed and --speedup.
type loadFlags struct {
	stream                   streamFlags
	rate, malformed, speedup float64
}

// loadConfig builds the load generator's configuration, loadgen's and up's: its stream (the
// shape flags, --rate, --malformed) of duration event time from now (0: until stopped),
// checked as a whole (viral items that together take more than every view are refused before
// anything starts), paced at --speedup (a negative one is no pacing, as 0). The caller adds
// its salter (saltFlags.build), its view of the brokers (loadHealth), its progress line and
// loadgen's truth.
func loadConfig(f *loadFlags, duration time.Duration, now time.Time) (loadgen.RunConfig, error) {
	sc, err := f.stream.config(now)
	if err != nil {
		return loadgen.RunConfig{}, err
	}
	switch {
	case !(f.rate > 0 && f.rate <= stream.MaxRate):
		return loadgen.RunConfig{}, usagef("--rate %g: use a positive number of views per second up to %d", f.rate, stream.MaxRate)
	case f.malformed < 0 || f.malformed > 1:
		return loadgen.RunConfig{}, usagef("--malformed %g: use a fraction from 0 to 1", f.malformed)
	}
	sc.Rate, sc.Duration, sc.Malformed = f.rate, duration, f.malformed
	if err := sc.Validate(); err != nil {
		return loadgen.RunConfig{}, usagef("%v", strings.TrimPrefix(err.Error(), stream.ErrConfig.Error()+": "))
	}
	rc := loadgen.DefaultRunConfig()
	rc.Stream, rc.Speedup = sc, max(f.speedup, 0)
	return rc, nil
}

// The roles of up, from up's flags: each method fills a role's flag group as the role's own
// command would from the same values. What up does differently is said here, and only here
// (TestRolesBuiltOnce lists the same differences):
//   - up runs every role on one set of flags: --partitions, --k, --max-future and the window
//     and topics flags are each given once and reach every role that takes them;
//   - --publish-every is the speed workers'; the merger writes at merge's default cadence, and
//     its --staleness defaults to three missed publishes of the workers (merge.StalenessFor),
//     which a cluster merger cannot know (merge: merge.DefaultStaleness);
//   - the archiver's --roll-age is --archive-roll, the batch's --lateness is --batch-lateness
//     (upFieldFlags names them in errors);
//   - flags up does not have keep the role's defaults: the speed workers' --consumer-group,
//     --keep-checkpoints, --idle-advance and --partials-partitions, the merger's --level
//     (one), the archiver's sizes and retries, the batch's --base-factor and the topics
//     recompute's --topics-floor and --topics-list-size;
//   - the infra is up's: the embedded broker and S3 server unless --kafka and --s3-endpoint,
//     the serving store the writers write and the speed workers read the all-time base from
//     (speed: --base-store), the Go-native batch engine in DATA/rollups.db, and log lines
//     tagged part=ROLE;
//   - its topics sketch width follows its load (upTopicsWidth) unless --topics-sketch-width;
//   - its load generator has loadgen's stream flags but --late-by, --seed and --start (their
//     defaults stand), runs until stopped, and paces only its --backfill at --speedup, then
//     runs in real time seeded from the clock (runLoad);
//   - the API (apiFlags.config, serve's) serves the workers' own review queue, synced with
//     the bucket's (serve: the bucket's alone, with --token), the batch routes and the demo
//     thumbnails; one salter (saltFlags.build) serves its load generator and its ingest;
//   - the shared moderation list is always on in up (merge and serve: --moderation): its
//     merger, batch and API take their Removed from one watcher of up's bucket, set by the
//     caller as infra (the batch subcommands read the list once).

// speedFlags are up's speed workers' settings.
func (f *upFlags) speedFlags() *speedFlags {
	s := newSpeedFlags()
	s.partitions, s.publishEvery, s.checkpointEvery, s.maxFuture = f.partitions, f.publishEvery, f.checkpointEvery, f.maxFuture
	s.capViews, s.capSlots = f.capViews, f.capSlots
	s.windows, s.topics = f.wf, f.tf
	return s
}

// mergeFlags are up's merger's settings.
func (f *upFlags) mergeFlags() *mergeFlags {
	m := newMergeFlags()
	m.k, m.partitions, m.windows = f.wf.k, f.partitions, f.wf.windows
	m.staleness = cmp.Or(f.staleness, merge.StalenessFor(f.publishEvery))
	return m
}

// archiveFlags are up's archiver's settings.
func (f *upFlags) archiveFlags() *archiveFlags {
	a := newArchiveFlags()
	a.partitions, a.cfg.RollAge, a.cfg.MaxFuture = f.partitions, f.rollAge, f.maxFuture
	return a
}

// batchSettings are up's batch scheduler's settings.
func (f *upFlags) batchSettings() *batchSettings {
	return &batchSettings{k: f.wf.k, lateness: f.batchLate, baseFactor: batch.DefaultConfig().BaseFactor, archiveRoot: archive.DefaultRoot,
		capViews: f.capViews, windows: f.wf.windows}
}

// loadFlags are up's load generator's settings: its stream's shape flags, the rest of the
// stream at loadgen's defaults (--late-by, --seed, --start now; runLoad then seeds it from the
// clock), --rate, --malformed and --speedup.
func (f *upFlags) loadFlags() *loadFlags {
	return &loadFlags{stream: f.stream, rate: f.rate, malformed: f.junk, speedup: f.speedup}
}

// batchTopicsFlags are up's topics recompute's settings: the speed workers' topics flags.
func (f *upFlags) batchTopicsFlags() *batchTopicsFlags {
	return &batchTopicsFlags{tf: f.tf, floor: topicrules.DefaultFloor, listSize: topicrules.DefaultListSize}
}
