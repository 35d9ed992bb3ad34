package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"trending/speed/accuracy"
	"trending/speed/plan"
)

// runAccuracyFrequent is `accuracy --vs-frequent`: the frequent-items mode against the
// count-min mode at the same memory per bucket, on the same stream.
func runAccuracyFrequent(cmd *cobra.Command, cfg accuracy.Config, capacity int, asJSON, check bool) error {
	if capacity < 0 {
		return usagef("--frequent-capacity %d: use a positive capacity, or 0 for the memory of one count-min bucket", capacity)
	}
	rep, err := accuracy.RunFrequent(cmd.Context(), cfg, capacity)
	if err != nil {
		return fmt.Errorf("accuracy: %w", err)
	}
	missed := rep.Check()
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			accuracy.FrequentReport
			Missed []string `json:"goals_missed"`
		}{rep, missed}); err != nil {
			return err
		}
	} else if err := writeAccuracyFrequent(out, rep, missed); err != nil {
		return err
	}
	if check && len(missed) > 0 {
		return fmt.Errorf("accuracy: %d goals missed", len(missed))
	}
	return nil
}

func writeAccuracyFrequent(out io.Writer, r accuracy.FrequentReport, missed []string) error {
	ew := &errWriter{w: out}
	ew.printf("accuracy, frequent items vs count-min: %s items, Zipf %g, seed %d; %s views over %s; %d partitions, K=%d, M=%d\n",
		plan.FormatCount(float64(r.Items)), r.Zipf, r.Seed, plan.FormatCount(float64(r.Views)), r.Span, r.Partitions, r.K, r.M)
	ew.printf("per minute bucket: count-min %d x %d = %d B; frequent items capacity %d (largest closed minute measured %d B)\n\n",
		r.SketchWidth, r.SketchDepth, r.SketchBytes, r.Capacity, r.SummaryBytes)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "WINDOW\tAT\tMODE\tK-TH\tN\tRECALL\tPRECISION\tMAX ERROR\tBOUND\tBOUND/KTH\tA PRIORI\tBROKEN\tMISSING\t")
	for _, row := range r.Rows {
		ratio, apriori := "-", "-"
		if row.KthCount > 0 {
			ratio = plan.FormatPercent(row.Bound / float64(row.KthCount))
		}
		if row.Apriori > 0 {
			apriori = fmt.Sprintf("%.0f", row.Apriori)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.3f\t%.3f\t%d\t%.0f\t%s\t%s\t%d\t%d\t\n", row.Window, row.At, row.Mode,
			row.KthCount, row.N, row.Recall, row.Precision, row.MaxError, row.Bound, ratio, apriori, row.Broken, row.MissingHeavy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(missed) == 0 {
		ew.printf("\ngoals met: the frequent-items bound never broken on any item, its recall@%d at least count-min's at the same memory (%s elapsed)\n",
			r.K, r.Elapsed.Round(time.Millisecond))
	} else {
		ew.printf("\ngoals missed:\n")
		for _, m := range missed {
			ew.printf("  %s\n", m)
		}
	}
	return ew.err
}
