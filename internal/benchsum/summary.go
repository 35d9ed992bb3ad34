package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// result is one benchmark line of `go test -bench` output.
type result struct {
	Pkg, Name string // Name without the -N GOMAXPROCS suffix
	Procs     int
	Metrics   map[string]float64 // unit -> value; ns/op is given as sec/op too
}

// parse reads `go test -bench` output in the Go benchmark format (what benchstat reads): the
// "pkg:" lines name the package of the benchmark lines after them; other lines are skipped.
func parse(r io.Reader) ([]result, error) {
	var out []result
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if r, ok := apiRound(f); ok {
			out = append(out, r)
			continue
		}
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // "BenchmarkX  --- SKIP" and the like
		}
		name, procs := splitProcs(f[0])
		res := result{Pkg: pkg, Name: name, Procs: procs, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: value %q: %w", line, f[i], err)
			}
			res.Metrics[f[i+1]] = v
			if f[i+1] == "ns/op" {
				res.Metrics["sec/op"] = v / 1e9
			}
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// apiPkg is the package name the rounds of serving/api/bench/run.sh are filed under.
const apiPkg = "serving/api/bench/run.sh"

// apiRound reads one line of run.sh's table, "ROUND SERVER REQ/S P50 P99 CPU ...", as a
// result named after the server (nginx, bare, trending).
func apiRound(f []string) (result, bool) {
	if len(f) < 6 || (f[1] != "nginx" && f[1] != "bare" && f[1] != "trending") {
		return result{}, false
	}
	if _, err := strconv.Atoi(f[0]); err != nil {
		return result{}, false
	}
	r := result{Pkg: apiPkg, Name: f[1], Procs: 1, Metrics: map[string]float64{}}
	for i, unit := range []string{"req/s", "p50-ms", "p99-ms", "cpu-us/req"} {
		v, err := strconv.ParseFloat(f[2+i], 64)
		if err != nil {
			return result{}, false
		}
		r.Metrics[unit] = v
	}
	return r, true
}

// splitProcs splits the -N suffix Go adds to a benchmark's name when GOMAXPROCS is not 1.
func splitProcs(name string) (string, int) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name, 1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 1 {
		return name, 1
	}
	return name[:i], n
}

// samples returns the values of metric over the runs of pkg's benchmark name at procs (0:
// the most procs any run of it had).
func samples(rs []result, pkg, name, metric string, procs int) []float64 {
	if procs == 0 {
		for _, r := range rs {
			if r.Pkg == pkg && r.Name == name {
				procs = max(procs, r.Procs)
			}
		}
	}
	var vs []float64
	for _, r := range rs {
		if v, ok := r.Metrics[metric]; ok && r.Pkg == pkg && r.Name == name && r.Procs == procs {
			vs = append(vs, v)
		}
	}
	return vs
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// row is one evaluated goal.
type row struct {
	goal
	Value    float64
	Min, Max float64
	Runs     int
	Found    bool
}

// evaluate computes every goal's median (and range over runs) from rs. A ratio of two
// benchmarks pairs their runs in order when both have as many, else divides medians.
func evaluate(rs []result, gs []goal) []row {
	out := make([]row, 0, len(gs))
	for _, g := range gs {
		r := row{goal: g}
		a := samples(rs, g.Pkg, g.Bench, g.Metric, g.Procs)
		vs := a
		if g.Over != "" {
			b := samples(rs, g.Pkg, g.Over, g.Metric, g.Procs)
			vs = nil
			switch {
			case len(a) == 0 || len(b) == 0:
			case len(a) == len(b):
				for i := range a {
					vs = append(vs, a[i]/b[i])
				}
			default:
				vs = []float64{median(a) / median(b)}
			}
		}
		if len(vs) > 0 {
			r.Found, r.Runs, r.Value = true, len(vs), median(vs)
			r.Min, r.Max = slices.Min(vs), slices.Max(vs)
		}
		out = append(out, r)
	}
	return out
}

// verdict says whether r meets its goal.
func (r row) verdict() string {
	switch {
	case !r.Found:
		return "not run"
	case r.AtLeast > 0 && r.Value >= r.AtLeast, r.AtMost > 0 && r.Value <= r.AtMost:
		return "met"
	case r.AtLeast > 0, r.AtMost > 0:
		return "**not met**"
	}
	return ""
}

func (r row) format(v float64) string {
	switch {
	case r.Unit == "x":
		return strconv.FormatFloat(v, 'f', 2, 64) + "x"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64) + r.Unit
	default:
		return strconv.FormatFloat(v, 'f', 2, 64) + r.Unit
	}
}

// writeSummary writes the goal table as Markdown: the median over runs, the range, the goal.
func writeSummary(w io.Writer, rows []row, header []string) error {
	bw := bufio.NewWriter(w)
	for _, h := range header {
		fmt.Fprintln(bw, h)
	}
	fmt.Fprintln(bw, "| what | benchmark, metric | median (runs: range) | goal | |")
	fmt.Fprintln(bw, "| --- | --- | --- | --- | --- |")
	for _, r := range rows {
		bench := r.Bench
		if r.Over != "" {
			bench += " over " + strings.TrimPrefix(r.Over, "Benchmark")
		}
		if r.Procs == 1 {
			bench += " (-cpu 1)"
		}
		val, goal := "", ""
		if r.Found {
			val = r.format(r.Value)
			if r.Runs > 1 {
				val += fmt.Sprintf(" (%d: %s-%s)", r.Runs, r.format(r.Min), r.format(r.Max))
			}
		}
		switch {
		case r.AtLeast > 0:
			goal = ">= " + r.format(r.AtLeast)
		case r.AtMost > 0:
			goal = "<= " + r.format(r.AtMost)
		}
		fmt.Fprintf(bw, "| %s | `%s` %s, %s | %s | %s | %s |\n", r.What, strings.TrimPrefix(r.Pkg, "trending/"), bench, r.Metric, val, goal, r.verdict())
	}
	return bw.Flush()
}
