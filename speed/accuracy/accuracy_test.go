package accuracy

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"trending/internal/setting"
	"trending/internal/stream"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/sketch"
	"trending/speed/window"
)

func logRows(t *testing.T, rep Report) {
	t.Helper()
	for _, r := range rep.Rows {
		t.Logf("%-15s %-5s %-6s lists=%d kth=%d N=%d recall=%.3f prec=%.3f exact=%d maxover=%d meanover=%.2f bound=%.1f ratio=%.3f overbound=%d missing=%d under=%d",
			r.Window, r.At, r.Mode, r.Lists, r.KthCount, r.N, r.Recall, r.Precision, r.ExactLists, r.MaxOvercount, r.MeanOvercount, r.Bound, r.BoundRatio, r.OverBound, r.MissingHeavy, r.Undercounts)
	}
}

// goalConfig is the scenario scaled to a test: Zipf 1.1, the default
// windows plus a sketch-mode day, the month sketch's error ratio (4.86% of
// the K-th count; width from ScaledWidth), late events and a viral item.
func goalConfig() Config {
	wc := window.DefaultConfig()
	wc.Sketch.Width = 0
	wc.Windows = append(wc.Windows,
		window.WindowConfig{Name: "day-sketch", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Sketch})
	c := DefaultConfig()
	c.Stream.Items, c.Stream.Zipf, c.Stream.Seed, c.Stream.Late = 100_000, 1.1, 1, 0.02
	c.Stream.Viral = []stream.Viral{{Item: "Vx", At: 30 * time.Hour, Share: 0.05, For: 8 * time.Hour, Ramp: time.Hour}}
	c.Views, c.Span, c.Partitions, c.Window = 1_000_000, 3*24*time.Hour, 2, wc
	return c
}

// TestGoals asserts the goals on one run: every exact list equals
// the truth (at four points and at the close of every calendar period, with
// 2% late events), every sketch list's recall@100 is at least 0.99, no item
// with twice the K-th count is missing, nothing is undercounted, and the
// fraction of reported items over their partition's bound is below
// e^-depth.
func TestGoals(t *testing.T) {
	rep, err := Run(context.Background(), goalConfig())
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, rep)
	if rep.SketchWidth != ScaledWidth(100_000, 1.1, 100, 2, MonthSketchRatio) || !rep.Scaled {
		t.Fatalf("width %d is not the scaled width", rep.SketchWidth)
	}
	if rep.Late == 0 {
		t.Fatal("no late events reached the partitions: the test does not exercise them")
	}
	if v := rep.Check(0.99); len(v) > 0 {
		t.Fatalf("goals missed:\n%s", strings.Join(v, "\n"))
	}
	var exactLists, sketchItems, overBound int
	var anyOver bool
	kinds := map[string]bool{}
	for _, r := range rep.Rows {
		kinds[string(r.Mode)+"/"+r.At] = true
		if r.Mode == windowset.Exact {
			exactLists += r.Lists
			if r.ExactLists != r.Lists || r.MaxOvercount != 0 {
				t.Errorf("%s at %s: %d of %d lists exact", r.Window, r.At, r.ExactLists, r.Lists)
			}
			continue
		}
		if r.Recall < 0.99 {
			t.Errorf("%s at %s: recall@100 %.3f < 0.99", r.Window, r.At, r.Recall)
		}
		sketchItems += r.Reported
		overBound += r.OverBound
		anyOver = anyOver || r.MaxOvercount > 0
		if r.BoundRatio <= 0 || r.BoundRatio > 2*MonthSketchRatio {
			t.Errorf("%s at %s: bound is %.3f of the K-th count, want near the month sizing's %.3f", r.Window, r.At, r.BoundRatio, MonthSketchRatio)
		}
	}
	if !anyOver {
		t.Error("no sketch list overcounted anything: the sketches are not under pressure and the test proves little")
	}
	if frac, limit := float64(overBound)/float64(sketchItems), math.Exp(-float64(rep.SketchDepth)); frac >= limit {
		t.Errorf("%.4f of sketch items exceed the bound, want below e^-%d = %.4f", frac, rep.SketchDepth, limit)
	}
	if exactLists < 60 || !kinds["exact/final"] || !kinds["sketch/100%"] {
		t.Errorf("only %d exact lists compared, kinds %v: the run covers too little", exactLists, kinds)
	}
}

// TestUndersizedSketchIsCaught is the negative control: with sketches 256
// times too narrow the harness must report lost recall and bound misses.
func TestUndersizedSketchIsCaught(t *testing.T) {
	cfg := goalConfig()
	cfg.Views = 300_000
	cfg.Span = 36 * time.Hour
	cfg.Window.Sketch.Width = ScaledWidth(100_000, 1.1, 100, 2, MonthSketchRatio) / 256
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Check(0.99)
	if len(v) == 0 || !strings.Contains(strings.Join(v, "\n"), "recall@100") {
		logRows(t, rep)
		t.Fatalf("an undersized sketch passed every goal: %v", v)
	}
	for _, line := range v {
		if strings.HasPrefix(line, "hour ") || strings.HasPrefix(line, "day ") {
			t.Errorf("an exact window failed: %s", line)
		}
	}
}

func TestDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Stream.Items, cfg.Stream.Seed = 10_000, 3
	cfg.Views, cfg.Span, cfg.Partitions = 100_000, 6*time.Hour, 3
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(context.Background(), cfg)
	a.Elapsed, b.Elapsed = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of the same config differ")
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := DefaultConfig()
	cfg.Stream.Items, cfg.Views, cfg.Span = 1000, 10_000, 2*time.Hour
	if _, err := Run(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestScaledWidth(t *testing.T) {
	// The default scenario: a month's K-th count of 1e6 out of 1.5e11 views,
	// 32 partitions: the scaling gives back its 2^18.
	if w := widthFor(1e6/1.5e11, 32, MonthSketchRatio); w != 1<<18 {
		t.Fatalf("the default scenario's scaling gives %d, want 2^18", w)
	}
	for _, c := range []struct {
		items, k, parts int
		s               float64
		want            int
	}{
		{1_000_000, 100, 4, 1.1, 1 << 14},
		{1_000_000, 100, 32, 1.1, 1 << 11},
		{100_000, 100, 2, 1.1, 1 << 15},
	} {
		w := ScaledWidth(c.items, c.s, c.k, c.parts, MonthSketchRatio)
		if w != c.want {
			t.Errorf("ScaledWidth(%d items, s=%g, K=%d, %d partitions) = %d, want %d", c.items, c.s, c.k, c.parts, w, c.want)
		}
		// The power of two nearest in log scale: the ratio is within a
		// factor sqrt(2) of the target.
		if r := Ratio(w, c.items, c.s, c.k, c.parts); r < MonthSketchRatio/math.Sqrt2 || r > MonthSketchRatio*math.Sqrt2 {
			t.Errorf("ratio %.4f at width %d is not within sqrt(2) of %.4f", r, w, MonthSketchRatio)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		mod   func(*Config)
		want  string
		field string // the setting named, "" for none
	}{
		{"views", func(c *Config) { c.Views = -1 }, "views", "Views"},
		{"span", func(c *Config) { c.Span = 1500 * time.Millisecond }, "span", "Span"},
		{"partitions", func(c *Config) { c.Partitions = 5000 }, "partitions", "Partitions"},
		{"points", func(c *Config) { c.Points = -1 }, "points", "Points"},
		{"rate", func(c *Config) { c.Views, c.Span = 1e12, time.Second }, "lengthen the span", ""},
		{"stream", func(c *Config) { c.Stream.Zipf = -1 }, "exponent", "Stream.Zipf"},
		{"window", func(c *Config) { c.Window.K = 5000 }, "K: 5000", "Window.K"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.mod(&cfg)
			err := cfg.Validate()
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrConfig mentioning %q", err, c.want)
			}
			if es := setting.Errors(err); c.field != "" && (len(es) != 1 || es[0].Field != c.field) {
				t.Fatalf("error %v, want one setting error naming %s", err, c.field)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}

// TestZeroMeansZero: DefaultConfig holds the defaults; a zero count is refused by its name
// (nested ones too) instead of taking the default; a zero sketch width is scaled.
func TestZeroMeansZero(t *testing.T) {
	for field, zero := range map[string]func(*Config){
		"Views":        func(c *Config) { c.Views = 0 },
		"Span":         func(c *Config) { c.Span = 0 },
		"Partitions":   func(c *Config) { c.Partitions = 0 },
		"Points":       func(c *Config) { c.Points = 0 },
		"TargetRatio":  func(c *Config) { c.TargetRatio = 0 },
		"Stream.Items": func(c *Config) { c.Stream.Items = 0 },
		"Window.K":     func(c *Config) { c.Window.K = 0 },
		"Window.M":     func(c *Config) { c.Window.M = 0 },
	} {
		c := DefaultConfig()
		zero(&c)
		err := c.Validate()
		es := setting.Errors(err)
		if !errors.Is(err, ErrConfig) || !errors.Is(err, setting.ErrConfig) || len(es) != 1 || es[0].Field != field {
			t.Errorf("%s 0: Validate = %v, want one setting error naming it", field, err)
		}
	}
	c := DefaultConfig()
	if got, want := c.derived().Window.Sketch.Width, ScaledWidth(c.Stream.Items, c.Stream.Zipf, c.Window.K, c.Partitions, c.TargetRatio); got != want || got == window.DefaultConfig().Sketch.Width {
		t.Errorf("Window.Sketch.Width 0: %d, want the scaled %d, not the window default", got, want)
	}
}

func e(item string, n uint64) topk.Entry { return topk.Entry{Item: item, Count: n} }

// TestCompare checks the measures on hand-made lists, one partition.
func TestCompare(t *testing.T) {
	bound := &sketch.Bound{MaxOvercount: 2, Probability: 0.99}
	truth := []topk.Entry{e("a", 100), e("b", 50), e("c", 10), e("d", 10), e("e", 9)}
	trueOf := map[string]uint64{"a": 100, "b": 50, "c": 10, "d": 10, "e": 9, "f": 1}
	for _, c := range []struct {
		name              string
		k                 int
		got               []topk.Entry
		recall, precision float64
		exact             bool
		overMax           uint64
		overBound, under  int
		missing           []string
	}{
		{"exact", 3, []topk.Entry{e("a", 100), e("b", 50), e("c", 10)}, 1, 1, true, 0, 0, 0, nil},
		// d ties with c at the K-th count: as good as c, but not exact.
		{"tie swapped", 3, []topk.Entry{e("a", 100), e("b", 50), e("d", 10)}, 1, 1, false, 0, 0, 0, nil},
		// e (true 9) overcounted to 12 takes the place of c or d (10).
		{"overcount", 3, []topk.Entry{e("a", 100), e("b", 50), e("e", 12)}, 2.0 / 3, 2.0 / 3, false, 3, 1, 0, nil},
		// a heavy item (>= 2x the K-th, 10) missing.
		{"heavy missing", 3, []topk.Entry{e("b", 50), e("c", 10), e("d", 10)}, 2.0 / 3, 1, false, 0, 0, 0, []string{"a"}},
		{"undercount", 2, []topk.Entry{e("a", 99), e("b", 50)}, 1, 1, false, 0, 0, 1, nil},
		{"short list", 3, []topk.Entry{e("a", 100)}, 1.0 / 3, 1, false, 0, 0, 0, []string{"b"}},
		// f (true 1) inflated past b (50, not twice the K-th 50: not heavy).
		{"tail item", 2, []topk.Entry{e("a", 100), e("f", 60)}, 0.5, 0.5, false, 59, 1, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := truth
			if len(tr) > c.k {
				tr = tr[:c.k]
			}
			r := compare(c.k, 1, []partList{{part: 0, list: window.List{Items: c.got, Bound: bound, Total: 200}, trueTop: tr, trueOf: trueOf}})
			if math.Abs(r.recall-c.recall) > 1e-9 || math.Abs(r.precision-c.precision) > 1e-9 {
				t.Errorf("recall %.3f precision %.3f, want %.3f %.3f", r.recall, r.precision, c.recall, c.precision)
			}
			if r.exact != c.exact || r.overMax != c.overMax || r.overBound != c.overBound || r.under != c.under || !reflect.DeepEqual(r.missing, c.missing) {
				t.Errorf("exact %v overMax %d overBound %d under %d missing %v; want %v %d %d %d %v",
					r.exact, r.overMax, r.overBound, r.under, r.missing, c.exact, c.overMax, c.overBound, c.under, c.missing)
			}
		})
	}
}
