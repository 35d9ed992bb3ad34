package plan

import (
	"strings"
	"testing"

	"trending/model/windowset"
)

// TestConfiguredWindows: a configured set (seed 004's) is sized window by window, each with
// the mode the speed layer runs and the budgets' verdict.
func TestConfiguredWindows(t *testing.T) {
	in := DefaultInput()
	in.Windows = []Window{
		{Name: "minute", Kind: windowset.Sliding, LengthMinutes: 1, BucketMinutes: 1, Mode: "exact"},
		{Name: "hour", Kind: windowset.Sliding, LengthMinutes: 60, BucketMinutes: 1, Mode: "exact"},
		{Name: "day", Kind: windowset.Sliding, LengthMinutes: 1440, BucketMinutes: 60, Mode: "exact"},
		{Name: "7d", Kind: windowset.Sliding, LengthMinutes: 7 * 1440, BucketMinutes: 60},
		{Name: "week", Kind: windowset.Calendar, Span: "week"},
		{Name: "all", Kind: windowset.AllTime, Mode: "exact"},
	}
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		mode     windowset.Mode
		buckets  int
		sketches int
	}{
		"minute": {windowset.Exact, 1, 3}, "hour": {windowset.Exact, 60, 62}, "day": {windowset.Exact, 24, 26},
		"7d": {windowset.Sketch, 168, 170}, "week": {windowset.Sketch, 0, 1}, "all": {windowset.Exact, 0, 1},
	}
	if len(p.Windows) != len(want) {
		t.Fatalf("%d windows", len(p.Windows))
	}
	for _, w := range p.Windows {
		wt := want[w.Window]
		if w.Mode != wt.mode || w.Buckets != wt.buckets || w.Sketches != wt.sketches {
			t.Errorf("%s: mode %s buckets %d sketches %d, want %+v", w.Window, w.Mode, w.Buckets, w.Sketches, wt)
		}
		if (w.Mode == windowset.Sketch) != (w.ErrorBound != nil) {
			t.Errorf("%s: mode %s with bound %v", w.Window, w.Mode, w.ErrorBound)
		}
	}
	// The hour and the day are the default plan's, byte for byte.
	def, _ := Compute(DefaultInput())
	for _, name := range []string{"hour", "day"} {
		a, _ := p.Window(name)
		b, _ := def.Window(name)
		if a.ExactBytes != b.ExactBytes || a.SketchBytes != b.SketchBytes {
			t.Errorf("%s: exact %g sketch %g, default plan %g %g", name, a.ExactBytes, a.SketchBytes, b.ExactBytes, b.SketchBytes)
		}
	}
	// The 7 days by sketch: N is 7 days of one partition's events.
	w7, _ := p.Window("7d")
	if n := in.EventsPerDay * 7 / float64(in.Partitions); w7.ErrorBound.N != n {
		t.Errorf("7d N %g, want %g", w7.ErrorBound.N, n)
	}
	// The calendar week exact would be its distinct items' totals only.
	wk, _ := p.Window("week")
	if wk.ExactBytes != in.DistinctPerMonth*in.EntryBytes || !strings.Contains(wk.Why, "configured sketch (auto); the budgets say exact") {
		t.Errorf("week: exact %g why %q", wk.ExactBytes, wk.Why)
	}
	// All time configured exact: a month of history fits, and the plan says it grows.
	all, _ := p.Window("all")
	if !strings.HasPrefix(all.Why, "exact: ") || !strings.Contains(all.Why, "month of history") {
		t.Errorf("all: why %q", all.Why)
	}
	// A configured exact window over budget runs exact, with a warning.
	in.Windows = []Window{{Name: "month", Kind: windowset.Sliding, LengthMinutes: 30 * 1440, BucketMinutes: 1440, Mode: "exact"}}
	if p, err = Compute(in); err != nil {
		t.Fatal(err)
	}
	if m := p.Windows[0]; m.Mode != windowset.Exact || !strings.Contains(m.Why, "configured exact (exact); the budgets say sketch") ||
		!strings.Contains(strings.Join(p.Warnings, "\n"), "month: configured exact needs 7.81 GB per partition and 250 GB in all, over budget") {
		t.Errorf("month exact: %s %q, warnings %v", m.Mode, m.Why, p.Warnings)
	}
}
