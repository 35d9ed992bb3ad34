package main

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/objstore"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/speed/frequent"
	"trending/speed/sketch"
	"trending/speed/topics"
	"trending/speed/window"
	"trending/speed/worker"
)

func init() { subcommands = append(subcommands, newSpeedCommand) }

// windowFlags are the speed core's settings, shared by `speed` and `up`.
type windowFlags struct {
	k, m                     int
	lateness                 time.Duration
	sketchWidth, sketchDepth int
	hourMode, dayMode        string
	monthMode, allMode       string
	sinceDays                int
	groupSketchWidth         int
	frequentCapacity         int
	fs                       *pflag.FlagSet
	// windows is the served window set (--window-set, --window-preset, --windows-file).
	windows *windowSetFlags
}

// addWindowFlags adds the speed core's flags; sketchWidth is the --sketch-width default
// (2^18 for speed, the month sketch of docs/requirements.md#sketches whose bound is 4.86%
// of the K-th count; smaller for the embedded up), groupSketchWidth --group-sketch-width's
// and groups --groups' (addWindowSetFlags).
func addWindowFlags(fs *pflag.FlagSet, sketchWidth, groupSketchWidth int, groups string) *windowFlags {
	f := &windowFlags{fs: fs, windows: addWindowSetFlags(fs, groups)}
	addKFlag(fs, &f.k, "length of each served list (1..1000)")
	fs.IntVar(&f.m, "m", 3, "each partition reports its top m x k, so sketch noise cannot push a leader out")
	addLatenessFlag(fs, &f.lateness, 30*time.Second, "allowed lateness: the watermark trails the newest event time by this much (0: none, a minute closes as soon as a later minute's event arrives)")
	f.sketchDepth = 5
	addSketchShapeFlags(fs, &f.sketchWidth, sketchWidth, "count-min sketch width (power of two); memory per sketch is width x depth x 8 bytes",
		&f.sketchDepth, "count-min sketch depth: the error bound holds with probability 1 - e^-depth", nil, "")
	fs.StringVar(&f.hourMode, "hour-mode", "exact", "counting for the hour windows (the live hour and the calendar hour, when configured): exact, sketch, frequent or auto; given, it overrides the window set's mode")
	fs.StringVar(&f.dayMode, "day-mode", "exact", "counting for the day windows: exact, sketch, frequent or auto; given, it overrides the window set's mode")
	fs.StringVar(&f.monthMode, "month-mode", "sketch", "counting for the month windows: exact, sketch or auto (at 5 billion views a day: 250 GB exact, 11 GB in sketches); given, it overrides the window set's mode")
	fs.StringVar(&f.allMode, "all-mode", "sketch", "counting for the all-time window: sketch, auto (= sketch) or exact (a total per item ever seen: memory grows with the catalog, for small deployments); given, it overrides the window set's mode")
	addGroupSketchWidthFlag(fs, &f.groupSketchWidth, groupSketchWidth)
	fs.IntVar(&f.frequentCapacity, "frequent-capacity", frequent.DefaultCapacity, "counters per summary of a window counted in frequent mode (hour=sliding:1h/1m:frequent) that sets none of its own (frequent/N): every item's views are then known within N/(capacity+1) of the window's N views, and no item with more is missing; `trending plan --frequent-error` sizes it")
	fs.IntVar(&f.sinceDays, "since-days", 7, "UTC days of exact per-item counts since the batch's all-time boundary each partition keeps, for the exact all-time list (0: none; speed needs --base-store too); a boundary older than this makes the all-time list approximate until the next nightly run")
	return f
}

// coreSettings checks the settings `speed` and `up` share: the windows, the topics lists and
// their blocklist, and the future-date guard.
func coreSettings(wf *windowFlags, tf *topicsFlags, future time.Duration) (window.Config, *topics.Config, *topicrules.Blocklist, time.Duration, error) {
	wc, err := wf.config()
	if err != nil {
		return wc, nil, nil, 0, err
	}
	tcfg, err := tf.config()
	if err != nil {
		return wc, nil, nil, 0, err
	}
	blocklist, err := tf.openBlocklist()
	if err != nil {
		return wc, nil, nil, 0, err
	}
	mf, err := maxFuture(future)
	return wc, tcfg, blocklist, mf, err
}

// addMaxFutureFlag adds --max-future, shared by `speed`, `archive`, `serve` and `up`; maxFuture checks
// its value.
func addMaxFutureFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "max-future", worker.DefaultMaxFuture, "an event dated more than this ahead of the clock (its Kafka timestamp, or the wall clock when earlier) is neither counted nor archived as valid: the speed layer sends it to the DLQ and the archive to its quarantine, both with reason future_ts, so it cannot jump a watermark, and serve's POST /v1/events refuses it with 400; give speed, archive and serve the same value (negative: no limit)")
}

// maxFuture returns --max-future as worker.Config.MaxFuture: a negative flag (no limit) is
// the worker's 0. The flag's 0 is refused: it reads as "nothing ahead of the clock".
func maxFuture(d time.Duration) (time.Duration, error) {
	if d == 0 {
		return 0, usagef("--max-future 0 would send every event dated after the clock to the DLQ: use a duration such as 10m, or -1s for no limit")
	}
	return max(d, 0), nil
}

func (f *windowFlags) config() (window.Config, error) {
	c := window.DefaultConfig()
	// --lateness 0 is none, as window.Config's 0; a negative one has always meant none too.
	c.K, c.M, c.AllowedLateness = f.k, f.m, max(f.lateness, 0)
	c.FrequentCapacity = f.frequentCapacity
	sk := sketch.DefaultConfig()
	sk.Width, sk.Depth = f.sketchWidth, f.sketchDepth
	c.Sketch = sk
	ws, err := f.windows.set()
	if err != nil {
		return c, err
	}
	c.Windows = window.FromSet(ws)
	c.SetSinceDays(f.sinceDays)
	modes := map[string]windowset.Mode{}
	for span, m := range map[string]string{"hour": f.hourMode, "day": f.dayMode, "month": f.monthMode, "all": f.allMode} {
		if !windowset.Mode(m).Valid() {
			return c, usagef("--%s-mode %q: use %s", span, m, windowset.ModeNames())
		}
		if f.fs.Changed(span + "-mode") { // else the window set's own mode stands
			modes[span] = windowset.Mode(m)
		}
	}
	c.SetModes(modes)
	if err := c.Validate(); err != nil {
		return c, usageOf(err, nil)
	}
	return c, nil
}

// addGroupSketchWidthFlag adds --group-sketch-width (speed, up, plan).
func addGroupSketchWidthFlag(fs *pflag.FlagSet, p *int, def int) {
	fs.IntVar(p, "group-sketch-width", def, "count-min sketch width of the lists per group value (--groups; a power of two): each group value's sketch windows take this x depth x 8 bytes per sketch in every partition that sees it (0: --sketch-width)")
}

// applyGroups sets the worker's lists per group value: the window set's groups and
// --group-sketch-width.
func (f *windowFlags) applyGroups(c *worker.Config) error {
	ws, err := f.windows.set()
	if err != nil {
		return err
	}
	if f.groupSketchWidth < 0 {
		return usagef("--group-sketch-width %d: use a power of two, or 0 for --sketch-width", f.groupSketchWidth)
	}
	c.Groups, c.GroupSketchWidth = ws.Groups, f.groupSketchWidth
	return nil
}

// s3Settings are the object store flags shared by every command that reads or writes S3.
type s3Settings struct {
	endpoint, bucket, region, accessKey, secretKey string
}

// addS3Settings adds the --s3-* flags; defaultEndpoint is the local MinIO for most commands
// and empty (embedded) for up.
func addS3Settings(fs *pflag.FlagSet, defaultEndpoint, endpointHelp string) *s3Settings {
	s := &s3Settings{}
	fs.StringVar(&s.endpoint, "s3-endpoint", defaultEndpoint, endpointHelp)
	fs.StringVar(&s.bucket, "s3-bucket", "trending", "bucket for checkpoints and the archive (created if missing)")
	fs.StringVar(&s.region, "s3-region", objstore.DefaultConfig().Region, "S3 region")
	fs.StringVar(&s.accessKey, "s3-access-key", "trending", "S3 access key (empty: the AWS default credential chain)")
	fs.StringVar(&s.secretKey, "s3-secret-key", "trending-secret", "S3 secret key")
	return s
}

func (s *s3Settings) config() objstore.Config {
	c := objstore.DefaultConfig()
	c.Endpoint, c.Bucket, c.Region, c.AccessKey, c.SecretKey = s.endpoint, s.bucket, s.region, s.accessKey, s.secretKey
	return c
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newSpeedCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "speed",
		Short: "Run a speed-layer worker: live windows from Kafka, checkpoints to S3, top lists to the merger",
		Long: `speed joins the consumer group on the views topic and, for every partition it is given,
counts events into sliding windows (last hour, day, month) and calendar windows (the open
hour, UTC day, UTC month) by event time. Exact counts where memory allows, count-min sketches
plus candidate heaps where it does not (see 'trending plan').

Every --publish-every it sends each window's top m x k for its partitions to
trending.partials, where 'trending merge' combines them into the served lists. Every
--checkpoint-every, when a partition is revoked, and on a graceful stop, it writes the
partition's state with the offset it includes to S3 as one object; a restarted or new worker
loads it and replays from that offset, so nothing is lost and nothing counted twice.

Each partition's lists go to partials partition p mod G of the G the topic has
(--partials-partitions when it is created): a two-level merge's shard mergers each read one
('trending merge --level shard'). A message with the trending-salt header is one share of a
salted (hot) item: it is counted like any other, and the item's count is then published in
full for the merger to sum (docs/scale-out.md, "Hot keys").

With --groups eu,us,apac each partition also counts every window for each listed region
(the event's region field) in a state of its own, and publishes those lists too: served as
GET /v1/trending?window=hour&region=eu. --groups '*' does so for every region seen, up to
--groups-max per partition. Give merge, serve and batch the same --groups. A checkpoint taken
under other groups is not used: the partition replays its log so the region lists are whole.

Invalid events go to views.dlq with their original bytes and the reason in a header.
Run more workers with the same --consumer-group to spread partitions; stop one with Ctrl-C and its
partitions move, with their checkpoints, to the others.`,
		Example: `  # against the local services (make services-up)
  trending speed --kafka 127.0.0.1:39092 --s3-endpoint http://127.0.0.1:39000

  # small sketches for a laptop, lists every 10 seconds
  trending speed --sketch-width 16384 --publish-every 10s

  # lists per region too (give merge, serve and batch the same --groups)
  trending speed --groups eu,us,apac --group-sketch-width 65536`,
		Args: cobra.NoArgs,
	}
	f := addSpeedCommandFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		kc, err := f.kf.client(cmd)
		if err != nil {
			return err
		}
		obj, err := objstore.New(cmd.Context(), f.s3.config())
		if err != nil {
			return usageOf(err, nil)
		}
		in := &infra{app: a, kc: kc, names: f.kf.names(), obj: obj}
		if f.baseStore != "" {
			if in.base, err = openStore(f.baseStore); err != nil {
				return err
			}
			defer in.base.Close()
		}
		w, err := newSpeedRole(f.speed, in)
		if err != nil {
			return err
		}
		metrics, err := metricsRole(f.metricsAddr, a)
		if err != nil {
			return err
		}
		var review stage // stops after the worker, so its last holds reach the bucket
		if f.speed.topics.regions != "" {
			// The review queue is shared through the bucket: this worker's holds go up and
			// decisions made anywhere come down every publish tick.
			review = stage{reviewSyncRole(obj, w.Review(), reviewSyncEvery, a)}
		}
		a.log.Info("speed worker starting", "kafka", kc.Brokers(), "topic", in.names.Views, "group", cmp.Or(f.speed.consumerGroup, in.names.SpeedGroup), "s3", f.s3.endpoint+"/"+f.s3.bucket)
		if err := runProcess(cmd.Context(), a.log, stage{{"speed", w.Run}}, review, metrics); err != nil {
			return fmt.Errorf("speed: %w", err)
		}
		a.log.Info("speed worker stopped")
		return nil
	}
	return cmd
}

// speedCommandFlags are speed's flags: the workers' (speedFlags) and the infra's.
type speedCommandFlags struct {
	speed                  *speedFlags
	kf                     *kafkaFlags
	s3                     *s3Settings
	metricsAddr, baseStore string
}

// addSpeedCommandFlags adds speed's flags.
func addSpeedCommandFlags(fs *pflag.FlagSet) *speedCommandFlags {
	f := &speedCommandFlags{speed: newSpeedFlags()}
	sf := f.speed
	f.kf = addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	addConsumerGroupFlag(fs, &sf.consumerGroup, "speed")
	addPartitionsFlag(fs, &sf.partitions, 8, "partitions of the input topic when it has to be created")
	addPartialsPartitionsFlag(fs, &sf.partialsN)
	addPublishEveryFlag(fs, &sf.publishEvery, time.Second, "how often each partition publishes its top lists (they include the open minute, so an event shows within about this plus the merger's --publish-every)")
	addCheckpointEveryFlag(fs, &sf.checkpointEvery, time.Minute)
	fs.IntVar(&sf.keep, "keep-checkpoints", sf.keep, "checkpoints kept per partition")
	fs.DurationVar(&sf.idle, "idle-advance", 0, "advance an idle partition's watermark by the wall clock after this long without events (0: never; lists then move only with event time)")
	addMaxFutureFlag(fs, &sf.maxFuture)
	addCapViewsFlag(fs, &sf.capViews)
	addCapSlotsFlag(fs, &sf.capSlots)
	addMetricsAddrFlag(fs, &f.metricsAddr, "127.0.0.1:9464")
	fs.StringVar(&f.baseStore, "base-store", "", "serving store to read the batch's exact all-time base from (clickhouse://HOST:PORT/DB, as the merger's --store; a bolt file only one process can open): each partition then counts exactly since its boundary for the exact all-time list (empty: off)")
	sf.windows = addWindowFlags(fs, 1<<18, 1<<16, "")
	f.s3 = addS3Settings(fs, "http://127.0.0.1:39000", "S3 API URL (MinIO, or empty for AWS S3)")
	sf.topics = addTopicsFlags(fs, true, topics.DefaultWidth)
	return f
}

// addPublishEveryFlag adds --publish-every: the speed workers' publish cadence (speed, up),
// or the merger's write cadence (merge).
func addPublishEveryFlag(fs *pflag.FlagSet, d *time.Duration, def time.Duration, usage string) {
	fs.DurationVar(d, "publish-every", def, usage)
}

// addCheckpointEveryFlag adds --checkpoint-every, the speed workers' checkpoint cadence.
func addCheckpointEveryFlag(fs *pflag.FlagSet, d *time.Duration, def time.Duration) {
	fs.DurationVar(d, "checkpoint-every", def, "how often each partition checkpoints to S3")
}
