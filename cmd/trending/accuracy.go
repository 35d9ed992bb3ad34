package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"trending/internal/stream"
	"trending/speed/accuracy"
	"trending/speed/plan"
)

func init() { subcommands = append(subcommands, newAccuracyCommand) }

func newAccuracyCommand() *cobra.Command {
	var (
		sf                 streamFlags
		views              int64
		span               time.Duration
		partitions, points int
		targetRatio        float64
		minRecall          float64
		asJSON, check      bool
		vsFrequent         bool
	)
	cmd := &cobra.Command{
		Use:   "accuracy",
		Short: "Measure the speed layer's lists against exact ground truth on a generated Zipf stream",
		Long: `accuracy generates a Zipf stream of pre-summed view events (as 'trending loadgen' does,
without Kafka), feeds it to --partitions speed-layer window partitions with items split by
Kafka's key hash, merges their lists as the merger does, and compares every window with the
exact truth at --points evenly spaced points of the stream and at the close of every
calendar period ("final" rows, one per window for all its periods).

Columns, per window and point:
  RECALL, PRECISION  recall@K and precision@K (smallest over the row's lists). Ties at the
                     K-th count are interchangeable: precision is the share of reported items
                     whose true count reaches the K-th; recall the share of the K places held
                     by a right item (docs/accuracy.md).
  EXACT              lists equal to the true top K, items and counts, out of LISTS
  MAX/MEAN OVER      overcount of the reported items: reported minus true count
  BOUND              the stated count-min bound (e/w) x N of the largest partition, and
                     BOUND/KTH, that bound over the true K-th count (the month sketch: 4.86%)
  OVER BOUND         reported items whose overcount exceeded their partition's bound
                     (allowed: a fraction e^-depth)
  MISSING            items with a true count at least twice the K-th that were not listed

--sketch-width 0 (the default here) scales the month sketch's sizing (2^18 x 5, a bound of
4.86% of the K-th count: docs/requirements.md, "Sketches") to this stream: the power of two
giving the bound the same 4.86% of the K-th count, e / (0.0486 x partitions x p_K), where
p_K is the K-th item's Zipf share.

The goals (printed at the end; --check exits 1 when one is missed): exact windows equal the
truth; sketch windows reach --min-recall; no heavy item missing; no undercount; the share
over the bound below e^-depth.`,
		Example: `  # the default window modes (hour and day exact, month in sketches), a million items,
  # 4 million views over 35 days
  trending accuracy --items 1e6 --views 4e6 --span 35d --zipf 1.1 --seed 1

  # every window in sketches, half the scaled width, as JSON
  trending accuracy --hour-mode sketch --day-mode sketch --sketch-width 8192 --json

  # the frequent-items mode against count-min at the same memory (docs/accuracy.md)
  trending accuracy --vs-frequent --items 2e5 --views 1.5e6 --span 2h --sketch-width 512 --points 2`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	views, span = 4_000_000, 35*24*time.Hour
	fs.Var(countFlag{&views}, "views", "views in the stream")
	fs.Var(spanFlag{&span}, "span", "event time the stream covers (35d fills and slides the month and closes a calendar month)")
	addPartitionsFlag(fs, &partitions, 4, "partitions; items are split by Kafka's key hash")
	fs.IntVar(&points, "points", 4, "evenly spaced points of the stream at which every window is compared")
	fs.Float64Var(&targetRatio, "target-ratio", accuracy.MonthSketchRatio, "bound over K-th count that --sketch-width 0 scales to")
	fs.Float64Var(&minRecall, "min-recall", 0.99, "recall@K goal of sketch windows")
	addJSONFlag(fs, &asJSON, "the report")
	fs.BoolVar(&vsFrequent, "vs-frequent", false, "compare the frequent-items mode with the count-min mode at the same memory per bucket (a sliding hour and the all-time window) instead")
	fs.BoolVar(&check, "check", false, "exit 1 when a goal is missed")
	addStreamFlags(cmd.Flags(), &sf, accuracy.DefaultStart.Format(time.RFC3339))
	wf := addWindowFlags(fs, 0, 0, "")
	if f := fs.Lookup("sketch-width"); f != nil {
		f.Usage = "count-min sketch width (power of two); 0 scales the month sketch's error ratio (4.86% of the K-th count) to this stream"
	}
	if f := fs.Lookup("frequent-capacity"); f != nil {
		// The window flags' setting, read here with --vs-frequent: unset, it is 0.
		f.Usage, f.DefValue = "with --vs-frequent: the summaries' capacity; 0 takes the memory of one count-min bucket", "0"
		wf.frequentCapacity = 0
	}
	// The harness measures the lists of all items: the lists per group are not its.
	for _, name := range []string{"group-by", "groups", "groups-max", "group-sketch-width"} {
		_ = fs.MarkHidden(name)
	}

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sc, err := sf.config(time.Now())
		if err != nil {
			return err
		}
		if wf.windows.groupsGiven() || fs.Changed("group-sketch-width") {
			return usagef("accuracy measures the lists of all items: drop --group-by, --groups, --groups-max and --group-sketch-width")
		}
		if wf.sketchWidth < 0 {
			return usagef("--sketch-width %d: use a power of two, or 0 to scale the month sketch's sizing", wf.sketchWidth)
		}
		scaledWidth := wf.sketchWidth == 0
		if scaledWidth {
			wf.sketchWidth = 1 << 18 // placeholder so the window flags validate; replaced below
		}
		wc, err := wf.config()
		if err != nil {
			return err
		}
		if scaledWidth {
			wc.Sketch.Width = 0
		}
		switch {
		case views < 1:
			return usagef("--views %d: use at least 1", views)
		case span < time.Second || span%time.Second != 0:
			return usagef("--span %s: use a whole number of seconds, such as 35d or 6h", span)
		case partitions < 1 || partitions > 1024:
			return usagef("--partitions %d: use 1..1024", partitions)
		case points < 1 || points > 1000:
			return usagef("--points %d: use 1..1000", points)
		case !(targetRatio > 0):
			return usagef("--target-ratio %g: use a positive fraction such as 0.0486", targetRatio)
		}
		cfg := accuracy.DefaultConfig()
		cfg.Stream, cfg.Views, cfg.Span, cfg.Partitions, cfg.Points, cfg.Window, cfg.TargetRatio = sc, views, span, partitions, points, wc, targetRatio
		if err := cfg.Validate(); err != nil {
			return usagef("%v", err)
		}
		cfg.Progress = accuracyProgress(cmd.ErrOrStderr())
		if vsFrequent {
			return runAccuracyFrequent(cmd, cfg, wf.frequentCapacity, asJSON, check)
		}
		rep, err := accuracy.Run(cmd.Context(), cfg)
		if err != nil {
			return fmt.Errorf("accuracy: %w", err)
		}
		missed := rep.Check(minRecall)
		out := cmd.OutOrStdout()
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(struct {
				accuracy.Report
				Missed []string `json:"goals_missed"`
			}{rep, missed}); err != nil {
				return err
			}
		} else if err := writeAccuracy(out, rep, missed, minRecall); err != nil {
			return err
		}
		if check && len(missed) > 0 {
			return fmt.Errorf("accuracy: %d goals missed", len(missed))
		}
		return nil
	}
	return cmd
}

// writeAccuracy prints the report for people.
func writeAccuracy(out io.Writer, r accuracy.Report, missed []string, minRecall float64) error {
	ew := &errWriter{w: out}
	viral := ""
	if len(r.Viral) > 0 {
		viral = ", viral " + strings.Join(r.Viral, " ")
	}
	ew.printf("accuracy: %s items, Zipf %g, seed %d%s; %s views in %s events over %s from %s; %d partitions, K=%d, M=%d\n",
		plan.FormatCount(float64(r.Items)), r.Zipf, r.Seed, viral, plan.FormatCount(float64(r.Views)), plan.FormatCount(float64(r.Events)),
		r.Span, r.Start.Format(time.RFC3339), r.Partitions, r.K, r.M)
	how := "set by --sketch-width"
	if r.Scaled {
		how = fmt.Sprintf("scaled from the month sketch: bound %s of the K-th count aimed, %s planned", plan.FormatPercent(r.TargetRatio), plan.FormatPercent(r.PlannedRatio))
	}
	ew.printf("sketches: %d x %d (%s); late events %d counted late, %d too late\n\n", r.SketchWidth, r.SketchDepth, how, r.Late, r.TooLate)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "WINDOW\tMODE\tAT\tLISTS\tK-TH\tN\tRECALL\tPRECISION\tEXACT\tMAX OVER\tMEAN OVER\tBOUND\tBOUND/KTH\tOVER BOUND\tMISSING\t")
	for _, row := range r.Rows {
		bound, ratio := "-", "-"
		if row.Mode == "sketch" {
			bound, ratio = fmt.Sprintf("%.1f", row.Bound), plan.FormatPercent(row.BoundRatio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.3f\t%.3f\t%d/%d\t%d\t%.2f\t%s\t%s\t%d\t%d\t\n",
			row.Window, row.Mode, row.At, row.Lists, row.KthCount, row.N, row.Recall, row.Precision, row.ExactLists, row.Lists,
			row.MaxOvercount, row.MeanOvercount, bound, ratio, row.OverBound, row.MissingHeavy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(missed) == 0 {
		ew.printf("\ngoals met: exact windows equal the truth, sketch recall@%d >= %.2f, no heavy item missing, no undercount, over-bound share below e^-%d (%s elapsed)\n",
			r.K, minRecall, r.SketchDepth, r.Elapsed.Round(time.Millisecond))
	} else {
		ew.printf("\ngoals missed:\n")
		for _, m := range missed {
			ew.printf("  %s\n", m)
		}
	}
	return ew.err
}

// accuracyProgress shows how much of the stream's event time the harness has fed: a bar of
// hours on a terminal, else a line at every tenth of the span.
func accuracyProgress(w io.Writer) func(done, total time.Duration) {
	if m := newMeter(w, "hours"); m != nil {
		return func(done, total time.Duration) {
			m.step(int(done/time.Hour), int(total/time.Hour), "event time fed")
		}
	}
	last := -1
	return func(done, total time.Duration) {
		if tenth := int(10 * done / total); tenth > last {
			last = tenth
			fmt.Fprintf(w, "accuracy: %d%% of the stream fed (%s of %s event time)\n", 10*tenth, stream.FormatSpan(done), stream.FormatSpan(total))
		}
	}
}
