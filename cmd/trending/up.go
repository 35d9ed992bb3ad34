package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	neturl "net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"trending/internal/topicstore"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/batch"
	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/loadgen"
	"trending/model/moderation"
	"trending/model/salt"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/serving/api"
	"trending/serving/api/demo"
	"trending/serving/store"
	"trending/speed/merge"
	"trending/speed/topics"
)

func init() { subcommands = append(subcommands, newUpCommand) }

// upFlags are trending up's own settings; the window settings come from addWindowFlags.
type upFlags struct {
	data, storeSpec, titles                string
	tok                                    tokenFlags
	partitions                             int
	publishEvery, checkpointEvery, rollAge time.Duration
	maxFuture                              time.Duration
	capViews                               uint32
	capSlots                               int
	api                                    *apiFlags // the API's, serve's flags
	// the embedded broker's retention
	retainFor   time.Duration
	retainBytes float64
	// the built-in load generator and batch scheduler
	noLoad                          bool
	stream                          streamFlags
	rate, speedup, junk             float64
	backfill, batchEvery, batchLate time.Duration
	salt                            *saltFlags
	salter                          *salt.Salter // built from salt
	// the roles' flag groups up shares with their commands
	staleness time.Duration // the merger's; 0: merge.StalenessFor(publishEvery)
	kf        *kafkaFlags
	wf        *windowFlags
	s3f       *s3Settings
	tf        *topicsFlags
}

func newUpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run the whole pipeline in one process on embedded defaults (what make run runs)",
		Long: `up runs every part of trending in one process, on embedded defaults that need nothing
installed:

  log            an in-process Kafka-protocol broker (kfake), data in DATA/kafka
  object store   an in-process S3 server (gofakes3) over DATA/s3 (Parquet files are plain files)
  speed          speed workers for every partition of 'views', checkpoints to the object store
  merger         per-partition lists -> the serving store (DATA/serving.db)
  archive        every event as Parquet under DATA/s3/buckets/trending/archive/
  serving        the HTTP API and dashboard, and POST /v1/events for producers
  batch          a built-in scheduler that recomputes each closed hour, day and month exactly
                 from the archive (Go-native engine, rollups in DATA/rollups.db) and a nightly run
  load           a Zipf load generator (--no-load turns it off); --backfill with --speedup
                 replays the recent past quickly, so closed windows turn exact within minutes;
                 its items get invented titles and placeholder thumbnails (DATA/items.csv,
                 images at /demo/thumbnail?id=ITEM) unless --titles names a real source; its
                 servers are in the regions eu, us and apac (--server-regions)

Every window has a list per region too (--groups eu,us,apac by default; --groups "" for none):
GET /v1/trending?window=hour&region=eu, and the dashboard's region picker.

The same code paths as production: kafka-go talks to the embedded broker and aws-sdk-go-v2 to
the embedded S3. Point any part at the real thing instead with --kafka, --s3-endpoint and
--store (for example after 'make services-up').

Ctrl-C stops everything in order: the load generator, the API (drained: requests in flight
are answered), the ingest (it refuses new events with 503 and writes every event it answered
202 for to Kafka), the speed workers (a last publish and checkpoint each), the merger (a last
publish) with the review sync, the archiver (a last upload) and the batch scheduler.

What survives a restart: the broker's log and committed offsets (DATA/kafka), every
checkpoint and archived file (DATA/s3), and the served lists (DATA/serving.db). The speed
workers resume from their checkpoints and replay the log, so nothing is lost or counted twice.`,
		Example: `  make run                                   # the same as: trending up
  trending up --listen 127.0.0.1:9000 --data /tmp/trending
  trending up --kafka 127.0.0.1:39092 --s3-endpoint http://127.0.0.1:39000   # the real servers

  # trending topics: eu and us lists by surge, the worldwide one by volume, at /v1/topics;
  # send mentions with region, user_id and account_age_days to POST /v1/events
  trending up --no-load --topics eu,us --blocklist ./banned.txt`,
		Args: cobra.NoArgs,
	}
	f := addUpFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return runUp(cmd, f) }
	return withClickHouseSecurity(cmd)
}

// addUpFlags adds up's flags: the roles' flag groups with up's defaults, and up's own (the
// embedded servers, the load generator, the batch scheduler).
func addUpFlags(fs *pflag.FlagSet) *upFlags {
	f := &upFlags{}
	fs.StringVar(&f.data, "data", "./data", "directory for everything the embedded parts keep")
	f.api = addAPIFlags(fs, "127.0.0.1:8080")
	// The security flags apply to an external --kafka; the embedded broker speaks plain text.
	f.kf = addKafkaFlags(fs, "", "Kafka brokers to use instead of the embedded broker")
	addStoreFlag(fs, &f.storeSpec, "", "serving store: bolt:PATH or clickhouse://host:port/database (default bolt:DATA/serving.db)")
	addTokenFlags(fs, &f.tok)
	addTitlesFlag(fs, &f.titles)
	fs.DurationVar(&f.retainFor, "kafka-retention", 24*time.Hour, "the embedded broker keeps each message this long after it was written (0: for good); the archive keeps every event for good")
	f.retainBytes = 512 << 20
	fs.Var(bytesFlag{&f.retainBytes}, "kafka-retention-bytes", "the embedded broker keeps at most this much of each topic partition, the oldest going first, such as 1GiB (0: no bound); the default bounds the embedded log to about 3 GiB")
	addPartitionsFlag(fs, &f.partitions, 4, "partitions of the input topic when it is created")
	addPublishEveryFlag(fs, &f.publishEvery, time.Second, "how often the speed workers publish their lists (they include the open minute)")
	addCheckpointEveryFlag(fs, &f.checkpointEvery, 30*time.Second)
	fs.DurationVar(&f.rollAge, "archive-roll", 30*time.Second, "how long the archiver buffers a partition before writing a Parquet file")
	fs.DurationVar(&f.batchEvery, "batch-every", 30*time.Second, "how often the built-in batch scheduler looks for closed windows to make exact")
	fs.DurationVar(&f.batchLate, "batch-lateness", 2*time.Minute, "a calendar window is recomputed once its end plus this has passed and the archive is complete")
	fs.BoolVar(&f.noLoad, "no-load", false, "do not run the built-in load generator (send events to POST /v1/events or Kafka yourself)")
	// The load generator's stream and pace: loadgen's flags, with up's defaults.
	addStreamShapeFlags(fs, &f.stream, streamDefaults{items: 10000, servers: 20, late: 0.01, viral: []string{"V_viral@+1m:15%:20m:2m"}, regions: "eu,eu,us,apac"})
	fs.DurationVar(&f.backfill, "backfill", 2*time.Hour, "load generator, first start only (while the log holds no event): replay this much of the recent past --speedup times faster, then run in real time, so closed hours turn exact within minutes (0: start at now)")
	addRateFlags(fs, &f.rate, &f.junk, &f.speedup, 500, 0.0005, 120, "load generator: how much faster than real time the --backfill is replayed")
	addMaxFutureFlag(fs, &f.maxFuture)
	addCapViewsFlag(fs, &f.capViews)
	addCapSlotsFlag(fs, &f.capSlots)
	f.salt = addSaltFlags(fs)
	// 0.66 MB sketches: the month's 32 fit a laptop; a region's lists take 0.16 MB ones, and
	// the demo's regions (the load generator's) get lists.
	f.wf = addWindowFlags(fs, 1<<14, 1<<12, "eu,us,apac")
	f.s3f = addS3Settings(fs, "", "S3 endpoint to use instead of the embedded one (with --s3-access-key, --s3-secret-key)")
	// Topics sketches as wide as the load needs: 15 minutes of it overcount by at most 10% of
	// the floor (32,768 for 500 views a second over 4 partitions; runUp sizes it for the
	// --rate and --partitions given).
	f.tf = addTopicsFlags(fs, true, upTopicsWidth(500, 4))

	addStalenessFlag(fs, &f.staleness, 0, "a partition's list this far behind the newest is stale: reused and marked partial (0: 3 x --publish-every, three missed publishes)")
	return f
}

func runUp(cmd *cobra.Command, flags *upFlags) error {
	f := *flags // runUp adjusts its copy (the backfill, the titles, the salter)
	kf, wf, s3f, tf := f.kf, f.wf, f.s3f, f.tf
	ctx := cmd.Context()
	a := appFrom(ctx)
	if !cmd.Flags().Changed("topics-sketch-width") && f.partitions > 0 {
		tf.sketchWidth = upTopicsWidth(f.rate, f.partitions)
	}
	// Every role's settings are checked before anything is created, so a mistake leaves
	// nothing behind: the speed workers' (windows, topics, --max-future) here, the others'
	// as their roles are built below.
	pre, err := speedConfig(f.speedFlags(), &infra{})
	if err != nil {
		return err
	}
	wc, tcfg, mf := pre.Window, pre.TrendingTopics, pre.MaxFuture
	if _, _, err := mergeConfig(f.mergeFlags(), &infra{fieldFlags: upFieldFlags}); err != nil {
		return err
	}
	if err := kf.check(); err != nil {
		return err
	}
	if err := f.tok.check(f.api.cfg.Addr, true, upOperatorRoutes(tcfg != nil)...); err != nil {
		return err
	}
	if f.retainBytes < 0 {
		return usagef("--kafka-retention-bytes %g: must not be negative (0: no bound)", f.retainBytes)
	}
	// The flags are checked before anything is created, so a mistake leaves nothing behind.
	if _, err := loadConfig(f.loadFlags(), 0, time.Now()); err != nil {
		return err
	}
	if f.speedup <= 0 || f.backfill < 0 {
		return usagef("--speedup must be positive and --backfill not negative")
	}
	// The address first: a busy port (the likeliest failure of a first start) fails before
	// --data is created.
	ln, err := net.Listen("tcp", f.api.cfg.Addr)
	if err != nil {
		return usagef("--listen %s: %v (pick a free address, or stop what listens there)", f.api.cfg.Addr, err)
	}
	defer ln.Close() // the API closes it when it serves; this closes it on an early return
	// Then the data directory's lock: a second up on the same --data fails at once, before it
	// opens the broker's log or the stores.
	unlock, err := lockData(f.data)
	if err != nil {
		return err
	}
	defer unlock()
	in, err := startUpInfra(cmd, f, kf, s3f)
	defer in.close() // after every role has finished its last flush
	if err != nil {
		return err
	}
	kc, names, obj, st := in.kc, in.names, in.obj, in.st
	// The backfill replays the recent past once, into a log that holds no event yet: on a
	// restart it would add a second synthetic past on top of the first. What the log holds
	// decides, not whether --data exists, so a start that failed before producing anything
	// leaves the next one its backfill.
	if f.backfill > 0 && !f.noLoad {
		if n, err := loggedEvents(ctx, kc, names.Views); err != nil {
			return err
		} else if n > 0 {
			a.log.Info("the log already holds events: skipping the backfill", "events", n, "data", f.data)
			f.backfill = 0
		}
	}

	// The roles' shared infra: the speed workers read the all-time base from up's own store.
	roles := &infra{app: a, kc: kc, names: names, obj: obj, st: st, base: st, parts: true, fieldFlags: upFieldFlags}
	speedW, err := newSpeedRole(f.speedFlags(), roles)
	if err != nil {
		return err
	}
	demoThumbs := false
	if f.titles == "" && !f.noLoad {
		// The load generator's catalog gets invented titles and placeholder thumbnails, which
		// the API below serves, so the lists of make run read like a video site's.
		sc, err := f.stream.config(time.Now())
		if err != nil {
			return err
		}
		f.titles, demoThumbs = filepath.Join(f.data, "items.csv"), true
		if err := writeMetadata(f.titles, sc, demo.ThumbnailURL); err != nil {
			return err
		}
	}
	// The one titles source of up's writers: the merger's live lists and the batch's exact
	// ones carry the same titles for the same item.
	if roles.attach, err = openTitles(f.titles, a); err != nil {
		return err
	}
	wst := roles.writerStore()
	ws, err := wf.windows.set() // the one window set every role of up reads
	if err != nil {
		return err
	}
	mcfg, mrc, err := mergeConfig(f.mergeFlags(), roles)
	if err != nil {
		return err
	}
	// The shared moderation list in up's bucket, as a split deployment's: the merger, the
	// batch and the API apply it (docs/moderation.md).
	watch, modRole, err := moderationWatcher(ctx, obj, a)
	if err != nil {
		return err
	}
	mcfg.Removed = watch.Removed
	merger, err := merge.New(mcfg)
	if err != nil {
		return usageOf(err, upFieldFlags)
	}
	watch.OnChange(func(*moderation.Set) { merger.ModerationChanged() })
	archiver, err := newArchiveRole(f.archiveFlags(), roles)
	if err != nil {
		return err
	}
	kw := kc.NewWriter(names.Views)
	defer kw.Close()
	scfg, err := f.api.config(wc.K, ws, tcfg, a)
	if err != nil {
		return err
	}
	scfg.Removed = watch.Removed
	srv, err := api.New(scfg, st, a.log.With("part", "api"))
	if err != nil {
		return err
	}
	if err := srv.Handle(api.ModerationRoute(&objModeration{obj: obj}, f.tok.review, watch.Set)); err != nil {
		return err
	}
	if tcfg != nil {
		// The workers run in this process, so the API serves their one review queue; it is
		// kept in the object store's shared queue (topics/review.json) like a split
		// deployment's, so `trending topics review --s3-endpoint` decides here too.
		review := speedW.Review()
		if err := srv.Handle(api.TopicsReviewRoute(review, f.tok.review, func() error {
			return topicstore.SyncReview(context.WithoutCancel(ctx), obj, topicstore.ReviewKey, review) // also while the API drains
		})); err != nil {
			return err
		}
	}
	if demoThumbs {
		if err := srv.Handle(demo.ThumbnailRoute()); err != nil {
			return err
		}
	}
	bs := f.batchSettings()
	arc := bs.reader(obj)
	eng, err := batch.OpenNative(filepath.Join(f.data, "rollups.db"))
	if err != nil {
		return err
	}
	defer eng.Close()
	bcfg, err := batchConfig(bs)
	if err != nil {
		return err
	}
	bcfg.Removed = watch.Removed
	runner, err := batch.NewRunner(bcfg, eng, arc, wst, a.log.With("part", "batch"))
	if err != nil {
		return usageOf(err, upFieldFlags)
	}
	// The batch from a second terminal: `trending batch status|run|backfill --api URL`.
	ba := &batchAPI{cfg: bcfg, eng: eng, arc: arc, st: st, log: a.log.With("part", "batch"), token: f.tok.review}
	for _, r := range ba.routes() {
		if err := srv.Handle(r); err != nil {
			return err
		}
	}
	load, err := loadConfig(f.loadFlags(), 0, time.Now())
	if err != nil {
		return err
	}

	salter, saltRole, err := f.salt.build(kc, names, a.log, a.registry, "up")
	if err != nil {
		return err
	}
	f.salter = salter
	ingestRole, err := mountIngest(srv, a, kw, f.tok.events(), salter, mf)
	if err != nil {
		return err
	}
	sched := batch.DefaultScheduleConfig()
	sched.Every, sched.Log, sched.Registry = f.batchEvery, a.log.With("part", "batch"), a.registry
	if err := sched.Validate(); err != nil {
		return usageOf(err, upFieldFlags)
	}
	if tcfg != nil {
		// The closed hours of the topics lists are recomputed exactly too, with the same
		// rules and the review queue's holds: the workers' queue, which the review sync keeps
		// merged with the shared one in the bucket (topics/review.json) every publish tick,
		// so a decision made anywhere reaches the exact lists at the next batch pass.
		btc, err := batchTopicsConfig(f.batchTopicsFlags(), speedW.Review().Blocks, upFieldFlags)
		if err != nil {
			return err
		}
		sched.Topics, err = batch.NewTopics(runner, eng, *btc)
		if err != nil {
			return usageOf(err, upFieldFlags)
		}
	}
	// The stages stop in this order (runProcess): producers first, so nothing new enters;
	// the API drains and the ingest flushes what it answered 202 for before the speed
	// workers take their last checkpoint; the merger publishes the workers' last lists; the
	// archiver uploads its buffers; the scheduler stops last.
	var producers stage
	if !f.noLoad {
		lw := newLoadWriter(kc, names.Views)
		defer lw.Close()
		producers = stage{{"loadgen", func(ctx context.Context) error {
			kh, err := loadHealth(a.log.With("part", "loadgen"), a.registry)
			if err != nil {
				return err
			}
			load.Salter, load.Kafka = f.salter, kh
			return runLoad(ctx, a.log.With("part", "loadgen"), a.logOut, lw, load, f.backfill)
		}}}
	}
	mergers := stage{{"merge", func(ctx context.Context) error {
		return merger.Run(ctx, mrc)
	}}}
	if tcfg != nil {
		mergers = append(mergers, reviewSyncRole(obj, speedW.Review(), reviewSyncEvery, a))
	}
	mergers = append(mergers, modRole)
	var salting stage
	if saltRole.run != nil {
		salting = stage{saltRole} // after the ingest's last flush: it shares what was detected last
	}
	stages := []stage{
		producers,
		{{"api", func(ctx context.Context) error { return srv.Serve(ctx, ln) }}},
		{ingestRole},
		salting,
		{{"speed", speedW.Run}},
		mergers,
		{{"archive", archiver.Run}},
		{{"batch scheduler", func(ctx context.Context) error { return runner.Schedule(ctx, sched) }}},
	}

	printUpBanner(cmd.ErrOrStderr(), "http://"+ln.Addr().String(), f, kf, s3f, in, tcfg, ws.Groups)
	err = runProcess(ctx, a.log, stages...)
	a.log.Info("trending up stopped", "err", err)
	return err
}

// upInfra is what up's roles run on: the Kafka client (the embedded broker's unless
// --kafka), the object store (the embedded S3 server's unless --s3-endpoint) and the
// serving store. close releases them in reverse order of opening.
type upInfra struct {
	kc        *eventlog.Client
	names     eventlog.Names
	obj       *objstore.Client
	s3cfg     objstore.Config
	st        store.Store
	storeSpec string
	closers   []func()
}

func (in *upInfra) close() {
	for i := len(in.closers) - 1; i >= 0; i-- {
		in.closers[i]()
	}
}

// startUpInfra starts the embedded broker and S3 server where no external one is named,
// creates the bucket and the topics, and opens the serving store. On an error, what was
// started is in closers: call close either way.
func startUpInfra(cmd *cobra.Command, f upFlags, kf *kafkaFlags, s3f *s3Settings) (*upInfra, error) {
	ctx := cmd.Context()
	in := &upInfra{names: kf.names()}
	var embeddedBroker []string
	if !kf.set() {
		br, err := eventlog.StartEmbedded(filepath.Join(f.data, "kafka"), 0, eventlog.Retain(f.retainFor, int64(f.retainBytes)))
		if err != nil {
			return in, err
		}
		in.closers = append(in.closers, br.Close)
		embeddedBroker = []string{br.Addr}
	}
	kc, err := kf.client(cmd, embeddedBroker...)
	if err != nil {
		return in, err
	}
	in.kc = kc
	in.s3cfg = s3f.config()
	if s3f.endpoint == "" {
		// Infrastructure outlives the components: it is closed after every component has
		// finished its last flush, not when the signal arrives.
		emb, err := objstore.StartEmbedded(context.WithoutCancel(ctx), filepath.Join(f.data, "s3"), "127.0.0.1:0")
		if err != nil {
			return in, err
		}
		in.closers = append(in.closers, func() { emb.Close() })
		in.s3cfg.Endpoint = emb.Endpoint
	} else {
		in.s3cfg.Endpoint = s3f.endpoint
	}
	if in.obj, err = objstore.New(ctx, in.s3cfg); err != nil {
		return in, usageOf(err, upFieldFlags)
	}
	if err := in.obj.EnsureBucket(ctx); err != nil {
		return in, err
	}
	if _, err := kc.EnsureTopics(ctx,
		eventlog.Spec{Name: in.names.Views, Partitions: f.partitions},
		eventlog.Spec{Name: in.names.DLQ, Partitions: 1},
		eventlog.Spec{Name: in.names.Partials, Partitions: 1}); err != nil {
		return in, err
	}
	in.storeSpec = f.storeSpec
	if in.storeSpec == "" {
		in.storeSpec = "bolt:" + filepath.Join(f.data, "serving.db")
	}
	if in.st, err = openStore(in.storeSpec); err != nil {
		return in, err
	}
	in.closers = append(in.closers, func() { in.st.Close() })
	return in, nil
}

// diskLine says what --data holds now and what bounds the embedded broker's share of it.
func diskLine(f upFlags, kf *kafkaFlags) string {
	l := fmt.Sprintf("%s holds %s", f.data, humanBytes(dirSize(f.data)))
	if !kf.set() {
		keep := "for good"
		if f.retainFor > 0 {
			keep = "for " + f.retainFor.String()
		}
		if f.retainBytes > 0 {
			keep += ", at most " + humanBytes(int64(f.retainBytes)) + " a partition"
		}
		l += "; the broker keeps messages " + keep + " (--kafka-retention, --kafka-retention-bytes); the archive keeps every event"
	}
	return l
}

// dirSize is the bytes of the files under dir (what can be read of it).
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// humanBytes writes n as 1.5 GiB, 53.2 MiB or 900 B.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// loggedEvents is how many messages topic has ever received (the sum of its partitions'
// end offsets, which retention does not lower).
func loggedEvents(ctx context.Context, kc *eventlog.Client, topic string) (int64, error) {
	offs, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("read the offsets of %s: %w", topic, err)
	}
	var n int64
	for _, o := range offs {
		n += o.Last
	}
	return n, nil
}

// upOperatorRoutes are up's routes behind --token: the batch from another terminal, and the
// topics review queue with --topics.
func upOperatorRoutes(topics bool) []string {
	r := []string{"POST /v1/batch/run", "POST /v1/moderation"}
	if topics {
		r = append(r, "/v1/topics/review")
	}
	return r
}

// printUpBanner says where everything of up is.
// ingestAuthLine says who may write: with a token, its holders; without one, on a loopback
// address, anyone on this machine (check refuses a reachable address without a token).
func ingestAuthLine(t tokenFlags, review bool) string {
	if open := t.openWrites(true, upOperatorRoutes(review)...); open != "" {
		if t.open {
			return "no token: --open-writes, anyone who reaches the port may write"
		}
		return "no token: writes open to this machine only; set --token before listening beyond loopback"
	}
	return "bearer token required"
}

func printUpBanner(w io.Writer, url string, f upFlags, kf *kafkaFlags, s3f *s3Settings, in *upInfra, tcfg *topics.Config, groups windowset.Groups) {
	fmt.Fprintf(w, `
trending up: the whole pipeline in one process
  dashboard      %s/
  API            %s/v1/trending?window=hour&limit=10
  ingest         POST %s/v1/events   (one event or a JSON array; %s)
  metrics        %s/metrics
  Kafka          %s (%s)
  object store   %s (%s)
  serving store  %s
  disk           %s
  batch          exact recompute of closed windows every %s (rollups in %s);
                 from another terminal: trending batch status --api %s --from today --windows hour
                 and trending batch backfill --api %s --from -1d --to now
  load           %s
  lists per      %s
  topics         %s
Ctrl-C stops everything in order.

`, url, url, url, ingestAuthLine(f.tok, tcfg != nil), url, in.kc.Brokers()[0], embeddedOr(!kf.set(), "embedded, data in "+filepath.Join(f.data, "kafka")), in.s3cfg.Endpoint,
		embeddedOr(s3f.endpoint == "", "embedded, files in "+filepath.Join(f.data, "s3")), in.storeSpec, diskLine(f, kf),
		f.batchEvery, filepath.Join(f.data, "rollups.db"), url, url, loadLine(f), groupsLine(groups, url), topicsLine(tcfg, url))
}

func groupsLine(g windowset.Groups, url string) string {
	if !g.On() {
		return `region: off (--groups eu,us,... turns them on)`
	}
	example := "eu"
	if len(g.Values) > 0 {
		example = g.Values[0]
	}
	return fmt.Sprintf("%s: %s, at %s/v1/trending?window=hour&%s=%s", g.By, strings.TrimPrefix(g.Describe(), g.By+" "), url, g.By, neturl.QueryEscape(example))
}

func topicsLine(cfg *topics.Config, url string) string {
	if cfg == nil {
		return "off (--topics eu,us,... turns them on)"
	}
	return fmt.Sprintf("%s/v1/topics?region=%s (lists: world and %v), review at %s/v1/topics/review",
		url, topicrules.World, cfg.Regions, url)
}

func loadLine(f upFlags) string {
	if f.noLoad {
		return "off (--no-load): POST events to /v1/events"
	}
	l := fmt.Sprintf("%g views/s over %d items (Zipf %g), pre-summed by %d servers", f.rate, f.stream.items, f.stream.zipf, f.stream.servers)
	if f.stream.regions != "" {
		l += " in " + strings.Join(slices.Compact(slices.Sorted(slices.Values(splitList(f.stream.regions)))), ", ")
	}
	if f.backfill > 0 {
		l += fmt.Sprintf("; replaying the last %s at %gx first", f.backfill, f.speedup)
	}
	return l
}

// loadHealth is the load generator's view of the brokers (trending_kafka_up{role=loadgen}):
// with it the generator waits out an outage instead of ending.
func loadHealth(log *slog.Logger, reg prometheus.Registerer) (*eventlog.Health, error) {
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "loadgen", log, reg
	return eventlog.NewHealth(hc)
}

// runLoad runs up's load generator, rc (loadConfig): the backfill at rc's --speedup, then real
// time from where it ended. Each phase has its own seed, so the stream continues rather than
// repeats.
func runLoad(ctx context.Context, log *slog.Logger, out *logWriter, w *eventlog.Writer, rc loadgen.RunConfig, backfill time.Duration) error {
	now := time.Now().UTC().Truncate(time.Second)
	rc.Stream.Seed = uint64(now.Unix())
	if backfill > 0 {
		bc := rc
		bc.Stream.Start, bc.Stream.Duration = now.Add(-backfill), backfill
		log.Info("replaying the backfill", "from", bc.Stream.Start, "speedup", bc.Speedup)
		// On a terminal a bar of the backfill's event-time seconds, the other roles' log lines
		// printed above it (logWriter); elsewhere a log line every 10 s with how much is done
		// and how long is left.
		total := backfill.Seconds()
		replayed := func(s loadgen.Stats) {
			done := float64(s.Seconds) / total
			args := []any{"done", fmt.Sprintf("%.0f%%", 100*done), "event_time", s.EventTime.Format(time.RFC3339)}
			if done > 0 && done < 1 {
				args = append(args, "eta", (time.Duration(float64(s.Elapsed)/done) - s.Elapsed).Round(time.Second).String())
			}
			log.Info("replaying the backfill", append(args, "status", s.String())...)
		}
		every := 10 * time.Second
		var m *meter
		if out != nil {
			if m = newMeter(out.w, "s of event time"); m != nil {
				out.attach(m)
				replayed = func(s loadgen.Stats) { m.step(int(s.Seconds), int(total), "replaying the backfill") }
				every = 500 * time.Millisecond
			}
		}
		bc.Progress, bc.ProgressEvery = replayed, every
		_, err := loadgen.Run(ctx, bc, w)
		if m != nil {
			m.finish()
			out.attach(nil)
		}
		if err != nil {
			return fmt.Errorf("loadgen backfill: %w", err)
		}
		if ctx.Err() != nil {
			return nil
		}
		rc.Stream.Seed++
		rc.Stream.Viral = nil
	}
	rc.Stream.Start = time.Now().UTC().Truncate(time.Second)
	rc.Speedup, rc.ProgressEvery = 1, 30*time.Second
	rc.Progress = func(s loadgen.Stats) { log.Info("load", "status", s.String()) }
	if _, err := loadgen.Run(ctx, rc, w); err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	return nil
}

func embeddedOr(embedded bool, what string) string {
	if embedded {
		return what
	}
	return "external"
}

// upTopicsWidth is the topics sketch width of up's load, rate views a second over partitions
// (every view a mention with --topics): 15 minutes overcount by at most 10% of the floor.
func upTopicsWidth(rate float64, partitions int) int {
	return topics.WidthFor(rate/float64(partitions), topics.DefaultWindow, topicrules.DefaultFloor, 0.1)
}

// upFieldFlags are up's names for the settings it sets under other flags than the
// commands it combines.
var upFieldFlags = map[string]string{"AllowedLateness": "--batch-lateness", "Every": "--batch-every", "RollAge": "--archive-roll"}
