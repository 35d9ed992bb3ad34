package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `# make bench, 2026-12-02T00:00:00Z

# $ go test -run '^$' -bench '^BenchmarkConsume$' -cpu 1,2 ./speed/worker
# load average before: 1.00 1.00 1.00
goos: linux
goarch: amd64
pkg: trending/speed/worker
cpu: Intel(R) Xeon(R) Processor
BenchmarkConsume     	       3	         2.0 batch/fetchmessage_cpu	         0.80 worker/fetchmessage_cpu	0 ns/op
BenchmarkConsume     	       3	         2.0 batch/fetchmessage_cpu	         1.10 worker/fetchmessage_cpu	0 ns/op
BenchmarkConsume     	       3	         2.0 batch/fetchmessage_cpu	         1.06 worker/fetchmessage_cpu	0 ns/op
BenchmarkConsume-2   	       3	         2.4 batch/fetchmessage_cpu	         0.90 worker/fetchmessage_cpu	0 ns/op
--- SKIP: BenchmarkRecovery
PASS
pkg: trending/speed/sketch
BenchmarkAdd/w=2^18/ours-2         	10000000	        30.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdd/w=2^18/ours-2         	10000000	        20.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdd/w=2^18/boom-2         	10000000	        45.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkAdd/w=2^18/boom-2         	10000000	        50.0 ns/op	       0 B/op	       0 allocs/op
ok  	trending/speed/sketch	3.1s

round  server       requests/s     p50 ms     p99 ms   CPU us/req   vs nginx    vs bare CPU vs nginx
1      nginx             60000      1.000      2.000         10.0      1.00x                   1.00x
1      bare              36000      1.700      4.000         25.0      0.60x      1.00x        0.40x
1      trending          40000      1.500      6.000         24.0      0.67x      1.11x        0.42x
2      nginx             50000      1.000      2.000         10.0      1.00x                   1.00x
2      trending          40000      1.500      4.000         24.0      0.80x      1.11x        0.42x
`

func TestParseAndEvaluate(t *testing.T) {
	rs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 13 {
		t.Fatalf("%d results, want 13: %+v", len(rs), rs)
	}
	if r := rs[3]; r.Pkg != "trending/speed/worker" || r.Name != "BenchmarkConsume" || r.Procs != 2 || r.Metrics["worker/fetchmessage_cpu"] != 0.9 {
		t.Fatalf("the -2 line: %+v", r)
	}
	if r := rs[4]; r.Name != "BenchmarkAdd/w=2^18/ours" || r.Procs != 2 || r.Metrics["sec/op"] != 30e-9 {
		t.Fatalf("a sub-benchmark: %+v", r)
	}
	gs := []goal{
		{What: "cpu-bound", Pkg: "trending/speed/worker", Bench: "BenchmarkConsume", Procs: 1, Metric: "worker/fetchmessage_cpu", AtLeast: 0.9, Unit: "x"},
		{What: "all cores", Pkg: "trending/speed/worker", Bench: "BenchmarkConsume", Metric: "worker/fetchmessage_cpu", AtLeast: 0.95, Unit: "x"},
		{What: "add", Pkg: "trending/speed/sketch", Bench: "BenchmarkAdd/w=2^18/boom", Over: "BenchmarkAdd/w=2^18/ours", Metric: "sec/op", AtLeast: 2, Unit: "x"},
		{What: "missing", Pkg: "trending/speed/worker", Bench: "BenchmarkRecovery", Metric: "s/restore", AtMost: 10, Unit: " s"},
		{What: "api", Pkg: apiPkg, Bench: "trending", Over: "nginx", Metric: "req/s", AtLeast: 0.7, Unit: "x"},
		{What: "api p99", Pkg: apiPkg, Bench: "trending", Metric: "p99-ms", AtMost: 5, Unit: " ms"},
	}
	rows := evaluate(rs, gs)
	for i, want := range []struct {
		value, lo, hi float64
		runs          int
		verdict       string
	}{
		{1.06, 0.80, 1.10, 3, "met"},
		{0.90, 0.90, 0.90, 1, "**not met**"},
		{2.0, 1.5, 2.5, 2, "met"}, // paired run by run: 45/30, 50/20
		{0, 0, 0, 0, "not run"},
		{0.7333333333333334, 0.6666666666666666, 0.8, 2, "met"}, // paired by round: 40/60, 40/50
		{5, 4, 6, 2, "met"},
	} {
		r := rows[i]
		if r.Runs != want.runs || !near(r.Value, want.value) || !near(r.Min, want.lo) || !near(r.Max, want.hi) || r.verdict() != want.verdict {
			t.Errorf("%s: %+v (verdict %q), want %+v", r.What, r, r.verdict(), want)
		}
	}
	var buf bytes.Buffer
	if err := writeSummary(&buf, rows, []string{"head"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| cpu-bound | `speed/worker` BenchmarkConsume (-cpu 1), worker/fetchmessage_cpu | 1.06x (3: 0.80x-1.10x) | >= 0.90x | met |",
		"| add | `speed/sketch` BenchmarkAdd/w=2^18/boom over Add/w=2^18/ours, sec/op | 2.00x (2: 1.50x-2.50x) | >= 2.00x | met |",
		"| missing | `speed/worker` BenchmarkRecovery, s/restore |  | <= 10.00 s | not run |",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestSplitProcs(t *testing.T) {
	for _, tc := range []struct {
		in    string
		name  string
		procs int
	}{
		{"BenchmarkX", "BenchmarkX", 1},
		{"BenchmarkX-2", "BenchmarkX", 2},
		{"BenchmarkX/100000-16", "BenchmarkX/100000", 16},
		{"BenchmarkX/a-b", "BenchmarkX/a-b", 1},
	} {
		if n, p := splitProcs(tc.in); n != tc.name || p != tc.procs {
			t.Errorf("splitProcs(%q) = %q, %d; want %q, %d", tc.in, n, p, tc.name, tc.procs)
		}
	}
}

// The suites and goals name real benchmarks: every goal's package is one a suite runs (or
// the API script's).
func TestGoalsAreRun(t *testing.T) {
	pkgs := map[string]bool{apiPkg: true} // make bench-api
	for _, s := range suites {
		pkgs["trending/"+strings.TrimPrefix(s.Pkg, "./")] = true
	}
	for _, g := range goals {
		if !pkgs[g.Pkg] {
			t.Errorf("goal %q: no suite runs package %s", g.What, g.Pkg)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
