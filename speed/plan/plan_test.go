package plan

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"trending/model/windowset"
)

func mustCompute(t *testing.T, in Input) Plan {
	t.Helper()
	p, err := Compute(in)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return p
}

func mustWindow(t *testing.T, p Plan, name string) WindowPlan {
	t.Helper()
	w, ok := p.Window(name)
	if !ok {
		t.Fatalf("no %s window in plan", name)
	}
	return w
}

// tenX is the 10x case (docs/requirements.md, "At 10x"): 10x the views and the distinct videos,
// spread over 320 partitions.
func tenX() Input {
	in := DefaultInput()
	in.EventsPerDay *= 10
	in.DistinctPerMinute *= 10
	in.DistinctPerHour *= 10
	in.DistinctPerDay *= 10
	in.DistinctPerMonth *= 10
	in.Partitions = 320
	return in
}

// TestRequirementFigures checks every number of the capacity arithmetic and the trending-topics
// sizing in docs/requirements.md, within the rounding that page uses.
func TestRequirementFigures(t *testing.T) {
	p := mustCompute(t, DefaultInput())
	hour, day, month := mustWindow(t, p, "hour"), mustWindow(t, p, "day"), mustWindow(t, p, "month")
	if month.ErrorBound == nil {
		t.Fatal("month has no error bound")
	}
	in001 := DefaultInput()
	in001.SketchWidth, in001.CounterBytes = 65536, 4
	p001 := mustCompute(t, in001)

	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"hour exact: 60 x 2e6 x 50 B + 30e6 x 50 B", hour.ExactBytes, 7.5e9, 0},
		{"day exact: 24 x 30e6 x 50 B + 150e6 x 50 B", day.ExactBytes, 43.5e9, 0},
		{"month exact: 30 x 150e6 x 50 B + 500e6 x 50 B", month.ExactBytes, 250e9, 0},
		{"hour per partition (MB)", hour.ExactPerPartition / MB, 234.375, 1e-9},
		{"day per partition (GB)", day.ExactPerPartition / GB, 1.36, 0.005},
		{"one sketch: 5 x 2^18 x 8 B", p.SketchBytes, 10485760, 0},
		{"one sketch (MB)", p.SketchBytes / MB, 10.5, 0.05},
		{"month sketches per partition", float64(month.Sketches), 32, 0},
		{"month sketches per partition (MB)", float64(month.Sketches) * p.SketchBytes / MB, 335, 1},
		{"month sketch memory in all (GB)", month.SketchBytes / GB, 11, 0.5},
		{"month exact / sketch", month.ExactToSketch, 23, 1},
		{"month N per partition", month.ErrorBound.N, 4.6875e9, 0},
		{"month overcount e/w x N", month.ErrorBound.Overcount, 48600, 100},
		{"month probability 1 - e^-5 (%)", month.ErrorBound.Probability * 100, 99.3, 0.05},
		{"month K-th count", month.ErrorBound.KthCount, 1e6, 0},
		{"average rate per second", p.Rates.PerSecond, 58000, 200},
		{"peak rate per second", p.Rates.PeakPerSecond, 175000, 2000},
		{"topics minute sketch (MB)", p001.SketchBytes / MB, 1.31, 0.005},
		{"topics ring of 60 (MB)", p001.Ring.Bytes / MB, 79, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			if math.Abs(c.got-c.want) > c.tol {
				t.Errorf("got %v, want %v ± %v", c.got, c.want, c.tol)
			}
		})
	}
	if f := month.ErrorBound.FractionOfKth; f >= 0.05 {
		t.Errorf("month overcount is %.4f of the K-th count, the month allows under 5%%", f)
	}
	for _, c := range []struct {
		window string
		mode   windowset.Mode
	}{{"hour", windowset.Exact}, {"day", windowset.Exact}, {"month", windowset.Sketch}} {
		if w := mustWindow(t, p, c.window); w.Mode != c.mode {
			t.Errorf("%s: mode %s, the capacity arithmetic chooses %s (%s)", c.window, w.Mode, c.mode, w.Why)
		}
	}
	if hour.ErrorBound != nil || day.ErrorBound != nil {
		t.Error("exact windows carry an error bound")
	}
	if len(p.Warnings) != 0 {
		t.Errorf("default inputs give warnings: %q", p.Warnings)
	}
	for _, c := range []struct{ window, want string }{
		{"hour", "exact: 234 MB per partition fits the 2 GiB budget"},
		{"day", "exact: 1.36 GB per partition fits the 2 GiB budget"},
		{"month", "sketch: exact needs 7.81 GB per partition, over the 2 GiB budget"},
	} {
		if w := mustWindow(t, p, c.window); !strings.HasPrefix(w.Why, c.want) {
			t.Errorf("%s: why %q, want it to start %q", c.window, w.Why, c.want)
		}
	}
}

// TestTenX checks the 10x case: the hour stays exact at about 234 MB per task over 320
// partitions, the 435 GB day moves to sketches.
func TestTenX(t *testing.T) {
	p := mustCompute(t, tenX())
	hour, day := mustWindow(t, p, "hour"), mustWindow(t, p, "day")
	if hour.ExactBytes != 75e9 {
		t.Errorf("hour exact %v, want 75 GB", hour.ExactBytes)
	}
	if math.Abs(hour.ExactPerPartition/MB-234) > 1 {
		t.Errorf("hour per partition %v MB, want about 234", hour.ExactPerPartition/MB)
	}
	if day.ExactBytes != 435e9 {
		t.Errorf("day exact %v, want 435 GB", day.ExactBytes)
	}
	for _, c := range []struct {
		window string
		mode   windowset.Mode
	}{{"hour", windowset.Exact}, {"day", windowset.Sketch}, {"month", windowset.Sketch}} {
		if w := mustWindow(t, p, c.window); w.Mode != c.mode {
			t.Errorf("%s: mode %s, want %s (%s)", c.window, w.Mode, c.mode, w.Why)
		}
	}
	if !strings.Contains(day.Why, "435 GB in all, over the 100 GB total budget") {
		t.Errorf("day why %q does not name the fleet budget", day.Why)
	}
	if day.ErrorBound == nil || day.ErrorBound.FractionOfKth >= 0.05 {
		t.Errorf("day error bound %+v, want under 5%% of the K-th count", day.ErrorBound)
	}
}

// TestBudgetFlips checks each budget on its own decides: the default day goes to sketches once
// either budget is below its exact state.
func TestBudgetFlips(t *testing.T) {
	for _, c := range []struct {
		name   string
		modify func(*Input)
		day    windowset.Mode
	}{
		{"defaults", func(*Input) {}, windowset.Exact},
		{"per partition just fits", func(in *Input) { in.MemoryBudgetPerPartition = 1.359375e9 }, windowset.Exact},
		{"per partition just short", func(in *Input) { in.MemoryBudgetPerPartition = 1.359375e9 - 1 }, windowset.Sketch},
		{"total just fits", func(in *Input) { in.MemoryBudgetTotal = 43.5e9 }, windowset.Exact},
		{"total just short", func(in *Input) { in.MemoryBudgetTotal = 43.5e9 - 1 }, windowset.Sketch},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := DefaultInput()
			c.modify(&in)
			if w := mustWindow(t, mustCompute(t, in), "day"); w.Mode != c.day {
				t.Errorf("day mode %s, want %s (%s)", w.Mode, c.day, w.Why)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	for _, c := range []struct {
		name   string
		modify func(*Input)
		want   string // substring of one warning; "" for none
	}{
		{"seed", func(*Input) {}, ""},
		{"4-byte counters overflow over a month", func(in *Input) { in.CounterBytes = 4 }, "more than a 4-byte counter holds"},
		{"narrow sketch misses the tolerance", func(in *Input) { in.SketchWidth = 1 << 16 }, "over the 5% tolerance"},
		{"floor drowned in noise", func(in *Input) { in.SketchWidth = 1 << 14 }, "candidate floor"},
		{"nothing fits one partition", func(in *Input) { in.MemoryBudgetPerPartition = 100 * MB }, "over the"},
		{"sketch no smaller than exact", func(in *Input) {
			in.MemoryBudgetPerPartition = 100 * MB
			in.SketchWidth = 1 << 24
		}, "sketches would not be smaller"},
		{"more partitions do not shrink the fleet's bill", func(in *Input) {
			in.Partitions = 320
			in.MemoryBudgetTotal = 40e9
		}, "day: exact counts need 136 MB per partition and 43.5 GB in all, over budget, and sketches would not be smaller"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := DefaultInput()
			c.modify(&in)
			p := mustCompute(t, in)
			all := strings.Join(p.Warnings, "\n")
			if c.want == "" && len(p.Warnings) > 0 {
				t.Errorf("unexpected warnings: %s", all)
			}
			if c.want != "" && !strings.Contains(all, c.want) {
				t.Errorf("warnings %q lack %q", all, c.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultInput().Validate(); err != nil {
		t.Fatalf("default input invalid: %v", err)
	}
	if err := tenX().Validate(); err != nil {
		t.Fatalf("10x input invalid: %v", err)
	}
	for _, c := range []struct {
		name   string
		modify func(*Input)
		field  string
		want   string
	}{
		{"no events", func(in *Input) { in.EventsPerDay = 0 }, "EventsPerDay", "must be a positive number"},
		{"NaN events", func(in *Input) { in.EventsPerDay = math.NaN() }, "EventsPerDay", "positive"},
		{"infinite events", func(in *Input) { in.EventsPerDay = math.Inf(1) }, "EventsPerDay", "positive"},
		{"negative distinct", func(in *Input) { in.DistinctPerMonth = -1 }, "DistinctPerMonth", "positive"},
		{"no entry bytes", func(in *Input) { in.EntryBytes = 0 }, "EntryBytes", "positive"},
		{"no partitions", func(in *Input) { in.Partitions = 0 }, "Partitions", "must be at least 1"},
		{"no width", func(in *Input) { in.SketchWidth = 0 }, "SketchWidth", "at least 1"},
		{"no depth", func(in *Input) { in.SketchDepth = -2 }, "SketchDepth", "at least 1"},
		{"3-byte counters", func(in *Input) { in.CounterBytes = 3 }, "CounterBytes", "1, 2, 4 or 8"},
		{"no K-th count", func(in *Input) { in.KthCount = 0 }, "KthCount", "positive"},
		{"floor above K-th", func(in *Input) { in.CandidateFloor = 2e6 }, "CandidateFloor", "must not exceed KthCount"},
		{"negative floor", func(in *Input) { in.CandidateFloor = -1 }, "CandidateFloor", "half of KthCount"},
		{"tolerance 5 not 0.05", func(in *Input) { in.ErrorTolerance = 5 }, "ErrorTolerance", "fraction"},
		{"no budget", func(in *Input) { in.MemoryBudgetPerPartition = 0 }, "MemoryBudgetPerPartition", "positive"},
		{"no total budget", func(in *Input) { in.MemoryBudgetTotal = -5 }, "MemoryBudgetTotal", "positive"},
		{"short month", func(in *Input) { in.MonthDays = 7 }, "MonthDays", "between 28 and 31"},
		{"peak under average", func(in *Input) { in.PeakFactor = 0.5 }, "PeakFactor", "at least 1"},
		{"more distinct than events", func(in *Input) { in.DistinctPerMinute = 5e6 }, "DistinctPerMinute", "must not exceed a minute's events (EventsPerDay / 1440)"},
		{"hour smaller than minute", func(in *Input) { in.DistinctPerHour = 1e6 }, "DistinctPerHour", "must be at least DistinctPerMinute"},
		{"day and hour swapped", func(in *Input) { in.DistinctPerDay, in.DistinctPerHour = 30e6, 150e6 }, "DistinctPerDay", "must be at least DistinctPerHour"},
		{"month beyond 30 days of days", func(in *Input) { in.DistinctPerMonth = 5e9 }, "DistinctPerMonth", "must not exceed 30 x DistinctPerDay"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := DefaultInput()
			c.modify(&in)
			err := in.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !errors.Is(err, ErrInvalidInput) {
				t.Errorf("%v does not wrap ErrInvalidInput", err)
			}
			fe := fieldError(err, c.field)
			if fe == nil {
				t.Fatalf("error %v: want a FieldError on %s", err, c.field)
			}
			if !strings.Contains(fe.Error(), c.want) {
				t.Errorf("error %q lacks %q", fe.Error(), c.want)
			}
			if _, err := Compute(in); !errors.Is(err, ErrInvalidInput) {
				t.Errorf("Compute returned %v, want the validation error", err)
			}
		})
	}
}

// fieldError returns the FieldError on field among those err joins, or nil.
func fieldError(err error, field string) *FieldError {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) && fe.Field == field {
			return fe
		}
	}
	return nil
}

func TestFieldErrorFormat(t *testing.T) {
	fe := &FieldError{Field: "DistinctPerHour", Value: 1e6, Reason: "must be at least %s", Refs: []string{"DistinctPerMinute"}}
	got := fe.Format(func(f string) string { return "--" + strings.ToLower(f) })
	if want := "--distinctperhour 1e+06: must be at least --distinctperminute"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPlanProperties checks invariants over random valid inputs: the chosen mode respects the
// budgets whenever exact is chosen without a warning, totals add up, more partitions never
// enlarge a task's exact state, and the overcount bound shrinks as the sketch widens.
func TestPlanProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		in := DefaultInput()
		in.EventsPerDay = math.Pow(10, 6+r.Float64()*6)
		in.DistinctPerMinute = in.EventsPerDay / 1440 * (0.01 + 0.99*r.Float64())
		in.DistinctPerHour = in.DistinctPerMinute * (1 + 59*r.Float64())
		in.DistinctPerDay = in.DistinctPerHour * (1 + 23*r.Float64())
		in.DistinctPerMonth = in.DistinctPerDay * (1 + 29*r.Float64())
		in.Partitions = 1 + r.IntN(1000)
		in.SketchWidth = 1 << (8 + r.IntN(16))
		in.SketchDepth = 1 + r.IntN(8)
		in.MemoryBudgetPerPartition = math.Pow(10, 6+r.Float64()*5)
		in.MemoryBudgetTotal = math.Pow(10, 8+r.Float64()*5)
		p, err := Compute(in)
		if err != nil {
			t.Fatalf("case %d: %v (input %+v)", i, err, in)
		}
		var per, total float64
		for _, w := range p.Windows {
			fits := w.ExactPerPartition <= in.MemoryBudgetPerPartition && w.ExactBytes <= in.MemoryBudgetTotal
			if fits && w.Mode != windowset.Exact {
				t.Fatalf("case %d %s: exact fits both budgets but mode is %s", i, w.Window, w.Mode)
			}
			if w.Mode == windowset.Sketch && (fits || w.SketchPerPartition >= w.ExactPerPartition || w.ErrorBound == nil) {
				t.Fatalf("case %d %s: sketch chosen without reason: %+v", i, w.Window, w)
			}
			if w.Mode == windowset.Sketch && w.ErrorBound.Overcount <= 0 {
				t.Fatalf("case %d %s: bound %+v", i, w.Window, w.ErrorBound)
			}
			per += w.ChosenPerPartition
			total += w.ChosenBytes
		}
		if math.Abs(per-p.PerPartitionBytes) > 1e-6*per || math.Abs(total-p.TotalBytes) > 1e-6*total {
			t.Fatalf("case %d: totals %v/%v, windows add up to %v/%v", i, p.PerPartitionBytes, p.TotalBytes, per, total)
		}

		more := in
		more.Partitions *= 2
		more.SketchWidth *= 2
		q := mustCompute(t, more)
		for j, w := range q.Windows {
			if w.ExactPerPartition > p.Windows[j].ExactPerPartition {
				t.Fatalf("case %d %s: doubling partitions grew a task's exact state", i, w.Window)
			}
			if w.ExactBytes != p.Windows[j].ExactBytes {
				t.Fatalf("case %d %s: partitions changed the fleet's exact state", i, w.Window)
			}
		}
	}
}

// TestBoundShrinks checks the overcount bound is e/w x N: halving with double the width,
// halving with double the partitions.
func TestBoundShrinks(t *testing.T) {
	base := mustWindow(t, mustCompute(t, DefaultInput()), "month").ErrorBound
	for _, c := range []struct {
		name   string
		modify func(*Input)
	}{
		{"double width", func(in *Input) { in.SketchWidth *= 2 }},
		{"double partitions", func(in *Input) { in.Partitions *= 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := DefaultInput()
			c.modify(&in)
			b := mustWindow(t, mustCompute(t, in), "month").ErrorBound
			if math.Abs(b.Overcount-base.Overcount/2) > 1e-6 {
				t.Errorf("overcount %v, want half of %v", b.Overcount, base.Overcount)
			}
		})
	}
}

// TestDecayedWindow: a decayed window is one score an item of its horizon (10 half-lives):
// exact memory is the horizon's distinct items, Auto is exact up to a 24-hour horizon, and a
// sketch's N is the decayed total, h/ln 2 minutes of views.
func TestDecayedWindow(t *testing.T) {
	in := DefaultInput()
	in.Windows = []Window{
		{Name: "now", Kind: windowset.Decayed, HalfLifeMinutes: 60},
		{Name: "slow", Kind: windowset.Decayed, HalfLifeMinutes: 360},
	}
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := p.Window("now")
	// 10 hours: min(10 x 30M, 150M) = 150M items x 50 B.
	if now.Mode != windowset.Exact || now.ExactBytes != 150e6*50 || now.Buckets != 0 || now.ErrorBound != nil {
		t.Errorf("now: %+v", now)
	}
	slow, _ := p.Window("slow")
	n := 5e9 * (360 / math.Ln2) / 1440 / 32
	if slow.Mode != windowset.Sketch || slow.Sketches != 1 || slow.ErrorBound == nil || math.Abs(slow.ErrorBound.N-n) > 1e-6*n {
		t.Errorf("slow: %+v bound %+v, want sketch with N %v", slow, slow.ErrorBound, n)
	}
	if !strings.Contains(slow.Why, "2d12h horizon") {
		t.Errorf("slow why: %s", slow.Why)
	}
	if got := formatMinutes(90); got != "1h30m" {
		t.Errorf("formatMinutes(90) = %q", got)
	}
}

// TestGroups: with lists per group value every window keeps a state per group in its mode:
// exact, GroupPairs times the window's entries (the number of groups by default, every item
// in every group); sketch, the window's sketches at the group width per group, with the
// largest group's bound; both in the totals.
func TestGroups(t *testing.T) {
	in := DefaultInput()
	base, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Groups, in.GroupSketchWidth, in.GroupShare = 3, 1<<16, 0.5
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	hour, _ := p.Window("hour")
	month, _ := p.Window("month")
	if g := hour.Groups; g == nil || g.Pairs != 3 || g.PerPartition != 3*hour.ExactPerPartition || g.PerGroupPerPartition != hour.ExactPerPartition || g.ErrorBound != nil {
		t.Fatalf("hour groups %+v: want 3 x the exact hour, no bound", hour.Groups)
	}
	sk := 5.0 * (1 << 16) * 8
	g := month.Groups
	if g == nil || g.PerPartition != 3*(float64(month.Sketches)*sk+month.CandidateBytes) || p.GroupSketchBytes != sk {
		t.Fatalf("month groups %+v (group sketch %v)", g, p.GroupSketchBytes)
	}
	if b := g.ErrorBound; b == nil || b.N != month.ErrorBound.N/2 || math.Abs(b.Overcount-math.E/(1<<16)*b.N) > 1e-6 || b.KthCount != month.ErrorBound.KthCount/2 {
		t.Fatalf("month group bound %+v, window bound %+v", g.ErrorBound, month.ErrorBound)
	}
	var groups float64
	for _, w := range p.Windows {
		groups += w.Groups.PerPartition
	}
	if math.Abs(p.PerPartitionBytes-base.PerPartitionBytes-groups) > 1 || p.GroupPerPartitionBytes != groups || p.GroupBytes != groups*32 {
		t.Fatalf("totals: %v per partition with groups, %v without, groups %v (%v)", p.PerPartitionBytes, base.PerPartitionBytes, groups, p.GroupPerPartitionBytes)
	}
	in.GroupPairs = 1.5
	p, _ = Compute(in)
	if h, _ := p.Window("hour"); h.Groups.PerPartition != 1.5*h.ExactPerPartition {
		t.Fatalf("1.5 pairs: %v, want %v", h.Groups.PerPartition, 1.5*h.ExactPerPartition)
	}
	for field, mod := range map[string]func(*Input){
		"Groups":           func(in *Input) { in.Groups = -1 },
		"GroupPairs":       func(in *Input) { in.GroupPairs = 4 }, // over the 3 groups
		"GroupSketchWidth": func(in *Input) { in.GroupSketchWidth = -1 },
		"GroupShare":       func(in *Input) { in.GroupShare = 1.5 },
	} {
		bad := in
		mod(&bad)
		var fe *FieldError
		if _, err := Compute(bad); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v, want a field error naming it", field, err)
		}
	}
	if p, _ := Compute(DefaultInput()); p.GroupBytes != 0 {
		t.Fatal("groups without Groups")
	}
	for _, w := range base.Windows {
		if w.Groups != nil {
			t.Fatalf("%s has groups without Groups", w.Window)
		}
	}
}

// TestCapsSizing: the caps' table holds the kept hours' keys of a partition at most half
// full, in a power of two of 16-byte slots, twice the keys with regions, in the totals.
func TestCapsSizing(t *testing.T) {
	in := DefaultInput()
	base, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	in.CapPairsPerHour = 1e8
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Caps
	// 1e8 / 32 partitions x 3 hours = 9.375e6 keys: 2^25 slots is the first power of two
	// with them at most half full.
	if c == nil || c.KeysPerPartition != 9.375e6 || c.Slots != 1<<25 || c.PerPartition != float64(1<<25*16) {
		t.Fatalf("caps %+v", c)
	}
	if p.PerPartitionBytes != base.PerPartitionBytes+c.PerPartition || p.TotalBytes != base.TotalBytes+c.Bytes {
		t.Fatalf("the caps are not in the totals: %v vs %v", p.PerPartitionBytes, base.PerPartitionBytes)
	}
	in.Groups = 3
	if g, _ := Compute(in); g.Caps.KeysPerPartition != 2*c.KeysPerPartition {
		t.Fatalf("with regions: %v keys, want twice %v", g.Caps.KeysPerPartition, c.KeysPerPartition)
	}
	in.CapPairsPerHour = -1
	if _, err := Compute(in); err == nil {
		t.Fatal("negative pairs accepted")
	}
}

// TestArchivePlan: seed 004's arithmetic (10 billion events a day at 200 bytes: 2 TB a day,
// about 700 TB a year) beside the measured 3.9 bytes an event, and pre-summing's rows.
func TestArchivePlan(t *testing.T) {
	in := DefaultInput()
	in.EventsPerDay = 10e9
	p, err := Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Archive
	if a.RowsPerDay != 10e9 || a.BytesPerEvent != 3.9 || a.RetentionDays != 365 {
		t.Errorf("defaults: %+v, want 1e10 rows, 3.9 B, 365 days", a)
	}
	if a.SeedBytesPerDay != 2e12 || a.SeedRetentionBytes != 730e12 {
		t.Errorf("seed: %g a day, %g a year, want 2e12 and 7.3e14", a.SeedBytesPerDay, a.SeedRetentionBytes)
	}
	if math.Abs(a.BytesPerDay-39e9) > 1 || math.Abs(a.RetentionBytes-39e9*365) > 365 {
		t.Errorf("measured: %g a day, %g a year, want 3.9e10 and 1.4235e13", a.BytesPerDay, a.RetentionBytes)
	}

	in.ViewsPerEvent, in.ArchiveBytesPerEvent, in.RetentionDays = 2, 10, 40
	p, err = Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Archive; a.RowsPerDay != 5e9 || a.BytesPerDay != 5e10 || a.RetentionBytes != 2e12 {
		t.Errorf("2 views an event, 10 B, 40 days: %+v", a)
	}

	for _, bad := range []func(*Input){
		func(in *Input) { in.ViewsPerEvent = 0.5 },
		func(in *Input) { in.ArchiveBytesPerEvent = -1 },
		func(in *Input) { in.RetentionDays = -1 },
	} {
		in := DefaultInput()
		bad(&in)
		if _, err := Compute(in); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%+v: %v, want ErrInvalidInput", in, err)
		}
	}
}
