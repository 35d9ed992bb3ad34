package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/internal/stream"
	"trending/loadgen"
	"trending/model/event"
)

func init() { subcommands = append(subcommands, newLoadgenCommand) }

// spanFlag is a duration flag that also reads whole days: 90s, 10m, 3d, 1d12h.
type spanFlag struct{ d *time.Duration }

func (s spanFlag) String() string {
	if s.d == nil {
		return "0s"
	}
	return s.d.String()
}

func (s spanFlag) Set(v string) error {
	d, err := stream.ParseSpan(v)
	if err != nil {
		return err
	}
	*s.d = d
	return nil
}

func (spanFlag) Type() string { return "duration" }

// countFlag is an integer flag that also reads 1e6 notation.
type countFlag struct{ n *int64 }

func (c countFlag) String() string {
	if c.n == nil {
		return "0"
	}
	return fmt.Sprint(*c.n)
}

func (c countFlag) Set(v string) error {
	var f float64
	if _, err := fmt.Sscan(v, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return fmt.Errorf("%q is not a whole number such as 1000000 or 1e6", v)
	}
	*c.n = int64(f)
	return nil
}

func (countFlag) Type() string { return "count" }

// streamFlags are the stream settings shared by loadgen, accuracy and up's load generator.
type streamFlags struct {
	items, seed int64
	zipf        float64
	servers     int
	viral       []string
	late        float64
	lateBy      time.Duration
	start       string
	regions     string
}

// streamDefaults are a command's defaults for the stream's shape (addStreamShapeFlags).
type streamDefaults struct {
	items   int64
	servers int
	late    float64
	viral   []string
	regions string
}

// addStreamFlags adds the stream flags of loadgen and accuracy: its shape, and --late-by,
// --seed and --start.
func addStreamFlags(fs *pflag.FlagSet, f *streamFlags, defaultStart string) {
	addStreamShapeFlags(fs, f, streamDefaults{items: 1_000_000, servers: 500})
	fs.Var(spanFlag{&f.lateBy}, "late-by", "how far late events are shifted back")
	addSeedFlag(fs, &f.seed, 0)
	addStartFlag(fs, &f.start, defaultStart, `event time of the first second: "now", an offset from now such as -30d, or a UTC time such as 2026-01-20T00:00:00Z or 2026-01-20T10`)
}

// addStreamShapeFlags adds --items, --zipf, --servers, --viral and --late with d's defaults
// (loadgen and accuracy; up's built-in load generator). Late events are shifted back by
// stream.DefaultConfig's LateBy (two minutes) unless --late-by (addStreamFlags) says otherwise.
func addStreamShapeFlags(fs *pflag.FlagSet, f *streamFlags, d streamDefaults) {
	f.items, f.zipf, f.servers, f.late, f.viral = d.items, stream.DefaultConfig().Zipf, d.servers, d.late, d.viral
	f.lateBy = stream.DefaultConfig().LateBy
	fs.Var(countFlag{&f.items}, "items", "catalog size: items V1..VN, V1 the most viewed")
	fs.Float64Var(&f.zipf, "zipf", f.zipf, "Zipf exponent s: rank k gets views in proportion to k^-s (any s in (0, 10])")
	fs.IntVar(&f.servers, "servers", f.servers, "video servers that pre-sum views: one event per item per server per second")
	fs.StringArrayVar(&f.viral, "viral", f.viral, "viral item ITEM@+AT:SHARE:FOR[:RAMP], e.g. V42@+2m:30%:10m (repeat or comma-separate for more; \"\" for none)")
	fs.Float64Var(&f.late, "late", f.late, "fraction of events whose event time is shifted back by --late-by (up: two minutes; 0.01 is 1%)")
	fs.StringVar(&f.regions, "server-regions", d.regions, "regions the video servers are in, comma separated (server i is in the i-th mod n): each event carries its server's region, for the lists per region (--groups); list a region twice to give it twice the servers (\"\": none)")
}

// addRateFlags adds --rate, --malformed and --speedup (loadgen, up) with the command's
// defaults; speedupUsage says what --speedup paces in this command.
func addRateFlags(fs *pflag.FlagSet, rate, malformed, speedup *float64, defRate, defMalformed, defSpeedup float64, speedupUsage string) {
	fs.Float64Var(rate, "rate", defRate, "views per second of event time (events/s are fewer: pre-summed per server per second)")
	fs.Float64Var(malformed, "malformed", defMalformed, "malformed messages per valid event (0.001 is one in a thousand; they land in the DLQ)")
	fs.Float64Var(speedup, "speedup", defSpeedup, speedupUsage)
}

// config builds the stream config; now is the wall clock for --start now.
func (f *streamFlags) config(now time.Time) (stream.Config, error) {
	c := stream.DefaultConfig()
	c.Zipf, c.Servers, c.Late, c.LateBy, c.Seed = f.zipf, f.servers, f.late, f.lateBy, uint64(f.seed)
	if f.items < 1 || f.items > stream.MaxItems {
		return c, usagef("--items %d: use 1..%d", f.items, stream.MaxItems)
	}
	c.Items = int(f.items)
	if f.zipf <= 0 || f.zipf > stream.MaxZipfExponent {
		return c, usagef("--zipf %g: use a value in (0, %d], such as 1.1", f.zipf, stream.MaxZipfExponent)
	}
	if f.servers < 1 {
		return c, usagef("--servers %d: use at least 1", f.servers)
	}
	if f.seed < 0 {
		return c, usagef("--seed %d: use a non-negative number", f.seed)
	}
	if f.late < 0 || f.late > 1 {
		return c, usagef("--late %g: use a fraction from 0 to 1 (0.01 is 1%%)", f.late)
	}
	for _, v := range f.viral {
		if v == "" {
			continue // --viral "": none
		}
		vs, err := stream.ParseViral(v)
		if err != nil {
			return c, usagef("--viral: %v", strings.TrimPrefix(err.Error(), stream.ErrConfig.Error()+": "))
		}
		c.Viral = append(c.Viral, vs...)
	}
	c.Regions = splitList(f.regions)
	for _, r := range c.Regions {
		if err := (event.Event{ItemID: "V", Count: 1, TS: stream.DefaultStart, Region: r}).Validate(); err != nil {
			return c, usagef("--server-regions: region %q: %v", r, err)
		}
	}
	start, err := parseWhenAt("start", cmp.Or(f.start, "now"), now)
	if err != nil {
		return c, err
	}
	c.Start = start.Truncate(time.Second)
	return c, nil
}

// loadgenCommandFlags are loadgen's flags: the load generator's flag group (loadFlags) and
// what only the command has.
type loadgenCommandFlags struct {
	load                    loadFlags
	kf                      *kafkaFlags
	salt                    *saltFlags
	truth, metadata, thumb  string
	partitions              int
	duration, progressEvery time.Duration
}

// addLoadgenCommandFlags adds loadgen's flags to fs.
func addLoadgenCommandFlags(fs *pflag.FlagSet) *loadgenCommandFlags {
	f := &loadgenCommandFlags{duration: 5 * time.Minute}
	f.kf = addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	addPartitionsFlag(fs, &f.partitions, 8, "partitions of the topic when it has to be created")
	fs.Var(spanFlag{&f.duration}, "duration", "event time to produce, such as 5m or 2d (0: until Ctrl-C)")
	addRateFlags(fs, &f.load.rate, &f.load.malformed, &f.load.speedup, 50_000, 0, 1, "event time runs this many times faster than the wall clock (0: no pacing, as fast as possible)")
	fs.StringVar(&f.truth, "truth", "", "write the exact per-minute counts of what was acknowledged to this file (JSON lines)")
	fs.DurationVar(&f.progressEvery, "progress-every", 5*time.Second, "interval of the status line on stderr")
	fs.StringVar(&f.metadata, "metadata", "", "write the catalog's titles and thumbnail URLs to this CSV file (the --titles format of merge, batch and up)")
	fs.StringVar(&f.thumb, "thumbnail-url", "", "thumbnail URL template for --metadata, {id} is the item id (empty: no thumbnails)")
	addStreamFlags(fs, &f.load.stream, "now")
	f.salt = addSaltFlags(fs)
	return f
}

func newLoadgenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Produce a Zipf stream of pre-summed view events to Kafka, with its exact ground truth",
		Long: `loadgen produces synthetic view events to the views topic, keyed by item_id, the way
video servers do (docs/requirements.md, "Pre-summed events"): --rate views a second of
event time are drawn by Zipf's law over --items items (V1 the most viewed), each lands on
one of --servers servers, and each server sends one event per item per second with the sum.
So events/s <= views/s: --rate counts views, and the status line shows both.

--viral makes items take a share of all views for a while, ITEM@+AT:SHARE:FOR[:RAMP]:
  V42@+2m:30%:10m        from 2 minutes after the start, V42 gets 30% of views for 10 minutes
  Vnew@+1h:5%:2h:30m     a new item rising linearly to 5% over 30 minutes, then held
Durations take Go units plus whole days (90s, 10m, 2h, 3d, 1d12h).

--late shifts a fraction of events back by --late-by (a server that buffered them);
--malformed adds that many garbage messages per valid event, of every kind the decoder
rejects (bad JSON, unknown field, count 0, bad ts, missing field, trailing data, too
large...), for the dead-letter path.

--truth writes the exact per-minute counts of every valid event the broker acknowledged,
as JSON lines (docs/accuracy.md), on exit, including after Ctrl-C.

Pacing: event time starts at --start and runs --speedup times faster than the wall clock;
each event second is sent once it is over. --speedup 60 sends an hour of event time a
minute, at 60 x --rate views a wall second. Limits: with --start now, event time runs
ahead of the wall clock by (speedup-1) x elapsed, so anything comparing event time with
the wall clock sees events from the future: the speed layer's --idle-advance, freshness
metrics, and a batch job deciding by the clock which windows are closed. Use --start -30d
(or an RFC 3339 time in the past) with a speedup to replay history that catches up with
now. --speedup 0 sends as fast as Kafka takes it. When the producer cannot keep up, the
status line says how far it is behind the pace.

--metadata writes the catalog's display metadata before producing: a CSV of item_id, an
invented title and --thumbnail-url with {id} replaced, the format --titles reads (merge,
batch, up), so the served lists show titles and thumbnails.

--salt-items and --salt-threshold salt hot items (docs/scale-out.md, "Hot keys"): their
events are spread over --salt-ways sub-keys, so they land on several partitions; the event's
item_id is unchanged, and the lists are the same.

--duration is event time (0: until Ctrl-C). Ctrl-C stops generating, writes what was
already generated (whole seconds), closes the writer and writes the truth.`,
		Example: `  # 5 minutes of event time at 50,000 views/s against the local Kafka
  trending loadgen --kafka 127.0.0.1:39092 --rate 50000 --duration 5m --items 1e6 --zipf 1.1 \
    --servers 500 --viral V42@+2m:30%:10m --late 0.01 --late-by 2m --malformed 0.001 \
    --truth truth.jsonl --seed 1

  # a demo: a day of event time in 24 minutes, ending now
  trending loadgen --rate 2000 --duration 1d --speedup 60 --start -1d

  # as fast as the broker takes it
  trending loadgen --rate 100000 --duration 1m --speedup 0`,
		Args: cobra.NoArgs,
	}
	f := addLoadgenCommandFlags(cmd.Flags())

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		switch {
		case f.duration < 0 || f.duration%time.Second != 0:
			return usagef("--duration %s: use a whole number of seconds, or 0 to run until Ctrl-C", f.duration)
		case math.IsNaN(f.load.speedup) || math.IsInf(f.load.speedup, 0):
			return usagef("--speedup %g: use a number such as 1 or 60 (0: no pacing)", f.load.speedup)
		case f.progressEvery <= 0:
			return usagef("--progress-every %s: use a positive interval such as 5s", f.progressEvery)
		case f.partitions < 1:
			return usagef("--partitions %d: use at least 1", f.partitions)
		}
		rc, err := loadConfig(&f.load, f.duration, time.Now())
		if err != nil {
			return err
		}
		sc := rc.Stream
		kc, err := f.kf.client(cmd)
		if err != nil {
			return err
		}
		topic := f.kf.names().Views
		salter, saltRole, err := f.salt.build(kc, f.kf.names(), a.log, a.registry, "loadgen")
		if err != nil {
			return err
		}
		if f.truth != "" {
			if err := checkWritableDir(f.truth); err != nil {
				return usagef("--truth %s: %v", f.truth, err)
			}
		}
		if f.thumb != "" && f.metadata == "" {
			return usagef("--thumbnail-url needs --metadata: the thumbnails go into the metadata file")
		}
		if f.metadata != "" {
			if err := checkWritableDir(f.metadata); err != nil {
				return usagef("--metadata %s: %v", f.metadata, err)
			}
			if err := writeMetadata(f.metadata, sc, f.thumb); err != nil {
				return err
			}
			a.log.Info("metadata written", "file", f.metadata, "items", sc.Items)
		}
		if _, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: topic, Partitions: f.partitions}); err != nil {
			return fmt.Errorf("loadgen: %w", err)
		}
		if saltRole.run != nil {
			sctx, stopSalt := context.WithCancel(context.WithoutCancel(cmd.Context()))
			saltDone := make(chan error, 1)
			go func() { saltDone <- saltRole.run(sctx) }()
			defer func() {
				stopSalt()
				if err := <-saltDone; err != nil {
					a.log.Warn("sharing hot items", "err", err)
				}
			}()
		}
		w := newLoadWriter(kc, topic)
		var tr *stream.Truth
		if f.truth != "" {
			tr = stream.NewTruth()
		}
		errOut := cmd.ErrOrStderr()
		a.log.Info("loadgen starting", "kafka", kc.Brokers(), "topic", topic, "rate_views_per_s", f.load.rate,
			"duration", f.duration, "speedup", rc.Speedup, "start", sc.Start.Format(time.RFC3339), "seed", sc.Seed)
		kh, err := loadHealth(a.log, a.registry)
		if err != nil {
			return err
		}
		rc.Truth, rc.ProgressEvery, rc.Salter, rc.Kafka = tr, f.progressEvery, salter, kh
		rc.Progress = func(s loadgen.Stats) { fmt.Fprintf(errOut, "loadgen: %s\n", s) }
		st, runErr := loadgen.Run(cmd.Context(), rc, w)
		closeErr := w.Close()
		if tr != nil {
			if err := writeTruth(f.truth, tr); err != nil {
				return err
			}
			a.log.Info("truth written", "file", f.truth, "views", tr.Views(), "items", tr.Items())
		}
		if runErr != nil {
			return fmt.Errorf("loadgen: %w", runErr)
		}
		if closeErr != nil {
			return fmt.Errorf("loadgen: flush the writer: %w", closeErr)
		}
		v, e, _ := st.Rate()
		a.log.Info("loadgen done", "views", st.Views, "events", st.Events, "malformed", st.Malformed,
			"views_per_s", math.Round(v), "events_per_s", math.Round(e), "elapsed", st.Elapsed.Round(time.Millisecond))
		return nil
	}
	return cmd
}

// newLoadWriter is the load generator's writer, loadgen's and up's: a second's events go out
// in one call, so it fills produce requests.
func newLoadWriter(kc *eventlog.Client, topic string) *eventlog.Writer {
	w := kc.NewWriter(topic)
	w.BatchSize = 1000
	return w
}

// writeMetadata writes the display metadata of the catalog of sc to file, atomically (a merger
// reading it meanwhile sees the old file or the new one).
func writeMetadata(file string, sc stream.Config, thumbnail string) error {
	g, err := stream.NewGenerator(sc)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".metadata-*")
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriter(tmp)
	err = g.WriteMetadata(bw, thumbnail)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		return fmt.Errorf("metadata %s: %w", file, err)
	}
	return nil
}

// checkWritableDir fails early, before producing anything, when file's
// directory does not exist.
func checkWritableDir(file string) error {
	st, err := os.Stat(filepath.Dir(file))
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Dir(file))
	}
	return nil
}

// writeTruth writes the truth to a temporary file and renames it into place,
// so a reader never sees half a truth.
func writeTruth(file string, tr *stream.Truth) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	_, werr := tr.WriteTo(tmp)
	perr := tmp.Chmod(0o644) // CreateTemp makes it 0600; the truth is for other tools to read
	cerr := tmp.Close()
	if err := firstErr(werr, perr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write truth %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
