package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"strings"
	"trending/internal/setting"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// usageError marks a mistake in the command line or configuration: main exits 2 for it and
// points at --help, instead of 1 for a failure at run time.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// globals are the flags every subcommand shares.
type globals struct {
	configFile string
	logLevel   string
	logFormat  string
}

// app is what PersistentPreRunE builds once for the chosen subcommand.
type app struct {
	log      *slog.Logger
	registry *prometheus.Registry
	// logOut is where log lines go (stderr); a progress bar on the same terminal takes it
	// over for a while (progress.go) so that lines print above the bar instead of through it.
	logOut *logWriter
}

type appKey struct{}

// appFrom returns the logger and metrics registry built for this run.
func appFrom(ctx context.Context) *app {
	a, _ := ctx.Value(appKey{}).(*app)
	if a == nil {
		panic("BUG: appFrom called outside a trending subcommand")
	}
	return a
}

func newRootCommand() *cobra.Command {
	var g globals
	root := &cobra.Command{
		Use:   "trending",
		Short: "Top K items over live time windows, from a stream of billions of events a day",
		Long: `trending counts view events from Kafka and serves the top K items (videos, songs,
topics) of the last hour, day and month, and of each calendar hour, day and month.

  speed layer   live windows from minute buckets, exact or count-min sketch per window
  archive       every raw event as Parquet on S3, the source of truth
  batch layer   exact recompute of closed windows in ClickHouse
  serving       an HTTP API where every read is one precomputed lookup

Configuration comes from flags, then TRENDING_* environment variables (flag --sketch-width
is TRENDING_SKETCH_WIDTH), then an optional YAML file (--config, keys are flag names), then
the defaults shown in each command's --help. Flags win.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd, g.configFile); err != nil {
				return err
			}
			out := &logWriter{w: os.Stderr}
			logger, err := newLogger(out, g.logLevel, g.logFormat)
			if err != nil {
				return err
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cmd.SetContext(context.WithValue(cmd.Context(), appKey{}, &app{log: logger, registry: reg, logOut: out}))
			return nil
		},
	}
	root.SetUsageFunc(usage)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		var iv *pflag.InvalidValueError
		if errors.As(err, &iv) {
			return usagef("--%s %q: %s", iv.GetFlag().Name, iv.GetValue(), valueProblem(iv.GetFlag(), iv.Unwrap()))
		}
		var nx *pflag.NotExistError
		if errors.As(err, &nx) && nx.GetSpecifiedName() != "" && len(nx.GetSpecifiedName()) > 1 {
			// Suggest the nearest flag of this command, as for an unknown command.
			known := map[string]bool{}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && f.Deprecated == "" {
					known[f.Name] = true
				}
			})
			if near := nearest(nx.GetSpecifiedName(), known); near != "" {
				return usagef("%v (did you mean --%s?)", err, near)
			}
		}
		return usageError{err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.configFile, "config", "", "YAML file of settings; keys are flag names (env TRENDING_CONFIG)")
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&g.logFormat, "log-format", "auto", "log format: text, json, or auto (text on a terminal, JSON otherwise)")

	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands registers each capability's command; files add themselves in init so that a
// capability is one file here plus its package.
var subcommands []func() *cobra.Command

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "auto":
		under := w
		if lw, ok := w.(*logWriter); ok {
			under = lw.w
		}
		if f, ok := under.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, jsonOpts(opts))), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, jsonOpts(opts))), nil
	default:
		return nil, usagef("--log-format %q: use text, json or auto", format)
	}
}

// jsonOpts writes durations as seconds (a float), which log pipelines read as they are; slog's
// JSON handler would write them as integer nanoseconds. Text logs keep Go's "1.5s".
func jsonOpts(o *slog.HandlerOptions) *slog.HandlerOptions {
	o2 := *o
	o2.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindDuration {
			a.Value = slog.Float64Value(a.Value.Duration().Seconds())
		}
		return a
	}
	return &o2
}

// fieldFlags names the flag of each Config field that packages report a bad setting by
// (internal/setting): the same names on every command, except where a command overrides
// them (up's batch lateness is --batch-lateness).
var fieldFlags = map[string]string{
	"Kafka": "--kafka", "Brokers": "--kafka", "Objects": "--s3-endpoint", "Bucket": "--s3-bucket",
	"K": "--k", "AllowedLateness": "--lateness", "Parallel": "--parallel", "LookbackDays": "--lookback-days",
	"M": "--m", "Sketch.Width": "--sketch-width", "Sketch.Depth": "--sketch-depth", "SinceDays": "--since-days",
	"Window.K": "--k", "Window.M": "--m", "Window.AllowedLateness": "--lateness", "Window.Sketch.Width": "--sketch-width",
	"Window.Sketch.Depth": "--sketch-depth", "Window.SinceDays": "--since-days", "KeepCheckpoints": "--keep-checkpoints",
	"Partitions": "--partitions", "PartialsPartitions": "--partials-partitions", "Staleness": "--staleness", "Floor": "--topics-floor",
	"BaseFactor": "--base-factor", "Blocklist": "--blocklist", "Titles": "--titles",
	"Region": "--s3-region", "ConsumerGroup": "--consumer-group", "Groups": "--groups", "GroupSketchWidth": "--group-sketch-width",
}

// usageOf is a usage error for err, with every setting it names as the flag of this
// command that sets it (overrides first, then fieldFlags).
func usageOf(err error, overrides map[string]string) error {
	flags := fieldFlags
	if len(overrides) > 0 {
		flags = maps.Clone(fieldFlags)
		maps.Copy(flags, overrides)
	}
	return usageError{setting.Flags(err, flags)}
}
