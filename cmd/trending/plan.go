package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"trending/model/windowset"
	"trending/speed/plan"
	"trending/speed/topics"
	"trending/speed/window"
)

func init() { subcommands = append(subcommands, newPlanCommand) }

// planFlags maps each plan.Input field to its flag, so a validation error names the flag to
// change. plan_test.go checks every field has one.
var planFlags = map[string]string{
	"EventsPerDay":             "events-per-day",
	"DistinctPerMinute":        "distinct-per-minute",
	"DistinctPerHour":          "distinct-per-hour",
	"DistinctPerDay":           "distinct-per-day",
	"DistinctPerMonth":         "distinct-per-month",
	"EntryBytes":               "entry-bytes",
	"Partitions":               "partitions",
	"SketchWidth":              "sketch-width",
	"SketchDepth":              "sketch-depth",
	"CounterBytes":             "counter-bytes",
	"KthCount":                 "kth-count",
	"CandidateFloor":           "candidate-floor",
	"ErrorTolerance":           "error-tolerance",
	"FrequentError":            "frequent-error",
	"MemoryBudgetPerPartition": "memory-budget",
	"MemoryBudgetTotal":        "memory-budget-total",
	"MonthDays":                "month-days",
	"PeakFactor":               "peak-factor",
	"Windows":                  "window-set",
	"Groups":                   "groups",
	"GroupPairs":               "group-pairs",
	"GroupSketchWidth":         "group-sketch-width",
	"GroupShare":               "group-share",
	"CapPairsPerHour":          "cap-pairs",
	"CapKeepHours":             "cap-keep-hours",
	"ViewsPerEvent":            "views-per-event",
	"ArchiveBytesPerEvent":     "archive-bytes-per-event",
	"RetentionDays":            "retention-days",
}

func newPlanCommand() *cobra.Command {
	in := plan.DefaultInput()
	var asJSON, withTopics bool
	var wsf *windowSetFlags
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Work out memory per window, exact or count-min sketch, and the sketch's error bound",
		Long: `plan does the capacity arithmetic behind the speed layer (docs/requirements.md, "Capacity"
and "Sketches"), so the choice between exact counts and sketches per window is a number
anyone can recompute. It reads nothing and changes nothing.

Exact counting keeps one count map per bucket plus running totals for the window:
  hour   60 minute maps x distinct-per-minute x entry-bytes + distinct-per-hour x entry-bytes
  day    24 hour maps   x distinct-per-hour   x entry-bytes + distinct-per-day  x entry-bytes
  month  month-days day maps x distinct-per-day x entry-bytes + distinct-per-month x entry-bytes
spread evenly over the partitions, because events are partitioned by item.

Sketch counting keeps, per partition, one count-min sketch per bucket, one for the open
bucket and a running window sketch (the month: 30 + 1 daily + 1 month = 32), each
sketch-depth x sketch-width x counter-bytes, plus a candidate set of the items whose estimate
passed the floor (half the K-th count), at most N / (floor - overcount) of them.

A window is exact when its exact state fits both budgets, --memory-budget per partition and
--memory-budget-total over all partitions; otherwise it uses sketches, if they are smaller.
The per-partition budget (2 GiB) keeps a task's checkpoint uploadable well inside the minute
between checkpoints; the total (100 GB) is the fleet's bill, which more partitions do not
shrink: at 10x the day is the same 1.36 GB per task over 320 tasks, but 435 GB in all.

For each sketch window the error bound is stated: an estimate is never low and at most
e/w x N high, with probability 1 - e^-d, where N is what one partition adds over the window.
The K-th count of shorter windows is the month's scaled by length (conservative: trending
items are burstier than that).

Sizes are decimal, as in docs/requirements.md (7.5 GB is 7.5e9 bytes). Budgets accept 2GiB,
1.5GB, 512MiB or a plain number of bytes. Counts accept 5e9 notation.

With lists per group value (--groups eu,us,apac, or '*' with --groups-max), every window
also keeps one state per group in its mode: exact, one entry per (group, item) pair of each
bucket, --group-pairs times the window's entries (the pairs per distinct item over all groups:
1 when each item is seen in one region, the number of groups, the default, when every item is
seen in every region); sketch, the window's sketches at --group-sketch-width for every group,
with the largest group's error bound (its share of the events: --group-share, default all).

--topics adds the trending-topics sizing of docs/topics.md (minute sketches, error per
minute and window, baselines, dedupe) at its own defaults; 'trending topics plan' takes its
inputs as flags.`,
		Example: `  # 5 billion views a day (the defaults: 'trending plan' alone prints the same)
  trending plan --events-per-day 5e9 --distinct-per-minute 2e6 --distinct-per-hour 30e6 \
    --distinct-per-day 150e6 --distinct-per-month 500e6 --entry-bytes 50 --partitions 32 \
    --sketch-width 262144 --sketch-depth 5 --kth-count 1e6

  # 10x (docs/scale-out.md): ten times the views and the distinct items, 320 partitions;
  # the hour stays exact at 234 MB per task, the 435 GB day moves to sketches
  trending plan --events-per-day 5e10 --distinct-per-minute 2e7 --distinct-per-hour 3e8 \
    --distinct-per-day 1.5e9 --distinct-per-month 5e9 --partitions 320

  # topics sketches (docs/topics.md): 65,536 x 5 x 4 B, 1.31 MB a minute, 79 MB for 60 minutes
  trending plan --sketch-width 65536 --counter-bytes 4

  # lists per region: three regions, each item seen in 1.4 of them a bucket on average,
  # the regions' sketches a quarter as wide
  trending plan --groups eu,us,apac --group-pairs 1.4 --group-sketch-width 65536

  # with the trending-topics sizing (docs/topics.md) after the plan
  trending plan --with-topics

  # for machines ({"plan": ..., "topics": ...} with --with-topics)
  trending plan --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wsf.explicit() {
				ws, err := wsf.set()
				if err != nil {
					return err
				}
				if wsf.fs.Changed("window-set") || wsf.fs.Changed("window-preset") || wsf.fs.Changed("windows-file") {
					in.Windows = planWindows(ws)
				}
				in.Groups = ws.Groups.Limit()
			}
			p, err := plan.Compute(in)
			if err != nil {
				return planUsageError(err)
			}
			var ts topics.Sizing
			if withTopics {
				if ts, err = topics.ComputeSizing(topics.DefaultSizingInput()); err != nil {
					return fmt.Errorf("topics sizing: %w", err)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if withTopics {
					return enc.Encode(struct {
						Plan   plan.Plan     `json:"plan"`
						Topics topics.Sizing `json:"topics"`
					}{p, ts})
				}
				return enc.Encode(p)
			}
			if err := writePlan(out, p); err != nil {
				return err
			}
			if in.Windows == nil {
				// The requirements' three windows: say what the served default set costs.
				served := in
				served.Windows = planWindows(windowset.Default())
				if sp, err := plan.Compute(served); err == nil {
					if _, err := fmt.Fprintf(out, "this plan is the requirements' hour, day and month; the windows speed, merge and serve run by default add the calendar hour, day and month and all time: %s per partition, %s in all ('trending plan --window-preset default' sizes them)\n",
						plan.FormatBytes(sp.PerPartitionBytes), plan.FormatBytes(sp.TotalBytes)); err != nil {
						return err
					}
				}
			}
			if !withTopics {
				return nil
			}
			if _, err := fmt.Fprintln(out); err != nil {
				return err
			}
			return writeTopicsSizing(out, ts)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&in.EventsPerDay, "events-per-day", in.EventsPerDay, "sum of event counts (views) a day")
	f.Float64Var(&in.DistinctPerMinute, "distinct-per-minute", in.DistinctPerMinute, "distinct items seen in a minute")
	f.Float64Var(&in.DistinctPerHour, "distinct-per-hour", in.DistinctPerHour, "distinct items seen in an hour")
	f.Float64Var(&in.DistinctPerDay, "distinct-per-day", in.DistinctPerDay, "distinct items seen in a day")
	f.Float64Var(&in.DistinctPerMonth, "distinct-per-month", in.DistinctPerMonth, "distinct items seen in a month")
	f.Float64Var(&in.EntryBytes, "entry-bytes", in.EntryBytes, "bytes per exact counter entry: id, count and hash-map overhead")
	addPartitionsFlag(f, &in.Partitions, in.Partitions, "log partitions, one counting task each")
	addSketchShapeFlags(f, &in.SketchWidth, in.SketchWidth, "count-min sketch columns (w)", &in.SketchDepth, "count-min sketch rows (d)",
		&in.CounterBytes, "bytes per sketch cell: 1, 2, 4 or 8 (the trending-topics sizing uses 4)")
	f.Float64Var(&in.KthCount, "kth-count", in.KthCount, "assumed month count of the K-th item")
	f.Float64Var(&in.CandidateFloor, "candidate-floor", in.CandidateFloor, "month estimate an item needs to become a candidate; 0 is half of --kth-count")
	f.Float64Var(&in.ErrorTolerance, "error-tolerance", in.ErrorTolerance, "acceptable overcount as a fraction of the K-th count (a warning beyond it)")
	f.Float64Var(&in.FrequentError, "frequent-error", in.FrequentError, "the bound wanted of a frequent window (mode frequent), as a fraction of its K-th count: its summaries' capacity is sized to it (0: --error-tolerance)")
	f.Var(bytesFlag{&in.MemoryBudgetPerPartition}, "memory-budget", "exact state one task may hold for one window, such as 2GiB or 1.5e9")
	f.Var(bytesFlag{&in.MemoryBudgetTotal}, "memory-budget-total", "exact state one window may take over all partitions")
	f.IntVar(&in.MonthDays, "month-days", in.MonthDays, "days in the month window")
	f.Float64Var(&in.PeakFactor, "peak-factor", in.PeakFactor, "peak event rate over the average")
	addJSONFlag(f, &asJSON, "the plan")
	f.BoolVar(&withTopics, "with-topics", false, "add the trending-topics sizing of docs/topics.md (trending topics plan for its flags)")
	wsf = addWindowSetFlags(f, "")
	f.Float64Var(&in.GroupPairs, "group-pairs", in.GroupPairs, "with --groups: (group, item) pairs of a bucket per distinct item, over all groups: 1 (each item seen in one group) to the number of groups (0: that, every item in every group)")
	addGroupSketchWidthFlag(f, &in.GroupSketchWidth, in.GroupSketchWidth)
	f.Float64Var(&in.GroupShare, "group-share", in.GroupShare, "with --groups: the largest group's share of the events, for its sketches' error bound (0: 1, all of them)")
	f.Float64Var(&in.CapPairsPerHour, "cap-pairs", in.CapPairsPerHour, "per-account caps (speed --cap-views): distinct (account, item) pairs an hour over the topic, to size each partition's caps' table (--cap-slots); 0: no caps")
	f.Float64Var(&in.ViewsPerEvent, "views-per-event", in.ViewsPerEvent, "views one archived event holds on average (pre-summed per server and second), for the archive's size (0: 1, a row a view)")
	f.Float64Var(&in.ArchiveBytesPerEvent, "archive-bytes-per-event", in.ArchiveBytesPerEvent, "bytes an archived event takes in Parquet (0: the measured 3.9, docs/archive.md)")
	f.IntVar(&in.RetentionDays, "retention-days", in.RetentionDays, "days raw events are kept (trending archive retention --days), for the archive's size (0: 365)")
	f.IntVar(&in.CapKeepHours, "cap-keep-hours", in.CapKeepHours, "with --cap-pairs: hours before the newest a partition keeps its caps (0: 2, the speed layer's)")
	return cmd
}

// planWindows is the plan's form of a configured window set.
func planWindows(ws windowset.Set) []plan.Window {
	out := make([]plan.Window, 0, len(ws.Windows))
	for _, w := range ws.Windows {
		pw := plan.Window{Name: w.Name, Kind: w.Kind, Span: w.Span, Mode: w.Mode, Capacity: w.Capacity,
			LengthMinutes: int(w.Length / time.Minute), BucketMinutes: int(w.Bucket / time.Minute), HalfLifeMinutes: int(w.HalfLife / time.Minute)}
		if w.Kind == windowset.Calendar {
			pw.Name = window.CalendarName(w.Span)
		}
		out = append(out, pw)
	}
	return out
}

// bytesFlag is a size flag that reads 2GiB, 1.5GB or a plain number of bytes.
type bytesFlag struct{ v *float64 }

func (b bytesFlag) String() string {
	if b.v == nil {
		return ""
	}
	return plan.FormatSize(*b.v)
}

func (b bytesFlag) Set(s string) error {
	v, err := plan.ParseBytes(s)
	if err != nil {
		return err
	}
	*b.v = v
	return nil
}

func (bytesFlag) Type() string { return "size" }

// planUsageError turns plan's field errors into one usage error naming flags:
// "--partitions 0: must be at least 1".
func planUsageError(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	flagName := func(field string) string {
		if f, ok := planFlags[field]; ok {
			return "--" + f
		}
		return field
	}
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		var fe *plan.FieldError
		if errors.As(e, &fe) {
			msgs = append(msgs, fe.Format(flagName))
		} else {
			msgs = append(msgs, e.Error())
		}
	}
	return usagef("%s", strings.Join(msgs, "; "))
}

// writePlan prints the plan for people: a table of windows, then the error bounds, the
// sketch sizes, the totals and any warnings.
func writePlan(out io.Writer, p plan.Plan) error {
	in := p.Input
	ew := &errWriter{w: out}
	ew.printf("capacity plan: %s events a day over %d partitions; %s/s on average, %s/s at %gx peak, %s/s per partition\n\n",
		plan.FormatCount(in.EventsPerDay), in.Partitions, plan.FormatCount(p.Rates.PerSecond),
		plan.FormatCount(p.Rates.PeakPerSecond), in.PeakFactor, plan.FormatCount(p.Rates.PeakPerPartitionSecond))

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WINDOW\tBUCKETS\tEXACT\tEXACT/PARTITION\tSKETCH\tSKETCH/PARTITION\tMODE\tWHY")
	for _, w := range p.Windows {
		buckets := fmt.Sprintf("%d %ss", w.Buckets, w.Bucket)
		switch w.Kind {
		case windowset.Sliding:
			if w.Buckets == 1 {
				buckets = "1 " + w.Bucket
			}
		case windowset.Calendar:
			buckets = "totals of the " + w.Bucket
		case windowset.AllTime:
			buckets = "running totals"
		case windowset.Decayed:
			buckets = "one score an item"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", w.Window, buckets,
			plan.FormatBytes(w.ExactBytes), plan.FormatBytes(w.ExactPerPartition),
			plan.FormatBytes(w.SketchBytes), plan.FormatBytes(w.SketchPerPartition), w.Mode, w.Why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ew.printf("\n")
	for _, w := range p.Windows {
		b := w.ErrorBound
		if b == nil {
			continue
		}
		ew.printf("%s sketch error: at most e/w x N = %.3f/%d x %s = %s high per item, with probability 1 - e^-%d = %s; %s of the K-th count (%s)\n",
			w.Window, math.E, in.SketchWidth, plan.FormatCount(b.N), plan.FormatCount(b.Overcount),
			in.SketchDepth, plan.FormatPercent(b.Probability), plan.FormatPercent(b.FractionOfKth), plan.FormatCount(b.KthCount))
		parts := fmt.Sprintf("%d %ss, the open %s, the running %s", w.Buckets, w.Bucket, w.Bucket, w.Window)
		if w.Kind == windowset.Calendar || w.Kind == windowset.AllTime {
			parts = "the running sketch"
		}
		if w.Kind == windowset.Decayed {
			parts = "the decayed float sketch"
		}
		ew.printf("%s sketches: %d per partition (%s) x %s + %s candidates x %s B = %s per partition, %s in all, %.3gx less than exact\n",
			w.Window, w.Sketches, parts, plan.FormatBytes(p.SketchBytes),
			plan.FormatCount(w.Candidates), strconv.FormatFloat(in.EntryBytes, 'g', -1, 64),
			plan.FormatBytes(w.SketchPerPartition), plan.FormatBytes(w.SketchBytes), w.ExactToSketch)
	}
	ew.printf("one sketch: %d x %d x %d B = %s; a trending-topics ring of %d minute sketches = %s per partition\n",
		in.SketchDepth, in.SketchWidth, in.CounterBytes, plan.FormatBytes(p.SketchBytes), p.Ring.Minutes, plan.FormatBytes(p.Ring.Bytes))
	if in.Groups > 0 {
		ew.printf("\nlists per group value: %d groups, %s (group, item) pairs per distinct item of a bucket, each window in its mode\n",
			in.Groups, strconv.FormatFloat(in.GroupPairs, 'g', 3, 64))
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "WINDOW\tMODE\tPER GROUP/PARTITION\tGROUPS/PARTITION\tGROUPS IN ALL\tLARGEST GROUP'S ERROR")
		for _, w := range p.Windows {
			g := w.Groups
			bound := "exact"
			if b := g.ErrorBound; b != nil {
				bound = fmt.Sprintf("%s high (e/%d x %s)", plan.FormatCount(b.Overcount), in.GroupSketchWidth, plan.FormatCount(b.N))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", w.Window, w.Mode, plan.FormatBytes(g.PerGroupPerPartition),
				plan.FormatBytes(g.PerPartition), plan.FormatBytes(g.Bytes), bound)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if p.GroupSketchBytes > 0 {
			ew.printf("one group sketch: %d x %d x %d B = %s\n", in.SketchDepth, in.GroupSketchWidth, in.CounterBytes, plan.FormatBytes(p.GroupSketchBytes))
		}
		ew.printf("lists per group: %s per partition, %s in all (in the totals below)\n",
			plan.FormatBytes(p.GroupPerPartitionBytes), plan.FormatBytes(p.GroupBytes))
	}
	if c := p.Caps; c != nil {
		keep, regions := in.CapKeepHours, ""
		if keep == 0 {
			keep = 2
		}
		if in.Groups > 0 {
			regions = ", twice with regions"
		}
		ew.printf("per-account caps: %s keys per partition (%s pairs an hour over %d partitions, %d hours kept plus the newest%s) at most %.0f%% full: --cap-slots %d x %d B = %s per partition, %s in all (in the totals below)\n",
			plan.FormatCount(c.KeysPerPartition), plan.FormatCount(in.CapPairsPerHour), in.Partitions, keep, regions,
			plan.CapMaxLoad*100, c.Slots, c.SlotBytes, plan.FormatBytes(c.PerPartition), plan.FormatBytes(c.Bytes))
	}
	ew.printf("all windows as chosen: %s per partition, %s in all\n",
		plan.FormatBytes(p.PerPartitionBytes), plan.FormatBytes(p.TotalBytes))
	a := p.Archive
	ew.printf("archive (object store, not in the memory above): %s events a day x %s B = %s a day, %s over %d days; at the seed's %d B an event: %s a day, %s\n",
		plan.FormatCount(a.RowsPerDay), strconv.FormatFloat(a.BytesPerEvent, 'g', -1, 64), plan.FormatBytes(a.BytesPerDay),
		plan.FormatBytes(a.RetentionBytes), a.RetentionDays, plan.SeedArchiveBytesPerEvent, plan.FormatBytes(a.SeedBytesPerDay), plan.FormatBytes(a.SeedRetentionBytes))
	for _, w := range p.Warnings {
		ew.printf("warning: %s\n", w)
	}
	return ew.err
}

// errWriter keeps the first write error so writePlan can print freely and report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
