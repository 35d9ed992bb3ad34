package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"trending/internal/topicstore"
	"trending/model/moderation"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/archive"
	"trending/batch"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/model"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/serving/store"
	chstore "trending/serving/store/clickhouse"
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
	capViews    uint32
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
	addCapViewsFlag(fs, &s.capViews)
	fs.IntVar(&s.baseFactor, "base-factor", batch.DefaultConfig().BaseFactor, "the exact all-time base (through the last closed day, for the speed layer's exact all-time list) lists the top base-factor x k items (1..100)")
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
		v = servedDefault(v, ws)
	}
	levels, err := batch.ParseLevels(v, ws)
	if err != nil {
		return nil, usagef("--%s: %v", flag, err)
	}
	return levels, nil
}

// servedDefault is a default list of window kinds kept to those ws publishes (or, with none
// of them, every calendar kind ws has), so a default never names a kind the set does not serve.
func servedDefault(v string, ws windowset.Set) string {
	var keep []string
	for _, lv := range splitList(v) {
		if slices.Contains(batch.ServedLevels(ws), lv) {
			keep = append(keep, lv)
		}
	}
	if len(keep) == 0 {
		keep = model.PeriodStrings(ws.Calendar())
	}
	return strings.Join(keep, ",")
}

// batchEnv is what a batch subcommand runs with; close releases it.
type batchEnv struct {
	eng   batch.Engine
	arc   *archive.Reader
	obj   *objstore.Client // the bucket: the archive and the shared topics review queue
	store store.Store
	close func()
	// meters are the progress bars of the runners built on this env, finished with it.
	meters []*meter
}

// finishMeters ends the progress bars, so that what follows prints below them.
func (e *batchEnv) finishMeters() {
	for _, m := range e.meters {
		m.finish()
	}
}

// reader is the batch's reader of the archive in obj: under --archive-root, complete when
// --partitions (default: the archiver's topic manifest) have archived past a window.
func (s *batchSettings) reader(obj *objstore.Client) *archive.Reader {
	arc := archive.NewReaderAt(obj, s.archiveRoot)
	arc.Partitions = s.partitions
	return arc
}

func (s *batchSettings) open(ctx context.Context) (*batchEnv, error) {
	obj, err := objstore.New(ctx, s.s3.config())
	if err != nil {
		return nil, usageOf(err, nil)
	}
	arc := s.reader(obj)
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
	o, err := chstore.ParseDSN(s.clickhouse)
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
	fs.Float64Var(&b.floor, "topics-floor", topicrules.DefaultFloor, "fewest mentions in the hour for a topic to be listed (0: no floor)")
	fs.IntVar(&b.listSize, "topics-list-size", topicrules.DefaultListSize, "length of each topics list (1..1000)")
	fs.StringVar(&b.review, "topics-review", "", "a local review queue file to use instead of the shared queue in the bucket (topics/review.json, --s3-*), for offline demos ('trending topics demo --queue'); either way its pending and rejected topics are kept off the batch lists")
	return b
}

// topics returns the trending-topics recompute the flags describe, or nil without --topics.
// Its holds are the shared review queue's (topicstore.ReviewKey in the bucket), read once at
// start: the queue every speed worker, serve and `trending topics review` sync, so a topic
// held there never reaches an exact list. --topics-review FILE reads a local queue instead.
func (b *batchTopicsFlags) topics(ctx context.Context, env *batchEnv, r *batch.Runner) (*batch.Topics, error) {
	cfg, err := b.tf.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	var q *topicrules.Review
	if b.review != "" {
		if q, err = readReviewQueue(b.review); err != nil {
			return nil, fmt.Errorf("--topics-review: %w", err)
		}
	} else if q, err = topicstore.LoadReview(ctx, env.obj, topicstore.ReviewKey); err != nil {
		// Without the queue a held topic could be listed: refuse rather than guess.
		return nil, fmt.Errorf("shared review queue %s (or give --topics-review FILE): %w", topicstore.ReviewKey, err)
	}
	tc, err := batchTopicsConfig(b, q.Blocks, batchTopicsFieldFlags)
	if err != nil {
		return nil, err
	}
	eng, ok := env.eng.(batch.TopicsEngine)
	if !ok {
		panic(fmt.Sprintf("BUG: exact engine %T keeps no topics rollups", env.eng))
	}
	return batch.NewTopics(r, eng, *tc)
}

func (s *batchSettings) runner(cmd *cobra.Command, env *batchEnv, mod func(*batch.Config)) (*batch.Runner, error) {
	cfg, err := batchConfig(s)
	if err != nil {
		return nil, err
	}
	cfg.Progress = cmd.ErrOrStderr()
	if m := newMeter(cmd.ErrOrStderr(), "windows"); m != nil {
		// A bar on a terminal instead of a line per window.
		cfg.Progress, cfg.Meter = nil, m.step
		env.meters = append(env.meters, m)
	}
	// The shared moderation list, read once: the run's lists leave its removed items out.
	removed, err := loadRemoved(cmd.Context(), env.obj)
	if err != nil {
		return nil, err
	}
	cfg.Removed = func() *moderation.Set { return removed }
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
	var rf rangeFlags
	var force, dirty, asJSON bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Recompute the closed calendar windows of the given kinds in a range",
		Example: `  # one hour
  trending batch run --windows hour --from 2026-11-14T10
  # every day of a week, in ClickHouse, to the ClickHouse serving table
  trending batch run --windows day --from 2026-11-09 --to 2026-11-15 \
    --clickhouse clickhouse://127.0.0.1:39100/trending --store clickhouse://127.0.0.1:39100/trending
  # yesterday's hours and day; windows still open are left out and listed
  trending batch run --windows hour,day --from yesterday --to now
  # all time (the live list "all" and the base "all-base"), summed over every month rolled up
  trending batch run --windows all
  # the hour's lists and its exact trending-topics lists of eu, us and world; topics held in
  # the shared review queue (topics/review.json in the bucket) stay off them
  trending batch run --windows hour --from 2026-11-14T10 --topics eu,us --blocklist banned.txt
  # offline demo: the holds of a local queue file instead of the shared queue
  trending batch run --windows hour --from 2026-11-14T10 --topics eu --topics-review data/topics-review.json
  # every closed hour that received late events after the archive had passed it (from
  # cron every few minutes), with its day, month and all time
  trending batch run --dirty`,
		Args: cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	addRangeFlags(f, &rf, "hour", "window kinds: hour, day, week, month or all, comma separated (those the window set serves)", "required except for --windows all")
	addDeprecatedRunFlags(f, &rf)
	addForceFlag(f, &force, "compute open windows too (the speed layer then cannot update them); without it they are left out and listed")
	f.BoolVar(&dirty, "dirty", false, "recompute exactly the closed hours the archive marked as having received late data (with their day, month and all time), then clear the marks; no --windows or --from")
	addJSONFlag(f, &asJSON, "the report (docs/batch.md)")
	btf := addBatchTopicsFlags(f)
	client := addBatchClientFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		began := time.Now()
		if client.on() {
			if dirty || btf.tf.regions != "" || rf.end != "" {
				return usagef("--api runs a range of --windows: --dirty, --topics and --end are for a batch run of its own")
			}
			return client.run(cmd, batchAPIRequest{Command: "run", Windows: rf.windows, From: rf.from, To: rf.to, Force: force}, asJSON)
		}
		if dirty {
			if rf.from != "" || rf.to != "" || rf.end != "" || force || cmd.Flags().Changed("windows") || cmd.Flags().Changed("window") || btf.tf.regions != "" {
				return usagef("--dirty finds its windows itself: drop --windows, --from, --to, --force and --topics")
			}
			return s.job(cmd, nil, nil, func(r *batch.Runner, _ *batch.Topics) error {
				rep, err := r.RecomputeDirty(cmd.Context())
				if err != nil {
					return err
				}
				return printRun(cmd, "run", asJSON, time.Time{}, time.Time{}, rep, nil, began)
			})
		}
		levels, err := s.levels("windows", rf.windows, true)
		if err != nil {
			return err
		}
		if btf.tf.regions != "" && !slices.Equal(levels, []string{batch.Hour}) {
			return usagef("--topics lists are recomputed per hour: use --windows hour")
		}
		ws, lo, hi, err := rf.windowsOf(levels, "")
		if err != nil {
			return err
		}
		return s.job(cmd, btf, func(c *batch.Config) { c.Force, c.Rebuild = true, true }, func(r *batch.Runner, tp *batch.Topics) error {
			closed, open, err := splitOpen(cmd.Context(), r, ws, force)
			if err != nil {
				return err
			}
			rep, err := r.Recompute(cmd.Context(), closed)
			if err != nil {
				return err
			}
			if err := printRun(cmd, "run", asJSON, lo, hi, rep, open, began); err != nil || tp == nil {
				return err
			}
			if rep, err = tp.Recompute(cmd.Context(), closed); err != nil {
				return err
			}
			return writeTopicsReport(cmd.OutOrStdout(), rep)
		})
	}
	return cmd
}

// windowsOf is the windows of the kinds levels whose start lies in the flags' range (those
// that start before it and reach into it included: a month touching the range), with the
// range; defFrom is --from when it is empty. Only all time needs no range.
func (rf rangeFlags) windowsOf(levels []string, defFrom string) ([]batch.Window, time.Time, time.Time, error) {
	if slices.Equal(levels, []string{batch.All}) && rf.from == "" && rf.to == "" && rf.end == "" {
		return []batch.Window{{Level: batch.All}}, time.Time{}, time.Time{}, nil
	}
	now := time.Now().UTC()
	lo, hi, err := rf.span(now, defFrom)
	if err != nil {
		return nil, lo, hi, err
	}
	var ws []batch.Window
	for _, lv := range levels {
		w, err := batch.Span(lv, lo, hi)
		if err != nil {
			return nil, lo, hi, usagef("--from/--to: %v", err)
		}
		ws = append(ws, w...)
	}
	return ws, lo, hi, nil
}

// splitOpen leaves out the windows that are not closed yet (unless force), saying why, so
// a range that reaches into the present recomputes what it can. A range wholly in the future
// is a mistake on the command line.
func splitOpen(ctx context.Context, r *batch.Runner, ws []batch.Window, force bool) ([]batch.Window, []openWindow, error) {
	if force {
		return ws, nil, nil // Recompute still refuses a window past the archive's retention
	}
	var closed []batch.Window
	var open []openWindow
	now := time.Now()
	begun := false
	for _, w := range ws {
		if w.Level == batch.All || !w.Start.After(now) {
			begun = true
		}
		err := r.Closed(ctx, w)
		switch {
		case err == nil:
			closed = append(closed, w)
		case errors.Is(err, batch.ErrWindowOpen):
			open = append(open, openWindow{w, err.Error()})
		case errors.Is(err, batch.ErrWindowExpired):
			return nil, nil, usagef("%v: start --from later", err)
		default:
			return nil, nil, err
		}
	}
	if !begun {
		return nil, nil, usagef("every window of the range starts in the future (after %s): nothing has been archived for it yet; check --from and --to", now.UTC().Format(time.RFC3339))
	}
	return closed, open, nil
}

// printRun writes a run's report: the JSON schema with --json, else the summary line and the
// windows left out because they are open.
func printRun(cmd *cobra.Command, name string, asJSON bool, lo, hi time.Time, rep batch.Report, open []openWindow, began time.Time) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(w, reportOutput(name, lo, hi, rep, open, time.Since(began)))
	}
	if err := writeReport(w, rep); err != nil {
		return err
	}
	if len(open) == 0 {
		return nil
	}
	fmt.Fprintf(w, "left out %d windows not closed yet (--force computes them from what is archived so far):\n", len(open))
	for i, o := range open {
		if i == 10 {
			fmt.Fprintf(w, "  ... and %d more\n", len(open)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", o.why)
	}
	return nil
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
	var rf rangeFlags
	var parallel int
	var dryRun, force, asJSON bool
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Recompute hours, days and months over a date range",
		Long: `backfill recomputes every window of the chosen kinds in [--from, --to] (whole UTC days
when they are written as days: --from -1d is yesterday 00:00 to 24:00; months touching the
range). Hours are loaded from the archive; days and months are summed from the rollups below
them. Windows not closed yet are left out and listed (--force computes them); a range wholly in
the future is a mistake (exit 2). --dry-run prints the plan (windows, archive objects, bytes,
open windows) and creates or changes nothing.`,
		Example: `  trending batch backfill --from 2026-11-01 --to 2026-11-30 --dry-run
  trending batch backfill --from 2026-11-01 --to 2026-11-30 --windows hour,day,month --parallel 4
  trending batch backfill --from -7d --to now --json > report.json`,
		Args: cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	addRangeFlags(f, &rf, "hour,day,month", "window kinds to recompute: hour, day, week, month, all (those the window set serves; the default: its calendar kinds of hour, day and month, or all of its calendar kinds)", "required")
	f.IntVar(&parallel, "parallel", 1, "days whose hours are loaded at once (1..64)")
	f.BoolVar(&dryRun, "dry-run", false, "print the plan and create or change nothing")
	addForceFlag(f, &force, "compute open windows too (the speed layer then cannot update them)")
	addJSONFlag(f, &asJSON, "the plan or report (docs/batch.md)")
	client := addBatchClientFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		began := time.Now()
		if rf.from == "" {
			return usagef("--from is required, e.g. --from 2026-11-01 or --from -1d")
		}
		if client.on() {
			windows := rf.windows
			if !cmd.Flags().Changed("windows") {
				windows = "" // up's own default kinds
			}
			return client.run(cmd, batchAPIRequest{Command: "backfill", Windows: windows, From: rf.from, To: rf.to, Force: force, DryRun: dryRun}, asJSON)
		}
		levels, err := s.levels("windows", rf.windows, cmd.Flags().Changed("windows"))
		if err != nil {
			return err
		}
		ws, lo, hi, err := rf.windowsOf(levels, "")
		if err != nil {
			return err
		}
		if dryRun {
			return s.dryRun(cmd, ws, lo, hi, asJSON)
		}
		env, err := s.open(cmd.Context())
		if err != nil {
			return err
		}
		defer env.close()
		r, err := s.runner(cmd, env, func(c *batch.Config) { c.Force, c.Rebuild, c.Parallel = true, true, parallel })
		if err != nil {
			return err
		}
		defer env.finishMeters()
		closed, open, err := splitOpen(cmd.Context(), r, ws, force)
		if err != nil {
			return err
		}
		rep, err := r.Recompute(cmd.Context(), closed)
		if err != nil {
			return err
		}
		env.finishMeters()
		return printRun(cmd, "backfill", asJSON, lo, hi, rep, open, began)
	}
	return cmd
}

// dryRun prints the plan of ws without creating or changing anything: the rollups and the
// serving store are not opened (the plan reads the archive, and the rollup file read-only
// when all time is planned and the file exists).
func (s *batchSettings) dryRun(cmd *cobra.Command, ws []batch.Window, lo, hi time.Time, asJSON bool) error {
	ctx := cmd.Context()
	obj, err := objstore.New(ctx, s.s3.config())
	if err != nil {
		return usageOf(err, nil)
	}
	arc := s.reader(obj)
	var eng batch.Engine // nil: planned without rollups
	if slices.ContainsFunc(ws, func(w batch.Window) bool { return w.Level == batch.All }) {
		if s.clickhouse != "" {
			return usagef("--dry-run plans all time with the Go-native engine's rollups only: leave all out of --windows")
		}
		if _, err := os.Stat(s.rollups); err == nil {
			n, err := batch.OpenNativeReadOnly(s.rollups)
			if err != nil {
				return err
			}
			defer n.Close()
			eng = n
		} else {
			eng = nil // nothing rolled up yet
		}
	}
	cfg, err := batchConfig(s)
	if err != nil {
		return err
	}
	r, err := batch.NewRunner(cfg, eng, arc, nil, appFrom(ctx).log)
	if err != nil {
		return usageOf(err, nil)
	}
	plan, err := r.Plan(ctx, ws)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), planOutput(lo, hi, plan))
	}
	return writePlanTable(cmd.OutOrStdout(), plan)
}

func newBatchNightlyCommand() *cobra.Command {
	var date string
	var lookback int
	var force, asJSON bool
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
	addJSONFlag(f, &asJSON, "every window's outcome (docs/batch.md)")
	btf := addBatchTopicsFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var day time.Time
		if date != "" {
			var err error
			if day, err = parseWhen("date", date); err != nil {
				return err
			}
		}
		began := time.Now()
		return s.job(cmd, btf, func(c *batch.Config) { c.Force, c.LookbackDays = force, lookback }, func(r *batch.Runner, tp *batch.Topics) error {
			w := cmd.OutOrStdout()
			if asJSON {
				w = io.Discard // one JSON document of every report below, at the end
			}
			rep, err := r.Nightly(cmd.Context(), day)
			if err != nil {
				return err
			}
			all := rep
			if err := writeReport(w, rep); err != nil {
				return err
			}
			// Late data older than the lookback, or marked since: the archive's marks.
			if rep, err = r.RecomputeDirty(cmd.Context()); err != nil {
				return err
			}
			all.Outcomes = append(all.Outcomes, rep.Outcomes...)
			if len(rep.Outcomes) > 0 {
				if err := writeReport(w, rep); err != nil {
					return err
				}
			}
			if tp != nil {
				// The topics lists of the day's hours and of every hour of the lookback.
				hours, err := batch.NightlyHours(day, time.Now().UTC(), lookback)
				if err != nil {
					return err
				}
				if rep, err = tp.Recompute(cmd.Context(), hours); err != nil {
					return err
				}
				all.Outcomes = append(all.Outcomes, rep.Outcomes...)
				if err := writeTopicsReport(w, rep); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), reportOutput("nightly", time.Time{}, time.Time{}, all, nil, time.Since(began)))
			}
			return nil
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
	var rf rangeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Per window: exact, dirty (late data since), live, provisional or missing, with the reconciliation",
		Example: `  trending batch status                                   # yesterday's day
  trending batch status --from today --windows hour         # today's hours
  trending batch status --from 2026-11-14 --to 2026-11-15 --windows hour,day --json`,
		Args: cobra.NoArgs,
	}
	s := addBatchSettings(cmd.Flags())
	f := cmd.Flags()
	addRangeFlags(f, &rf, "day", "window kinds: hour, day, week, month (those the window set serves)", "default yesterday")
	addJSONFlag(f, &asJSON, "the status (docs/batch.md)")
	client := addBatchClientFlags(f)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if client.on() {
			return client.status(cmd, rf, asJSON)
		}
		levels, err := s.levels("windows", rf.windows, cmd.Flags().Changed("windows"))
		if err != nil {
			return err
		}
		lo, hi, err := rf.span(time.Now(), "yesterday")
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
		st, err := r.Status(cmd.Context(), levels, lo, hi)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(cmd.OutOrStdout(), statusOutput(lo, hi, st))
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

func writePlanTable(w io.Writer, plan []batch.PlanEntry) error {
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
	fmt.Fprintf(w, "\n%d windows, %d objects, %d bytes read cold (hour rollups that are current are reused); %d open (left out without --force). Dry run: nothing done.\n",
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
	states := map[batch.State]int{}
	for _, e := range st {
		version, computed, listFP, recall, maxAbs, maxRel := "-", "-", "-", "-", "-", "-"
		if l := e.List; l != nil {
			version, computed, listFP = fmt.Sprint(l.Version), l.ComputedAt.UTC().Format(time.RFC3339), short(l.Fingerprint)
			if r := l.Reconciliation; r != nil {
				recall, maxAbs, maxRel = fmt.Sprintf("%.3f", r.RecallAtK), fmt.Sprint(r.MaxAbsError), fmt.Sprintf("%.4f", r.MaxRelError)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Window, e.State, version, computed, listFP, short(e.Fingerprint), recall, maxAbs, maxRel)
		states[e.State]++
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// One line a person reads first: how many windows are in each state.
	var parts []string
	for _, s := range []batch.State{batch.StateExact, batch.StateDirty, batch.StateProvisional, batch.StateLive, batch.StateMissing} {
		if n := states[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, s))
		}
	}
	_, err := fmt.Fprintf(w, "\n%d windows: %s (dirty: late data since it was made exact, 'batch run --dirty' fixes it; provisional and missing: not recomputed yet)\n",
		len(st), strings.Join(parts, ", "))
	return err
}
