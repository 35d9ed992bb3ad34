package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/speed/merge"
)

// parseFlags registers a command's flags with add on a new flag set and parses args.
func parseFlags[T any](t *testing.T, add func(*pflag.FlagSet) T, args ...string) T {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f
}

// testInfra is the infra both sides of TestRolesBuiltOnce build on: one client, bucket name
// set and store, so only what the flags make of them can differ. parts is up's.
func testInfra(t *testing.T, parts bool) *infra {
	t.Helper()
	kc, err := eventlog.NewClient([]string{"127.0.0.1:1"}, eventlog.Security{})
	if err != nil {
		t.Fatal(err)
	}
	return &infra{
		app: &app{log: slog.New(slog.NewTextHandler(io.Discard, nil)), registry: prometheus.NewRegistry()},
		kc:  kc, names: eventlog.NamesFor("views"), parts: parts,
	}
}

// sharedInfra gives b a's client, store, titles and app, so the two sides differ only in
// what up does differently (parts, fieldFlags).
func sharedInfra(t *testing.T) (up, own *infra) {
	t.Helper()
	up = testInfra(t, true)
	st, err := openStore("bolt:" + filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	up.st, up.base = st, st
	own = &infra{app: up.app, kc: up.kc, names: up.names, st: st, base: st}
	return up, own
}

// TestRolesBuiltOnce builds every role's configuration from up's flags and from its own
// command's, given the same values, and compares them field by field. The only differences
// allowed are up's named ones (roles.go, "The roles of up"); any other is drift: a setting
// one path derives differently (the merger's lookback once was max(10 x publish, 1m) in up
// and 2 x staleness + 1m in merge).
func TestRolesBuiltOnce(t *testing.T) {
	// Values every role reads, given once to up and to each command that takes them.
	windows := []string{"--k", "40", "--groups", "eu,us", "--window-set", "hour=sliding:1h/1m,day=sliding:24h/1h:exact,calendar:hour,calendar:day,all=alltime"}
	speed := append([]string{"--partitions", "6", "--publish-every", "2s", "--checkpoint-every", "45s", "--max-future", "7m",
		"--m", "4", "--lateness", "20s", "--sketch-width", "4096", "--sketch-depth", "4", "--group-sketch-width", "1024",
		"--hour-mode", "sketch", "--since-days", "3", "--cap-views", "5", "--cap-slots", "1024", "--topics", "eu,us", "--topics-score", "volume", "--topics-sketch-width", "8192"}, windows...)
	upIn, ownIn := sharedInfra(t)
	// up's log lines carry part=ROLE: its roles share one log.
	upDiffs := map[string]string{"Log": "up tags each role's log lines with part=ROLE"}

	t.Run("speed", func(t *testing.T) {
		u := parseFlags(t, addUpFlags, speed...)
		s := parseFlags(t, addSpeedCommandFlags, speed...)
		uc, err := speedConfig(u.speedFlags(), upIn)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := speedConfig(s.speed, ownIn)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, uc, sc, upDiffs)
	})

	mergeCases := []struct {
		name     string
		up, own  []string
		lookback string
	}{
		{"staleness given", []string{"--partitions", "6", "--staleness", "9s"}, []string{"--partitions", "6", "--staleness", "9s"}, "18s + 1m"},
		// up's default staleness is three of its workers' publishes, merge.StalenessFor.
		{"staleness from the workers' cadence", []string{"--partitions", "6", "--publish-every", "2s"}, []string{"--partitions", "6", "--staleness", "6s"}, "12s + 1m"},
	}
	for _, tc := range mergeCases {
		t.Run("merge/"+tc.name, func(t *testing.T) {
			u := parseFlags(t, addUpFlags, append(tc.up, windows...)...)
			m := parseFlags(t, addMergeCommandFlags, append(tc.own, windows...)...)
			uc, urc, err := mergeConfig(u.mergeFlags(), upIn)
			if err != nil {
				t.Fatal(err)
			}
			mc, mrc, err := mergeConfig(m.merge, ownIn)
			if err != nil {
				t.Fatal(err)
			}
			compareConfigs(t, uc, mc, upDiffs)
			compareConfigs(t, urc, mrc, nil)
			if want := merge.LookbackFor(mc.Staleness); mrc.Lookback != want || urc.Lookback != want {
				t.Errorf("lookback: up %s, merge %s, want %s (2 x staleness + 1m: %s)", urc.Lookback, mrc.Lookback, want, tc.lookback)
			}
		})
	}

	t.Run("archive", func(t *testing.T) {
		// up names --roll-age --archive-roll.
		u := parseFlags(t, addUpFlags, "--partitions", "6", "--archive-roll", "40s", "--max-future", "7m")
		a := parseFlags(t, addArchiveCommandFlags, "--partitions", "6", "--roll-age", "40s", "--max-future", "7m")
		uc, err := archiveConfig(u.archiveFlags(), upIn)
		if err != nil {
			t.Fatal(err)
		}
		ac, err := archiveConfig(a.archive, ownIn)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, uc, ac, nil)
	})

	t.Run("batch", func(t *testing.T) {
		// up names --lateness --batch-lateness (--lateness is its speed workers').
		u := parseFlags(t, addUpFlags, append([]string{"--batch-lateness", "4m", "--cap-views", "5"}, windows...)...)
		b := parseFlags(t, addBatchSettings, append([]string{"--lateness", "4m", "--cap-views", "5"}, windows...)...)
		uc, err := batchConfig(u.batchSettings())
		if err != nil {
			t.Fatal(err)
		}
		bc, err := batchConfig(b)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, uc, bc, nil)
	})

	t.Run("batch topics", func(t *testing.T) {
		args := []string{"--topics", "eu,us", "--topics-score", "volume", "--topics-world-score", "surge"}
		u := parseFlags(t, addUpFlags, args...)
		b := parseFlags(t, addBatchTopicsFlags, args...)
		held := func(string) bool { return false }
		uc, err := batchTopicsConfig(u.batchTopicsFlags(), held, upFieldFlags)
		if err != nil {
			t.Fatal(err)
		}
		bc, err := batchTopicsConfig(b, held, batchTopicsFieldFlags)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, *uc, *bc, nil)
	})

	t.Run("loadgen", func(t *testing.T) {
		// up's --speedup paces its backfill (runLoad runs in real time after it), loadgen's
		// the whole run; --duration is loadgen's (up's load runs until stopped), given alike.
		args := []string{"--rate", "800", "--malformed", "0.001", "--speedup", "30", "--items", "5000", "--zipf", "1.2",
			"--servers", "7", "--viral", "V9@+1m:10%:5m", "--late", "0.02", "--server-regions", "eu,us"}
		u := parseFlags(t, addUpFlags, args...)
		l := parseFlags(t, addLoadgenCommandFlags, args...)
		now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
		uc, err := loadConfig(u.loadFlags(), 0, now)
		if err != nil {
			t.Fatal(err)
		}
		lc, err := loadConfig(&l.load, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, uc, lc, nil)
	})

	t.Run("api", func(t *testing.T) {
		args := append([]string{"--listen", "127.0.0.1:9999", "--refresh", "3s", "--max-streams", "7", "--topics", "eu"}, windows...)
		u := parseFlags(t, addUpFlags, args...)
		type serveFlags struct {
			af  *apiFlags
			k   int
			wsf *windowSetFlags
			tf  *topicsFlags
		}
		s := parseFlags(t, func(fs *pflag.FlagSet) *serveFlags {
			f := &serveFlags{af: addAPIFlags(fs, "127.0.0.1:8080"), wsf: addWindowSetFlags(fs, ""), tf: addTopicsFlags(fs, false, 0)}
			addKFlag(fs, &f.k, "")
			return f
		}, args...)
		uws, err := u.wf.windows.set()
		if err != nil {
			t.Fatal(err)
		}
		utc, err := u.tf.config()
		if err != nil {
			t.Fatal(err)
		}
		uc, err := u.api.config(u.wf.k, uws, utc, upIn.app)
		if err != nil {
			t.Fatal(err)
		}
		sws, err := s.wsf.set()
		if err != nil {
			t.Fatal(err)
		}
		stc, err := s.tf.config()
		if err != nil {
			t.Fatal(err)
		}
		sc, err := s.af.config(s.k, sws, stc, upIn.app)
		if err != nil {
			t.Fatal(err)
		}
		compareConfigs(t, uc, sc, nil)
	})
}

// compareConfigs reports every field of a and b (structs of one type, nested structs by
// their path: "Window.Sketch.Width") that differs, except those named in allowed with the
// reason up differs. Functions compare by whether they are set; pointers by what they point
// to.
func compareConfigs(t *testing.T, a, b any, allowed map[string]string) {
	t.Helper()
	var diffs []string
	diffValues(reflect.ValueOf(a), reflect.ValueOf(b), "", allowed, &diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

func diffValues(a, b reflect.Value, path string, allowed map[string]string, diffs *[]string) {
	if _, ok := allowed[path]; ok && path != "" {
		return
	}
	if a.Kind() == reflect.Struct {
		for i := range a.NumField() {
			name := a.Type().Field(i).Name
			diffValues(a.Field(i), b.Field(i), strings.TrimPrefix(path+"."+name, "."), allowed, diffs)
		}
		return
	}
	if a.Kind() == reflect.Pointer && !a.IsNil() && !b.IsNil() && a.Elem().Kind() == reflect.Struct && a.Pointer() != b.Pointer() {
		diffValues(a.Elem(), b.Elem(), path, allowed, diffs)
		return
	}
	if !equalValues(a, b, map[[2]uintptr]bool{}) {
		*diffs = append(*diffs, fmt.Sprintf("%s: up's %s, the command's %s", path, show(a), show(b)))
	}
}

// equalValues is reflect.DeepEqual that compares functions by whether they are set and
// reads unexported fields.
func equalValues(a, b reflect.Value, seen map[[2]uintptr]bool) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if a.Kind() == reflect.Func {
			return a.IsNil() == b.IsNil()
		}
		return a.Pointer() == b.Pointer()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		k := [2]uintptr{a.Pointer(), b.Pointer()}
		if k[0] == k[1] || seen[k] {
			return true
		}
		seen[k] = true
		return equalValues(a.Elem(), b.Elem(), seen)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValues(a.Elem(), b.Elem(), seen)
	case reflect.Struct:
		for i := range a.NumField() {
			if !equalValues(a.Field(i), b.Field(i), seen) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Kind() == reflect.Slice && a.IsNil() != b.IsNil() {
			return false
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValues(a.Index(i), b.Index(i), seen) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !equalValues(a.MapIndex(k), bv, seen) {
				return false
			}
		}
		return true
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.String:
		return a.String() == b.String()
	}
	panic("BUG: equalValues of kind " + a.Kind().String())
}

func show(v reflect.Value) string {
	if v.IsValid() && v.CanInterface() {
		return fmt.Sprintf("%v", v.Interface())
	}
	return fmt.Sprintf("%s value", v.Type())
}

// TestRolesBuiltOnceCatches: compareConfigs reports a drifted field by its path and lets a
// named difference through.
func TestRolesBuiltOnceCatches(t *testing.T) {
	type inner struct{ Width int }
	type cfg struct {
		K     int
		Inner inner
		Fn    func()
		Log   string
	}
	var diffs []string
	diffValues(reflect.ValueOf(cfg{K: 1, Inner: inner{2}, Fn: func() {}, Log: "a"}), reflect.ValueOf(cfg{K: 1, Inner: inner{3}, Log: "b"}), "",
		map[string]string{"Log": "named"}, &diffs)
	want := []string{"Inner.Width: up's 2, the command's 3", "Fn: up's"}
	if len(diffs) != 2 || diffs[0] != want[0] || !strings.HasPrefix(diffs[1], want[1]) {
		t.Errorf("diffs %q, want %q", diffs, want)
	}

	// A role's real configuration: the load generator's, whose stream is nested, drifted in
	// one field of the stream, is reported by that field's path.
	f := parseFlags(t, addLoadgenCommandFlags)
	a, err := loadConfig(&f.load, 0, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b := a
	b.Stream.Zipf += 0.1
	diffs = nil
	diffValues(reflect.ValueOf(a), reflect.ValueOf(b), "", nil, &diffs)
	if len(diffs) != 1 || !strings.HasPrefix(diffs[0], "Stream.Zipf: ") {
		t.Errorf("a drifted load generator's stream: diffs %q, want Stream.Zipf's", diffs)
	}
}

// TestRoleConfigsOnlyInRoles: outside roles.go no command starts a role's configuration
// from its package's defaults (reading one default value, as a flag's default, is fine), so
// no command can build a role a second way beside speedConfig, mergeConfig, archiveConfig,
// batchConfig, batchTopicsConfig and loadConfig.
func TestRoleConfigsOnlyInRoles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`\b(worker|merge|archive|batch|loadgen)\.Default(Run|Topics)?Config\(\)`)
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || file == "roles.go" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllIndex(b, -1) {
			if m[1] < len(b) && b[m[1]] == '.' {
				continue // one default value
			}
			line := 1 + strings.Count(string(b[:m[0]]), "\n")
			t.Errorf("%s:%d: %s starts a role's configuration outside roles.go: build it with the role's constructor there", file, line, b[m[0]:m[1]])
		}
	}
}
