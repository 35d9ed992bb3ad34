package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/archive"
	"trending/batch"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/model"
	"trending/model/topics"
	"trending/serving/store"
)

func init() { subcommands = append(subcommands, newBatchCommand) }

// batchSettings are the flags every batch subcommand shares.
type batchSettings struct {
	clickhouse  string
	cluster     string
	rollups     string
	storeSpec   string
	titles      string
	archiveRoot string
	partitions  int
	k           int
	lateness    time.Duration
	s3          *s3Settings
	baseFactor  int
	windows     *windowSetFlags
}

func addBatchSettings(fs *pflag.FlagSet) *batchSettings {
	s := &batchSettings{}
	addClickHouseFlag(fs, &s.clickhouse, "", "exact engine: ClickHouse clickhouse://host:port/database; empty uses the Go-native engine (embedded mode)")
	fs.StringVar(&s.cluster, "clickhouse-cluster", "", "exact engine on the ClickHouse cluster `NAME` that --clickhouse's database was migrated on (migrate --cluster NAME): each shard's rollups are built on its own server; empty: one server")
	fs.StringVar(&s.rollups, "rollups", "./data/rollups.db", "Go-native engine: the rollup file (used when --clickhouse is empty)")
	addStoreFlag(fs, &s.storeSpec, "bolt:./data/serving.db", "serving store the lists go to: bolt:PATH or clickhouse://host:port/database")
	addTitlesFlag(fs, &s.titles)
	addArchiveRootFlag(fs, &s.archiveRoot, archive.DefaultRoot)
	addPartitionsFlag(fs, &s.partitions, 0, "expect at least this many partitions of the topic (default: the count the archiver recorded from Kafka in the archive): a window is complete only when every partition has archived past it")
	addKFlag(fs, &s.k, "length of each published list (1..10000)")
	addLatenessFlag(fs, &s.lateness, 10*time.Minute, "allowed lateness: a window is closed once its end plus this has passed")
	fs.IntVar(&s.baseFactor, "base-factor", 10, "the exact all-time base (through the last closed day, for the speed layer's exact all-time list) lists the top base-factor x k items (1..100)")
	s.s3 = addS3Settings(fs, "http://127.0.0.1:39000", "S3 API URL of the archive (MinIO, or empty for AWS S3)")
	s.windows = addWindowSetFlags(fs, "")
	return s
}

// levels reads a list of window kinds, each one the configured set publishes; given is
// false when the flag was left at its default, which then means every configured calendar
// kind that default names (or, with none of them configured, every configured one).
func (s *batchSettings) levels(flag, v string, given bool) ([]string, error) {
	ws, err := s.windows.set()
	if err != nil {
		return nil, err
	}
	if !given {
		var keep []string
		for _, lv := range splitList(v) {
			if slices.Contains(batch.ServedLevels(ws), lv) {
				keep = append(keep, lv)
			}
		}
		if len(keep) == 0 {
			keep = ws.Calendar()
		}
		v = strings.Join(keep, ",")
	}
	levels, err := batch.ParseLevels(v, ws)
	if err != nil {
		return nil, usagef("--%s: %v", flag, err)
	}
	return levels, nil
}

// batchEnv is what a batch subcommand runs with; close releases it.
type batchEnv struct {
	eng   batch.Engine
	arc   *archive.Reader
	obj   *objstore.Store // the bucket: the archive and the shared topics review queue
	store store.Store
	close func()
	// meters are the progress bars of the runners built on this env, finished with it.
	meters []*meter
}

func (s *batchSettings) open(ctx context.Context) (*batchEnv, error) {
	obj, err := objstore.New(ctx, s.s3.config())
	if err != nil {
		return nil, usageOf(err, nil)
	}
	arc := archive.NewReaderAt(obj, s.archiveRoot)
	arc.Partitions = s.partitions
	attach, err := openTitles(s.titles, appFrom(ctx))
	if err != nil {
		return nil, err
	}
	st, err := openStore(s.storeSpec)
	if err != nil {
		return nil, err
	}
	// Every list the batch publishes carries its items' titles from --titles, the merger's
	// source, so a window turning exact keeps the titles its live list had.
	env := &batchEnv{arc: arc, obj: obj, store: store.WithTitles(st, attach)}
	if s.clickhouse == "" {
		if dir := filepath.Dir(s.rollups); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				st.Close()
				return nil, fmt.Errorf("create rollup directory: %w", err)
			}
		}
		eng, err := batch.OpenNative(s.rollups)
		if err != nil {
			st.Close()
			return nil, err
		}
		env.eng = eng
		env.close = func() { eng.Close(); st.Close() }
		return env, nil
	}
	o, err := store.ParseClickHouseDSN(s.clickhouse)
	if err != nil {
		st.Close()
		return nil, usagef("--clickhouse: %v", err)
	}
	conn, err := o.Conn(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	cfg := batch.DefaultClickHouseConfig()
	cfg.Database, cfg.Cluster = o.Database, s.cluster
	if s.cluster != "" {
		cfg.Dial = func(ctx context.Context, addr string) (driver.Conn, error) {
			so := o // the same database, credentials and TLS, on the shard's server
			so.Addr = addr
			return so.Conn(ctx)
		}
	}
	eng, err := batch.NewClickHouse(ctx, conn, cfg)
	if err != nil {
		conn.Close()
		st.Close()
		return nil, err
	}
	env.eng = eng
	env.close = func() { eng.Close(); conn.Close(); st.Close() }
	return env, nil
}

// batchTopicsFlags are the trending-topics recompute's flags (run, nightly).
type batchTopicsFlags struct {
	tf       *topicsFlags
	floor    float64
	listSize int
	review   string
}

// batchTopicsFieldFlags are the flags of the batch.TopicsConfig fields `batch` sets.
var batchTopicsFieldFlags = map[string]string{"ListSize": "--topics-list-size", "Surge.Floor": "--topics-floor"}

func addBatchTopicsFlags(fs *pflag.FlagSet) *batchTopicsFlags {
	b := &batchTopicsFlags{tf: addTopicsFlags(fs, false, 0)}
	addBlocklistFlag(fs, &b.tf.blocklist, "file of banned topic terms, one a line, applied to the topics recompute (needs --topics); a change recomputes the hours")
	fs.Float64Var(&b.floor, "topics-floor", topics.DefaultFloor, "fewest mentions in the hour for a topic to be listed (0: no floor)")
	fs.IntVar(&b.listSize, "topics-list-size", topics.DefaultListSize, "length of each topics list (1..1000)")
	fs.StringVar(&b.review, "topics-review", "", "a local review queue file to use instead of the shared queue in the bucket (topics/review.json, --s3-*), for offline demos ('trending topics demo --queue'); either way its pending and rejected topics are kept off the batch lists")
	return b
}

// topics returns the trending-topics recompute the flags describe, or nil without --topics.
// Its holds are the shared review queue's (topics.ReviewKey in the bucket), read once at
// start: the queue every speed worker, serve and `trending topics review` sync, so a topic
// held there never reaches an exact list. --topics-review FILE reads a local queue instead.
func (b *batchTopicsFlags) topics(ctx context.Context, env *batchEnv, r *batch.Runner) (*batch.Topics, error) {
	cfg, err := b.tf.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	tc := batch.DefaultTopicsConfig()
	tc.Regions, tc.Scores, tc.Blocklist, tc.ListSize = cfg.Regions, cfg.Scores, b.tf.blocklist, b.listSize
	tc.Surge.Floor = b.floor
	var q *topics.Review
	if b.review != "" {
		if q, err = readReviewQueue(b.review); err != nil {
			return nil, fmt.Errorf("--topics-review: %w", err)
		}
	} else if q, err = topics.LoadReview(ctx, env.obj, topics.ReviewKey); err != nil {
		// Without the queue a held topic could be listed: refuse rather than guess.
		return nil, fmt.Errorf("shared review queue %s (or give --topics-review FILE): %w", topics.ReviewKey, err)
	}
	tc.Held = q.Blocks
	if err := tc.Validate(); err != nil {
		return nil, usageOf(err, batchTopicsFieldFlags)
	}
	eng, ok := env.eng.(batch.TopicsEngine)
	if !ok {
		panic(fmt.Sprintf("BUG: exact engine %T keeps no topics rollups", env.eng))
	}
	return batch.NewTopics(r, eng, tc)
}

func (s *batchSettings) runner(cmd *cobra.Command, env *batchEnv, mod func(*batch.Config)) (*batch.Runner, error) {
	cfg := batch.DefaultConfig()
	ws, err := s.windows.set()
	if err != nil {
		return nil, err
	}
	cfg.K, cfg.AllowedLateness, cfg.Progress, cfg.BaseFactor, cfg.Windows = s.k, s.lateness, cmd.ErrOrStderr(), s.baseFactor, ws
	if m := newMeter(cmd.ErrOrStderr(), "windows"); m != nil {
		// A bar on a terminal instead of a line per window.
		cfg.Progress, cfg.Meter = nil, m.step
		env.meters = append(env.meters, m)
	}
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageOf(err, nil)
	}
	return batch.NewRunner(cfg, env.eng, env.arc, env.store, appFrom(cmd.Context()).log)
}

func newBatchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Recompute closed windows exactly from the archive and publish them (source=batch)",
		Long: `batch is the batch layer: it reads closed windows' events from the Parquet archive on S3,
counts them exactly (in ClickHouse with --clickhouse, otherwise with the Go-native engine)
and writes each window's top list to the serving store as source=batch, which replaces the
speed layer's live or provisional list and says how far that one was off (the reconciliation).

It keeps exact per-item rollups: an hour is loaded from the archive once, a day is the sum
of its 24 hour rollups, a month the sum of its days, all time the sum of the months. Each
rollup records the fingerprint of its archived inputs, so late data is noticed and only
the windows it touched are recomputed. Reruns are idempotent.

All time is also published as the exact base "all-base" through the last closed and complete
UTC day (the month to date ends there): its top --base-factor x --k items and the cutoff no
other item exceeds. The speed layer adds its exact counts since that day to it and serves the
live "all" list exact when it can prove it.

A window is closed once its end plus --lateness has passed and the archive's progress
markers say every partition has passed it; an open window is refused unless --force.

  run       recompute the windows of one kind in a range
  backfill  recompute hours, days and months over a date range (analysts); --dry-run plans
  nightly   yesterday, the month to date, all time, and late data (cron, Airflow)
  status    per window: exact, dirty (late data since), live, provisional or missing`,
	}
	for _, add := range []func() *cobra.Command{newBatchRunCommand, newBatchBackfillCommand, newBatchNightlyCommand, newBatchStatusCommand} {
		cmd.AddCommand(withClickHouseSecurity(add()))
	}
	return cmd
}

// parseWhen reads a UTC time: 2026-11-14T10:00:00Z, 2026-11-14T10, 2026-11-14 or 2026-11.
func parseWhen(flag, v string) (time.Time, error) { return parseWhenAt(flag, v, time.Now()) }

// parseWhenAt reads a time flag: "now", an offset from now (-2h, -30d, +1d), or a UTC time
// of any precision from RFC 3339 down to a month (2026-11-14T10:30, 2026-11-14T10,
// 2026-11-14, 2026-11).
func parseWhenAt(flag, v string, now time.Time) (time.Time, error) {
	switch {
	case v == "now":
		return now.UTC(), nil
	case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
		d, err := stream.ParseSpan(v[1:])
		if err != nil {
			return time.Time{}, usagef("--%s %q: %v", flag, v, err)
		}
		if v[0] == '-' {
			d = -d
		}
		return now.Add(d).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02T15", time.DateOnly, "2006-01"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, usagef(`--%s %q: use "now", an offset such as -2h or -30d, or a UTC time such as 2026-11-14T10, 2026-11-14 or 2026-11`, flag, v)
}

func newBatchRunCommand() *cobra.Command {
	var level, start, end string
	var force, dirty bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Recompute the closed calendar windows of one kind in a range",
		Example: `  # one hour
  trending batch run --window hour --start 2026-11-14T10
  # every day of a week, in ClickHouse, to the ClickHouse serving table
  trending batch run --window day --start 2026-11-09 --end 2026-11-16 \
    --clickhouse clickhouse://127.0.0.1:39100/trending --store clickhouse://127.0.0.1:39100/trending
  # all time (the live list "all" and the base "all-base"), summed over every month rolled up
  trending batch run --window all
  # the hour's lists and its exact trending-topics lists of eu, us and world; topics held in
  # the shared review queue (topics/review.json in the bucket) stay off them
  trending batch run --window hour --start 2026-11-14T10 --topics eu,us --blocklist banned.txt
  # offline demo: the holds of a local queue file instead of the shared queue
  trending batch run --window hour --start 2026-11-14T10 --topics eu --topics-review data/topics-review.json
  # every closed hour that received late events after the archive had passed it (from
  # cron every few minutes), with its day, month and all time
  trending batch run --dirty`,
		Args: cobra.NoArgs,
		RunE: nil,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&level, "window", "hour", "window kind: hour, day, week, month or all, one the window set serves")
	addStartFlag(f, &start, "", "first window (UTC), e.g. 2026-11-14T10 or -2h (the window holding that time); required except for --window all")
	f.StringVar(&end, "end", "", "end of the range, exclusive (default: the end of the first window)")
	addForceFlag(f, &force, "compute open windows too (the speed layer then cannot update them)")
	f.BoolVar(&dirty, "dirty", false, "recompute exactly the closed hours the archive marked as having received late data (with their day, month and all time), then clear the marks; no --window or --start")
	btf := addBatchTopicsFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if dirty {
			if start != "" || end != "" || force || cmd.Flags().Changed("window") || btf.tf.regions != "" {
				return usagef("--dirty finds its windows itself: drop --window, --start, --end, --force and --topics")
			}
			return s.job(cmd, nil, nil, func(r *batch.Runner, _ *batch.Topics) error {
				rep, err := r.RecomputeDirty(cmd.Context())
				if err != nil {
					return err
				}
				return writeReport(cmd.OutOrStdout(), rep)
			})
		}
		levels, err := s.levels("window", level, true)
		if err != nil {
			return err
		}
		if len(levels) != 1 {
			return usagef("--window %q: give one window kind", level)
		}
		if btf.tf.regions != "" && levels[0] != batch.Hour {
			return usagef("--topics lists are recomputed per hour: use --window hour")
		}
		var ws []batch.Window
		if levels[0] == batch.All {
			ws = []batch.Window{{Level: batch.All}}
		} else {
			if start == "" {
				return usagef("--start is required for --window %s", level)
			}
			from, err := parseWhen("start", start)
			if err != nil {
				return err
			}
			to := model.Next(level, model.Align(level, from))
			if end != "" {
				if to, err = parseWhen("end", end); err != nil {
					return err
				}
			}
			if ws, err = batch.Span(level, from, to); err != nil {
				return usageOf(err, nil)
			}
		}
		return s.job(cmd, btf, func(c *batch.Config) { c.Force, c.Rebuild = force, true }, func(r *batch.Runner, tp *batch.Topics) error {
			rep, err := r.Recompute(cmd.Context(), ws)
			if err != nil {
				return err
			}
			if err := writeReport(cmd.OutOrStdout(), rep); err != nil || tp == nil {
				return err
			}
			if rep, err = tp.Recompute(cmd.Context(), ws); err != nil {
				return err
			}
			return writeTopicsReport(cmd.OutOrStdout(), rep)
		})
	}
	return cmd
}

// writeTopicsReport is writeReport's line for the trending-topics lists.
func writeTopicsReport(w io.Writer, rep batch.Report) error {
	built, current := 0, 0
	for _, o := range rep.Outcomes {
		if o.Built && o.Window.Level == batch.TopicsRollup {
			built++
		}
		if o.Skipped == "current" {
			current++
		}
	}
	_, err := fmt.Fprintf(w, "topics version %d: %d hour rollups built, %d lists published, %d current\n", rep.Version, built, rep.Published(), current)
	return err
}

func newBatchBackfillCommand() *cobra.Command {
	var days dayRange
	var parallel int
	var dryRun, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Recompute hours, days and months over a date range",
		Long: `backfill recomputes every window of the chosen kinds whose start is in [--from, --to]
(whole UTC days, both included; months touching the range). Hours are loaded from the
archive; days and months are summed from the rollups below them. --dry-run prints the plan
(windows, archive objects, bytes, open windows) and does nothing.`,
		Example: `  trending batch backfill --from 2026-11-01 --to 2026-11-30 --dry-run
  trending batch backfill --from 2026-11-01 --to 2026-11-30 --windows hour,day,month --parallel 4`,
		Args: cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	addDayRangeFlags(f, &days, "required", "hour,day,month", "window kinds to recompute: hour, day, week, month, all (those the window set serves; the default: its calendar kinds of hour, day and month, or all of its calendar kinds)")
	f.IntVar(&parallel, "parallel", 1, "days whose hours are loaded at once (1..64)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and do nothing")
	addForceFlag(f, &force, "compute open windows too (the speed layer then cannot update them)")
	addJSONFlag(f, &asJSON, "the plan or report")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if days.from == "" {
			return usagef("--from is required, e.g. --from 2026-11-01")
		}
		lo, err := parseWhen("from", days.from)
		if err != nil {
			return err
		}
		hi := lo
		if days.to != "" {
			if hi, err = parseWhen("to", days.to); err != nil {
				return err
			}
		}
		hi = model.Align("day", hi).AddDate(0, 0, 1)
		levels, err := s.levels("windows", days.windows, cmd.Flags().Changed("windows"))
		if err != nil {
			return err
		}
		var ws []batch.Window
		for _, lv := range levels {
			w, err := batch.Span(lv, lo, hi)
			if err != nil {
				return usagef("--from/--to: %v", err)
			}
			ws = append(ws, w...)
		}
		env, err := s.open(cmd.Context())
		if err != nil {
			return err
		}
		defer env.close()
		r, err := s.runner(cmd, env, func(c *batch.Config) { c.Force, c.Rebuild, c.Parallel = force, true, parallel })
		if err != nil {
			return err
		}
		if dryRun {
			plan, err := r.Plan(cmd.Context(), ws)
			if err != nil {
				return err
			}
			return writePlanTable(cmd.OutOrStdout(), plan, asJSON)
		}
		rep, err := r.Recompute(cmd.Context(), ws)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), rep)
		}
		return writeReport(cmd.OutOrStdout(), rep)
	}
	return cmd
}

func newBatchNightlyCommand() *cobra.Command {
	var date string
	var lookback int
	var force bool
	cmd := &cobra.Command{
		Use:   "nightly",
		Short: "Yesterday's hours and day, the month to date, all time, and late data",
		Long: `nightly is what cron or Airflow runs once a day, after midnight UTC plus --lateness:
the hours and the day of --date (default yesterday), the month to date (its rollup; its list
once the month has closed), the all-time list, and every hour and day of the last
--lookback-days whose archived inputs changed since they were built (late data), with the
windows above them. Windows whose inputs did not change are not recomputed. Exit status 0
means every window is exact and published.

With --topics it also recomputes those hours' trending-topics lists. Topics the shared review
queue (topics/review.json in the bucket, --s3-*) holds, pending or rejected, stay off them;
the queue's decisions count as inputs, so an hour whose held topics changed since it was
published (a new hold, an approval) is recomputed. --topics-review FILE reads a local queue
file instead (offline demos).`,
		Example: `  # crontab: 00:30 UTC every day
  30 0 * * * trending batch nightly --clickhouse clickhouse://ch:9000/trending --store clickhouse://ch:9000/trending`,
		Args: cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&date, "date", "", "UTC day to close (default: yesterday)")
	f.IntVar(&lookback, "lookback-days", 35, "how many earlier days to check for late data")
	addForceFlag(f, &force, "run even if --date is not closed yet")
	btf := addBatchTopicsFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var day time.Time
		if date != "" {
			var err error
			if day, err = parseWhen("date", date); err != nil {
				return err
			}
		}
		return s.job(cmd, btf, func(c *batch.Config) { c.Force, c.LookbackDays = force, lookback }, func(r *batch.Runner, tp *batch.Topics) error {
			rep, err := r.Nightly(cmd.Context(), day)
			if err != nil {
				return err
			}
			if err := writeReport(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			// Late data older than the lookback, or marked since: the archive's marks.
			if rep, err = r.RecomputeDirty(cmd.Context()); err != nil {
				return err
			}
			if len(rep.Outcomes) > 0 {
				if err := writeReport(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			}
			if tp == nil {
				return nil
			}
			// The topics lists of the day's hours and of every hour of the lookback.
			hours, err := batch.NightlyHours(day, time.Now().UTC(), lookback)
			if err != nil {
				return err
			}
			if rep, err = tp.Recompute(cmd.Context(), hours); err != nil {
				return err
			}
			return writeTopicsReport(cmd.OutOrStdout(), rep)
		})
	}
	return cmd
}

// job opens the batch's stores, builds the runner (mod changes its config) and, with
// --topics, the topics recompute (nil without), runs fn with them and closes the stores.
func (s *batchSettings) job(cmd *cobra.Command, btf *batchTopicsFlags, mod func(*batch.Config), fn func(*batch.Runner, *batch.Topics) error) error {
	env, err := s.open(cmd.Context())
	if err != nil {
		return err
	}
	defer env.close()
	r, err := s.runner(cmd, env, mod)
	if err != nil {
		return err
	}
	var tp *batch.Topics
	if btf != nil {
		if tp, err = btf.topics(cmd.Context(), env, r); err != nil {
			return err
		}
	}
	defer func() {
		for _, m := range env.meters {
			m.finish()
		}
	}()
	return fn(r, tp)
}

func newBatchStatusCommand() *cobra.Command {
	var days dayRange
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Per window: exact, dirty (late data since), live, provisional or missing, with the reconciliation",
		Example: `  trending batch status --from 2026-11-14 --to 2026-11-15 --windows hour,day`,
		Args:    cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	addDayRangeFlags(f, &days, "default: yesterday", "day", "window kinds: hour, day, week, month (those the window set serves)")
	addJSONFlag(f, &asJSON, "the status")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		lo := time.Now().UTC().AddDate(0, 0, -1)
		var err error
		if days.from != "" {
			if lo, err = parseWhen("from", days.from); err != nil {
				return err
			}
		}
		hi := lo
		if days.to != "" {
			if hi, err = parseWhen("to", days.to); err != nil {
				return err
			}
		}
		levels, err := s.levels("windows", days.windows, cmd.Flags().Changed("windows"))
		if err != nil {
			return err
		}
		env, err := s.open(cmd.Context())
		if err != nil {
			return err
		}
		defer env.close()
		r, err := s.runner(cmd, env, nil)
		if err != nil {
			return err
		}
		st, err := r.Status(cmd.Context(), levels, model.Align("day", lo), model.Align("day", hi).AddDate(0, 0, 1))
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), st)
		}
		return writeStatus(cmd.OutOrStdout(), st)
	}
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func short(fp string) string {
	if len(fp) > 12 {
		return fp[:12]
	}
	if fp == "" {
		return "-"
	}
	return fp
}

func writePlanTable(w io.Writer, plan []batch.PlanEntry, asJSON bool) error {
	if asJSON {
		type row struct {
			Window  string `json:"window"`
			Hours   int    `json:"hours"`
			Objects int    `json:"objects"`
			Bytes   int64  `json:"bytes"`
			Open    string `json:"open,omitempty"`
		}
		rows := make([]row, len(plan))
		for i, p := range plan {
			rows[i] = row{Window: p.Window.String(), Hours: p.Hours, Objects: p.Objects, Bytes: p.Bytes}
			if p.Open != nil {
				rows[i].Open = p.Open.Error()
			}
		}
		return writeJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WINDOW\tHOURS\tOBJECTS\tBYTES\tSTATE")
	var objs int
	var bytes int64
	open := 0
	for _, p := range plan {
		state := "closed"
		if p.Open != nil {
			state, open = "OPEN: "+p.Open.Error(), open+1
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", p.Window, p.Hours, p.Objects, p.Bytes, state)
		objs += p.Objects
		bytes += p.Bytes
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d windows, %d objects, %d bytes read cold (hour rollups that are current are reused); %d open (refused without --force). Dry run: nothing done.\n",
		len(plan), objs, bytes, open)
	return nil
}

func writeReport(w io.Writer, rep batch.Report) error {
	built, skipped := 0, map[string]int{}
	for _, o := range rep.Outcomes {
		if o.Built {
			built++
		}
		if !o.Published && o.Skipped != "" {
			skipped[o.Skipped]++
		}
	}
	var sk []string
	for why, n := range skipped {
		sk = append(sk, fmt.Sprintf("%d %s", n, why))
	}
	line := fmt.Sprintf("batch version %d: %d rollups built, %d lists published", rep.Version, built, rep.Published())
	if len(sk) > 0 {
		line += "; not published: " + strings.Join(sk, ", ")
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

func writeStatus(w io.Writer, st []batch.StatusEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WINDOW\tSTATE\tVERSION\tCOMPUTED\tLIST INPUTS\tARCHIVE NOW\tRECALL@K\tMAX ABS ERR\tMAX REL ERR")
	for _, e := range st {
		version, computed, listFP, recall, maxAbs, maxRel := "-", "-", "-", "-", "-", "-"
		if l := e.List; l != nil {
			version, computed, listFP = fmt.Sprint(l.Version), l.ComputedAt.UTC().Format(time.RFC3339), short(l.Fingerprint)
			if r := l.Reconciliation; r != nil {
				recall, maxAbs, maxRel = fmt.Sprintf("%.3f", r.RecallAtK), fmt.Sprint(r.MaxAbsError), fmt.Sprintf("%.4f", r.MaxRelError)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Window, e.State, version, computed, listFP, short(e.Fingerprint), recall, maxAbs, maxRel)
	}
	return tw.Flush()
}
