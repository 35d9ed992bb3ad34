package main

import (
	"time"

	"trending/batch"
	"trending/model"
)

// batchOutput is the JSON every batch subcommand prints with --json: one schema for run,
// backfill (its dry run too), nightly and status. Names are snake_case, times RFC 3339 in
// UTC, durations seconds as numbers, counts integers; every field is always present (a
// missing time or text is "", a missing reconciliation null). docs/batch.md describes
// it; the golden files in testdata/batch-json keep it.
type batchOutput struct {
	Command     string       `json:"command"`
	DryRun      bool         `json:"dry_run"`
	From        string       `json:"from"`
	To          string       `json:"to"`
	Version     int64        `json:"version"`
	Windows     []batchRow   `json:"windows"`
	Summary     batchSummary `json:"summary"`
	TookSeconds float64      `json:"took_seconds"`
}

// batchRow is one window (or one group value's list of it).
type batchRow struct {
	Window string `json:"window"` // the kind: hour, day, week, month, all
	Start  string `json:"start"`
	End    string `json:"end"`
	Group  string `json:"group"`
	// State: what happened or, for status, how exact its served list is: published, kept
	// (the served list stays: reason says why), built (only its rollup, for a window above
	// it), open (not closed, left out without --force), planned (a dry run's), or exact,
	// dirty, live, provisional, missing.
	State          string                `json:"state"`
	Reason         string                `json:"reason"`
	Built          bool                  `json:"built"`
	Published      bool                  `json:"published"`
	Version        int64                 `json:"version"`
	ComputedAt     string                `json:"computed_at"`
	InputRows      uint64                `json:"input_rows"`
	Items          uint64                `json:"items"`
	Views          uint64                `json:"views"`
	Top            string                `json:"top"`
	Objects        int                   `json:"objects"`
	Bytes          int64                 `json:"bytes"`
	TookSeconds    float64               `json:"took_seconds"`
	Reconciliation *model.Reconciliation `json:"reconciliation"`
}

// batchSummary counts each window once (a group value's list is part of its window).
type batchSummary struct {
	Windows   int `json:"windows"`
	Built     int `json:"built"`
	Published int `json:"published"`
	Kept      int `json:"kept"`
	Open      int `json:"open"`
	Planned   int `json:"planned"`
}

func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// windowRow is a row with the window's kind and span.
func windowRow(w batch.Window) batchRow {
	r := batchRow{Window: w.Level}
	switch {
	case model.Period(w.Level).Valid():
		r.Start, r.End = rfc(w.Start), rfc(w.End())
	default: // all time, the all-time base, a topics rollup: a start at most
		r.Start = rfc(w.Start)
	}
	return r
}

// openWindow is a window a run left out because it is not closed yet.
type openWindow struct {
	window batch.Window
	why    string
}

func (o *batchOutput) count(r batchRow) {
	if r.Group != "" {
		return
	}
	o.Summary.Windows++
	if r.Built {
		o.Summary.Built++
	}
	switch r.State {
	case "published":
		o.Summary.Published++
	case "kept":
		o.Summary.Kept++
	case "open":
		o.Summary.Open++
	case "planned":
		o.Summary.Planned++
	}
}

// reportOutput is a run's report and the open windows it left out.
func reportOutput(command string, lo, hi time.Time, rep batch.Report, open []openWindow, took time.Duration) batchOutput {
	o := batchOutput{Command: command, From: rfc(lo), To: rfc(hi), Version: rep.Version, Windows: []batchRow{}, TookSeconds: took.Seconds()}
	for _, oc := range rep.Outcomes {
		r := windowRow(oc.Window)
		r.Group, r.Built, r.Published = oc.Group, oc.Built, oc.Published
		r.InputRows, r.Items, r.Views, r.Top = oc.InputRows, oc.Items, oc.Views, oc.Top
		r.TookSeconds, r.Reconciliation = oc.Took.Seconds(), oc.Recon
		switch {
		case oc.Published:
			r.State, r.Version = "published", rep.Version
		case oc.Skipped != "":
			r.State, r.Reason = "kept", oc.Skipped
		default: // a rollup rebuilt for a window above it, whose own list was not asked for
			r.State = "built"
		}
		o.Windows = append(o.Windows, r)
		o.count(r)
	}
	for _, ow := range open {
		r := windowRow(ow.window)
		r.State, r.Reason = "open", ow.why
		o.Windows = append(o.Windows, r)
		o.count(r)
	}
	return o
}

// planOutput is a dry run's plan.
func planOutput(lo, hi time.Time, plan []batch.PlanEntry) batchOutput {
	o := batchOutput{Command: "backfill", DryRun: true, From: rfc(lo), To: rfc(hi), Windows: []batchRow{}}
	for _, p := range plan {
		r := windowRow(p.Window)
		r.State, r.Objects, r.Bytes = "planned", p.Objects, p.Bytes
		if p.Open != nil {
			r.State, r.Reason = "open", p.Open.Error()
		}
		o.Windows = append(o.Windows, r)
		o.count(r)
	}
	return o
}

// statusOutput is batch status's table.
func statusOutput(lo, hi time.Time, st []batch.StatusEntry) batchOutput {
	o := batchOutput{Command: "status", From: rfc(lo), To: rfc(hi), Windows: []batchRow{}}
	for _, e := range st {
		r := windowRow(e.Window)
		r.State = string(e.State)
		if l := e.List; l != nil {
			r.Version, r.ComputedAt, r.Reconciliation = l.Version, rfc(l.ComputedAt), l.Reconciliation
			r.Items = uint64(len(l.Items))
		}
		o.Windows = append(o.Windows, r)
		o.Summary.Windows++
	}
	return o
}
