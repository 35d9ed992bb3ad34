package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEachFlagDefinedOnce walks every flag registration in this package's source (a pflag
// XxxVar or Var call with a literal name) and checks that each name is registered by one
// function: `up` and the cluster commands build their roles from the same flag groups, and
// a one-shot argument (--json, --from, --seed) means the same in every command that has it;
// defaults and wording are passed in, never redefined.
func TestEachFlagDefinedOnce(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		srcs[file] = string(b)
	}
	owners := flagOwners(t, srcs)
	for _, must := range []string{"kafka", "kafka-tls", "kafka-password", "views-topic", "consumer-group", "store", "s3-endpoint", "clickhouse", "clickhouse-user", "k", "lateness", "partitions", "publish-every", "token", "listen"} {
		if len(owners[must]) == 0 {
			t.Errorf("--%s: no registration found; the scan is broken", must)
		}
	}
	for name, fns := range owners {
		if len(fns) < 2 {
			continue
		}
		var list []string
		for fn := range fns {
			list = append(list, fn)
		}
		sort.Strings(list)
		t.Errorf("--%s is registered by %d functions (%s): register it in one flag-group function and call that", name, len(list), strings.Join(list, ", "))
	}
}

// TestUpAndServeShareFlags: the flags of the serving side mean the same in up and serve.
func TestUpAndServeShareFlags(t *testing.T) {
	root := newRootCommand()
	up, _, err := root.Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kafka", "views-topic", "kafka-tls", "kafka-sasl", "kafka-password", "store", "token", "ingest-token", "listen", "s3-endpoint", "clickhouse-user"} {
		u, s := up.Flags().Lookup(name), serve.Flags().Lookup(name)
		if u == nil || s == nil {
			t.Errorf("--%s: up has it %v, serve %v", name, u != nil, s != nil)
			continue
		}
		if name != "kafka" && name != "store" && name != "listen" && name != "s3-endpoint" && u.Usage != s.Usage {
			t.Errorf("--%s means different things:\n up:    %s\n serve: %s", name, u.Usage, s.Usage)
		}
	}
}

// TestKafkaFlagsReportByFlag: Kafka settings that cannot work are usage errors naming the
// flags of the command being run, before anything connects.
func TestKafkaFlagsReportByFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"up", "--no-load", "--data", t.TempDir(), "--kafka-tls"}, "external --kafka"},
		{[]string{"speed", "--kafka-sasl", "bogus"}, "--kafka-sasl"},
		{[]string{"merge", "--kafka-user", "u"}, "--kafka-user"},
		{[]string{"archive", "--kafka", ""}, "--kafka"},
		{[]string{"loadgen", "--kafka", " , "}, "--kafka"},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--kafka", "127.0.0.1:1", "--kafka-sasl", "plain", "--kafka-user", "u", "--kafka-password", "p"}, "clear text"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runTrending(t, c.args...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a usage error containing %q", err, c.want)
			}
		})
	}
}

// TestSettingErrorsNameTheCommandsFlags: a package reports a bad setting by its field, and
// each command names its own flag for it: the batch's lateness is --lateness on `batch`
// and --batch-lateness on `up`.
func TestSettingErrorsNameTheCommandsFlags(t *testing.T) {
	dir := t.TempDir()
	_, err := runTrending(t, "batch", "run", "--window", "hour", "--start", "2026-11-14T10", "--lateness", "-1s",
		"--s3-endpoint", "http://127.0.0.1:1", "--rollups", filepath.Join(dir, "r.db"), "--store", "bolt:"+filepath.Join(dir, "s.db"))
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--lateness: -1s: must not be negative") {
		t.Errorf("batch --lateness -1s: %v, want a usage error naming --lateness", err)
	}
	_, err = runTrending(t, "up", "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--no-load", "--backfill", "0",
		"--batch-lateness", "-1s")
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--batch-lateness: -1s: must not be negative") {
		t.Errorf("up --batch-lateness -1s: %v, want a usage error naming --batch-lateness", err)
	}
	// Zero or empty settings are refused by their flag, not replaced by the package's default.
	for flag, want := range map[string]string{"--archive-roll": "--archive-roll: 0s: must be positive", "--batch-every": "--batch-every: 0s: must be positive"} {
		_, err = runTrending(t, "up", "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--no-load", "--backfill", "0", flag, "0s")
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("up %s 0s: %v, want a usage error containing %q", flag, err, want)
		}
	}
	_, err = runTrending(t, "batch", "run", "--window", "hour", "--start", "2026-11-14T10", "--s3-region", "",
		"--s3-endpoint", "http://127.0.0.1:1", "--rollups", filepath.Join(dir, "r2.db"), "--store", "bolt:"+filepath.Join(dir, "s2.db"))
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--s3-region: s3 region is empty") {
		t.Errorf("batch --s3-region '': %v, want a usage error naming --s3-region", err)
	}
	for _, args := range [][]string{
		{"serve", "--store", "bolt:" + filepath.Join(dir, "s3.db"), "--listen", "127.0.0.1:0", "--serve-stale-for", "1s"},
		{"up", "--data", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--no-load", "--backfill", "0", "--serve-stale-for", "1s"},
	} {
		_, err = runTrending(t, args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--serve-stale-for: 1s: must be at least the ") {
			t.Errorf("%s --serve-stale-for 1s: %v, want a usage error naming --serve-stale-for", args[0], err)
		}
	}
}

// flagOwners maps each flag name registered in srcs (file name -> Go source) to the
// functions registering it, as "file:func".
func flagOwners(t *testing.T, srcs map[string]string) map[string]map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	owners := map[string]map[string]bool{}
	for file, src := range srcs {
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) < 3 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || !strings.HasSuffix(sel.Sel.Name, "Var") {
					return true
				}
				lit, ok := call.Args[1].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				name, _ := strconv.Unquote(lit.Value)
				if owners[name] == nil {
					owners[name] = map[string]bool{}
				}
				owners[name][file+":"+fd.Name.Name] = true
				return true
			})
		}
	}
	return owners
}

// TestFlagOwnersSeesASecondDefinition: the scan behind TestEachFlagDefinedOnce finds a flag
// registered by two functions, whatever the pflag method, and not one registered once.
func TestFlagOwnersSeesASecondDefinition(t *testing.T) {
	owners := flagOwners(t, map[string]string{
		"a.go": `package main
func addOne(fs *pflag.FlagSet, s *string) { fs.StringVar(s, "kafka", "", "brokers") }`,
		"b.go": `package main
func newX(fs *pflag.FlagSet, d *int64, ok *bool) {
	fs.Var(countFlag{d}, "kafka", "brokers again")
	fs.BoolVar(ok, "json", false, "once")
}`,
	})
	if got := len(owners["kafka"]); got != 2 || !owners["kafka"]["a.go:addOne"] || !owners["kafka"]["b.go:newX"] {
		t.Errorf("--kafka owners = %v, want a.go:addOne and b.go:newX", owners["kafka"])
	}
	if got := len(owners["json"]); got != 1 {
		t.Errorf("--json owners = %v, want one", owners["json"])
	}
}

// TestParseWhen: every time flag reads now, offsets from now and UTC times of any precision,
// and names itself when it cannot.
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 14, 10, 30, 15, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"now":                       now,
		"-2h":                       now.Add(-2 * time.Hour),
		"-30d":                      now.AddDate(0, 0, -30),
		"+1d":                       now.AddDate(0, 0, 1),
		"2026-11-14T10":             time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC),
		"2026-11-14T10:05":          time.Date(2026, 11, 14, 10, 5, 0, 0, time.UTC),
		"2026-11-14":                time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC),
		"2026-11":                   time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		"2026-11-14T10:00:00Z":      time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC),
		"2026-11-14T11:00:00+01:00": time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseWhenAt("start", in, now)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("parseWhenAt(%q) = %v, %v; want %v UTC", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "-2x", "2026-13-01", "14/11/2026"} {
		if _, err := parseWhenAt("from", in, now); err == nil || !strings.Contains(err.Error(), "--from") {
			t.Errorf("parseWhenAt(%q) = %v, want an error naming --from", in, err)
		}
	}
}
