package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"trending/model/windowset"
	"trending/speed/plan"
)

// The -update flag rewrites testdata/*.golden:
//
//	go test ./cmd/trending -run TestPlanGolden -update
//
// It is registered only if no other test file of this package did, and read after flag
// parsing, so golden tests of other commands can share it.
var _ = func() bool {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata")
	}
	return true
}()

func updateGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// runTrending runs the CLI in-process with args and returns its standard output.
func runTrending(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// tenXArgs is the 10x case of docs/scale-out.md: 50 billion views a day over 320 partitions.
var tenXArgs = []string{"plan", "--events-per-day", "5e10", "--distinct-per-minute", "2e7",
	"--distinct-per-hour", "3e8", "--distinct-per-day", "1.5e9", "--distinct-per-month", "5e9", "--partitions", "320"}

func TestPlanGolden(t *testing.T) {
	for _, c := range []struct {
		name, golden string
		args         []string
	}{
		{"defaults", "plan_defaults.golden", []string{"plan"}},
		{"defaults spelled out", "plan_defaults.golden", []string{"plan", "--events-per-day", "5e9", "--distinct-per-minute", "2e6",
			"--distinct-per-hour", "30e6", "--distinct-per-day", "150e6", "--distinct-per-month", "500e6", "--entry-bytes", "50",
			"--partitions", "32", "--sketch-width", "262144", "--sketch-depth", "5", "--kth-count", "1e6"}},
		{"10x", "plan_10x.golden", tenXArgs},
		{"topics sketches", "plan_topics.golden", []string{"plan", "--sketch-width", "65536", "--counter-bytes", "4"}},
		{"lists per region", "plan_groups.golden", []string{"plan", "--groups", "eu,us,apac", "--group-pairs", "1.4", "--group-sketch-width", "65536"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := runTrending(t, c.args...)
			if err != nil {
				t.Fatalf("trending %s: %v", strings.Join(c.args, " "), err)
			}
			path := filepath.Join("testdata", c.golden)
			if updateGolden() && c.name != "defaults spelled out" {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (rerun with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

// TestPlanOutputHoldsRequirementFigures checks the human output states the figures of
// docs/requirements.md ("Capacity" and "Sketches": 7.5 GB, 43.5 GB, 250 GB, 48,607 at 99.3%),
// so the golden file cannot be regenerated into nonsense unnoticed.
func TestPlanOutputHoldsRequirementFigures(t *testing.T) {
	got, err := runTrending(t, "plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"7.5 GB", "43.5 GB", "250 GB", "1.36 GB", "10.5 MB", "10.8 GB", "48,607", "99.3%", "4.86%",
		"hour    60 minutes", "exact   exact:", "sketch  sketch:", "23.2x less",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	got001, err := runTrending(t, "plan", "--sketch-width", "65536", "--counter-bytes", "4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got001, "= 1.31 MB; a trending-topics ring of 60 minute sketches = 78.6 MB") {
		t.Errorf("trending-topics ring sizing missing:\n%s", got001)
	}
}

func TestPlanJSON(t *testing.T) {
	out, err := runTrending(t, append(tenXArgs, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if p.Input.Partitions != 320 || p.Input.EventsPerDay != 5e10 {
		t.Errorf("input not carried: %+v", p.Input)
	}
	modes := map[string]string{}
	for _, w := range p.Windows {
		modes[w.Window] = string(w.Mode)
	}
	if want := map[string]string{"hour": "exact", "day": "sketch", "month": "sketch"}; !reflect.DeepEqual(modes, want) {
		t.Errorf("modes %v, want %v", modes, want)
	}

	out, err = runTrending(t, "plan", "--json")
	if err != nil {
		t.Fatal(err)
	}
	p = plan.Plan{}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	hour, _ := p.Window("hour")
	month, _ := p.Window("month")
	if hour.ExactBytes != 7.5e9 || month.ExactBytes != 250e9 || p.SketchBytes != 10485760 {
		t.Errorf("hour %v, month %v, sketch %v: want 7.5e9, 250e9, 10485760", hour.ExactBytes, month.ExactBytes, p.SketchBytes)
	}
	if month.ErrorBound == nil || math.Abs(month.ErrorBound.Overcount-48600) > 100 {
		t.Errorf("month bound %+v, want an overcount of about 48,600", month.ErrorBound)
	}
	if !strings.Contains(out, `"error_bound"`) || !strings.Contains(out, "\n  \"windows\": [") {
		t.Errorf("JSON not indented with snake_case keys:\n%s", out)
	}
}

func TestPlanUsageErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no partitions", []string{"--partitions", "0"}, "--partitions 0: must be at least 1"},
		{"cross field names flags", []string{"--distinct-per-hour", "1e6"}, "--distinct-per-hour 1e+06: must be at least --distinct-per-minute"},
		{"all problems at once", []string{"--sketch-depth", "0", "--month-days", "7"}, "--sketch-depth 0: must be at least 1; the month sketch uses 5; --month-days 7: must be between 28 and 31"},
		{"ambiguous size", []string{"--memory-budget", "2G"}, `unknown unit "G"`},
		{"not a number", []string{"--events-per-day", "lots"}, `--events-per-day "lots": not a number`},
		{"width not a power of two", []string{"--sketch-width", "1000"}, "--sketch-width 1000: is not a power of two, as the speed workers need: use 512 or 1024"},
		{"group width not a power of two", []string{"--groups", "eu", "--group-sketch-width", "3000"}, "--group-sketch-width 3000: is not a power of two"},
		{"stray argument", []string{"hour"}, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := runTrending(t, append([]string{"plan"}, c.args...)...)
			if err == nil {
				t.Fatal("accepted")
			}
			var ue usageError
			if !errors.As(err, &ue) && !strings.Contains(err.Error(), "unknown command") {
				t.Errorf("%v is not a usage error (exit 2)", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q lacks %q", err, c.want)
			}
		})
	}
}

// TestPlanSizesFromEnv checks the size flags read human sizes from the environment too, as
// every flag does (config.go).
func TestPlanSizesFromEnv(t *testing.T) {
	t.Setenv("TRENDING_MEMORY_BUDGET", "1GiB")
	t.Setenv("TRENDING_PARTITIONS", "16")
	out, err := runTrending(t, "plan", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Input.MemoryBudgetPerPartition != 1<<30 || p.Input.Partitions != 16 {
		t.Errorf("budget %v, partitions %d: want 1 GiB and 16", p.Input.MemoryBudgetPerPartition, p.Input.Partitions)
	}
	if day, _ := p.Window("day"); day.Mode != windowset.Sketch {
		t.Errorf("day at 2.72 GB per partition over a 1 GiB budget is %s", day.Mode)
	}
}

func TestPlanHelpTeaches(t *testing.T) {
	out, err := runTrending(t, "plan", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"60 minute maps x distinct-per-minute x entry-bytes", "e/w x N", "1 - e^-d",
		"Examples:", "--events-per-day 5e9", "--partitions 320", "--counter-bytes 4",
		"--memory-budget size", "(default 2 GiB)", "(default 100 GB)", "--json",
	} {
		// The flags' help is wrapped to the width: compare with the lines joined.
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// TestPlanFlagsCoverInput checks every plan.Input field has a flag, so a new field cannot be
// left unreachable from the command line or unnamed in its errors.
func TestPlanFlagsCoverInput(t *testing.T) {
	cmd := newPlanCommand()
	typ := reflect.TypeFor[plan.Input]()
	for i := range typ.NumField() {
		field := typ.Field(i).Name
		name, ok := planFlags[field]
		if !ok {
			t.Errorf("plan.Input.%s has no entry in planFlags", field)
			continue
		}
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("planFlags maps %s to --%s, which plan does not define", field, name)
		}
	}
	if len(planFlags) != typ.NumField() {
		t.Errorf("planFlags has %d entries for %d fields", len(planFlags), typ.NumField())
	}
}

// TestPlanTopics checks --topics appends the trending-topics sizing (docs/topics.md) to the
// plan, in both outputs.
func TestPlanTopics(t *testing.T) {
	base, err := runTrending(t, "plan")
	if err != nil {
		t.Fatal(err)
	}
	got, err := runTrending(t, "plan", "--with-topics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, base) {
		t.Errorf("--topics changed the plan itself:\n%s", got)
	}
	for _, want := range []string{"trending topics sizing (docs/topics.md)", "1.31 MB", "78.6 MB", "1.35 mentions a minute"} {
		if !strings.Contains(got[len(base):], want) {
			t.Errorf("--topics section lacks %q:\n%s", want, got[len(base):])
		}
	}
	if strings.Contains(base, "trending topics sizing") {
		t.Error("the topics section is printed without --topics")
	}
	out, err := runTrending(t, "plan", "--with-topics", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var both struct {
		Plan   plan.Plan
		Topics struct {
			MinuteSketchBytes float64 `json:"minute_sketch_bytes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &both); err != nil {
		t.Fatalf("--topics --json does not parse: %v\n%s", err, out)
	}
	if both.Plan.Input.Partitions != 32 || math.Abs(both.Topics.MinuteSketchBytes-1310720) > 1 {
		t.Errorf("partitions %d, minute sketch %v: want 32 and 1310720", both.Plan.Input.Partitions, both.Topics.MinuteSketchBytes)
	}
}

// TestPlanSizesConfiguredWindows: with a window set, plan sizes each configured window and
// says whether it runs exact or by sketch; a bad set is a usage error.
func TestPlanSizesConfiguredWindows(t *testing.T) {
	out, err := runTrending(t, "plan", "--window-preset", "seed-004")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"minute         1 minute ", "sketch  configured sketch (sketch); the budgets say exact: 6.25 MB per partition",
		"7d             7 days", "sketch  sketch: exact needs 2.42 GB per partition",
		"calendar-day   totals of the day", "calendar-week  totals of the week",
		"7d sketch error:", "calendar-week sketches: 1 per partition (the running sketch)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --window-preset seed-004 lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "month ") {
		t.Errorf("plan sizes a month the set does not have:\n%s", out)
	}
	if _, err := runTrending(t, "plan", "--window-set", "x=sliding:1h/2m"); err == nil || !strings.Contains(err.Error(), "bucket 2m") {
		t.Errorf("bad set: %v", err)
	}
	out, err = runTrending(t, "plan", "--window-set", "hour=sliding:1h/1m,now=decayed:1h,slow=decayed:6h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"now     one score an item  7.5 GB", "exact   exact: 234 MB per partition",
		"slow    one score an item  22.5 GB", "sketch  configured sketch (auto)", "2d12h horizon",
		"slow sketches: 1 per partition (the decayed float sketch)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan of decayed windows lacks %q:\n%s", want, out)
		}
	}
	if _, err := runTrending(t, "plan", "--window-set", "now=decayed:1m"); err == nil || !strings.Contains(err.Error(), "half-life 1m") {
		t.Errorf("bad half-life: %v", err)
	}
}

// TestPlanGroups: the lists per group value are sized by the configured groups (a list of
// values, or every value seen up to its cap), in each window's mode, and counted in the
// totals: three regions of the exact hour with every item in every region hold three hours.
func TestPlanGroups(t *testing.T) {
	var none, three, every plan.Plan
	for _, c := range []struct {
		p    *plan.Plan
		args []string
	}{
		{&none, []string{"plan", "--json"}},
		{&three, []string{"plan", "--json", "--groups", "eu,us,apac"}},
		{&every, []string{"plan", "--json", "--groups", "*", "--groups-max", "10", "--group-pairs", "2"}},
	} {
		out, err := runTrending(t, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), c.p); err != nil {
			t.Fatal(err)
		}
	}
	hour, _ := three.Window("hour")
	if hour.Groups == nil || hour.Groups.Groups != 3 || hour.Groups.PerPartition != 3*hour.ExactPerPartition || three.Input.GroupSketchWidth != 1<<18 {
		t.Fatalf("three regions: hour groups %+v, group sketch width %d", hour.Groups, three.Input.GroupSketchWidth)
	}
	if math.Abs(three.PerPartitionBytes-none.PerPartitionBytes-three.GroupPerPartitionBytes) > 1 {
		t.Fatalf("the groups (%v) are not in the total (%v, %v without)", three.GroupPerPartitionBytes, three.PerPartitionBytes, none.PerPartitionBytes)
	}
	if h, _ := every.Window("hour"); every.Input.Groups != 10 || h.Groups.PerPartition != 2*h.ExactPerPartition {
		t.Fatalf("every value up to 10, 2 pairs: groups %d, hour %+v", every.Input.Groups, h.Groups)
	}
	if _, err := runTrending(t, "plan", "--groups", "eu", "--group-pairs", "3"); err == nil || !strings.Contains(err.Error(), "--group-pairs 3") {
		t.Fatalf("3 pairs of 1 group: %v", err)
	}
}

// TestPlanSaysWhatTheDefaultSetCosts: the plan of the requirements' three windows says what
// the windows the roles serve by default cost (the calendar windows and all time besides),
// and equals the total `--window-preset default` prints; a plan of a configured set does not.
func TestPlanSaysWhatTheDefaultSetCosts(t *testing.T) {
	out, err := runTrending(t, "plan")
	if err != nil {
		t.Fatal(err)
	}
	served, err := runTrending(t, "plan", "--window-preset", "default")
	if err != nil {
		t.Fatal(err)
	}
	total := regexp.MustCompile(`all windows as chosen: (\S+ \S+ per partition, \S+ \S+ in all)`).FindStringSubmatch(served)
	if total == nil {
		t.Fatalf("no total in the default set's plan:\n%s", served)
	}
	if !strings.Contains(out, "run by default add the calendar hour, day and month and all time: "+total[1]) {
		t.Errorf("the three-window plan does not give the default set's total (%s):\n%s", total[1], out)
	}
	if strings.Contains(served, "this plan is the requirements'") {
		t.Errorf("a plan of a configured set points at the default set:\n%s", served)
	}
}

// seed004Scale is seed 004's scale for `trending plan`: 100M daily users x 100 events (1e10 a
// day, 116k a second), twice the requirements' distinct items and K-th count, over 64
// partitions (the requirements' 5,425 events a second each).
var seed004Scale = []string{"--events-per-day", "1e10", "--partitions", "64", "--kth-count", "2e6",
	"--distinct-per-minute", "4e6", "--distinct-per-hour", "60e6", "--distinct-per-day", "300e6", "--distinct-per-month", "1e9"}

// TestPlanSeed004WithinBudget: the seed-004 preset at seed 004's scale counts every window by
// sketch, so its memory does not grow with the distinct items (nearly one per event changes
// nothing), and fits both budgets (2 GiB a partition, 100 GB in all) without a warning.
func TestPlanSeed004WithinBudget(t *testing.T) {
	run := func(extra ...string) plan.Plan {
		t.Helper()
		args := append(append([]string{"plan", "--window-preset", "seed-004", "--json"}, seed004Scale...), extra...)
		out, err := runTrending(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var p plan.Plan
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("--json output does not parse: %v\n%s", err, out)
		}
		return p
	}
	p := run()
	var names []string
	for _, w := range p.Windows {
		names = append(names, w.Window)
		if w.Mode != "sketch" {
			t.Errorf("%s counts %s, want sketch: exact memory grows with the distinct items", w.Window, w.Mode)
		}
	}
	if got := strings.Join(names, ","); got != "minute,hour,day,7d,calendar-day,calendar-week" {
		t.Errorf("windows %s", got)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	if p.PerPartitionBytes > p.Input.MemoryBudgetPerPartition || p.TotalBytes > p.Input.MemoryBudgetTotal {
		t.Errorf("%s per partition and %s in all, over the budgets %s and %s", plan.FormatBytes(p.PerPartitionBytes), plan.FormatBytes(p.TotalBytes),
			plan.FormatBytes(p.Input.MemoryBudgetPerPartition), plan.FormatBytes(p.Input.MemoryBudgetTotal))
	}
	if got := plan.FormatBytes(p.PerPartitionBytes) + " " + plan.FormatBytes(p.TotalBytes); got != "1.07 GB 68.5 GB" {
		t.Errorf("per partition and in all: %s, want 1.07 GB 68.5 GB", got)
	}
	// Nearly every event a new item (10x the distinct items a day and month).
	many := run("--distinct-per-minute", "6e6", "--distinct-per-hour", "3.6e8", "--distinct-per-day", "3e9", "--distinct-per-month", "1e10")
	if many.PerPartitionBytes != p.PerPartitionBytes || len(many.Warnings) > 0 {
		t.Errorf("many more distinct items: %s per partition (warnings %q), want the same %s", plan.FormatBytes(many.PerPartitionBytes),
			many.Warnings, plan.FormatBytes(p.PerPartitionBytes))
	}
}
