// Command benchsum is `make bench`: it runs every benchmark BENCHMARKS.md cites, each with
// the flags its rows were measured with, into one file in the Go benchmark format (what
// benchstat reads), and writes a short summary table of the rows that have a goal.
//
//	go run ./internal/benchsum run [-out bench.out] [-summary bench-summary.md] [-bench REGEXP]
//	go run ./internal/benchsum summary [-summary FILE] bench.out...
//
// run writes, before each `go test` command, comment lines with the command and the load
// average (benchstat skips them), so the file says how and under what load each number was
// taken. Benchmarks on the real servers skip unless TRENDING_IT_* is set (`make
// services-up`, then `eval "$(infra/local/services.sh env)"`). Compare two files with
// `benchstat old.out new.out`.
//
// In detail (DESIGN.md's file map has the line): `make bench`: runs every benchmark
// BENCHMARKS.md cites with the flags of its rows into `bench.out` (the Go benchmark format
// benchstat reads, with each command and the load average as comment lines), and writes
// the table of the rows with a goal (`bench-summary.md`: the median over runs, the range,
// met or not), from `bench.out` and `make bench-api`'s `bench-api.out`
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "summary":
		err = summary(os.Args[2:])
	case "-h", "-help", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "benchsum: unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsum:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  benchsum run [-out bench.out] [-summary bench-summary.md] [-bench REGEXP]
      runs every benchmark of BENCHMARKS.md (or those whose package or -bench pattern
      matches REGEXP) into -out, then writes the summary of the goals to -summary
  benchsum summary [-summary FILE] FILE...
      writes the summary of benchmark output files (stdout without -summary)
`)
	os.Exit(2)
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	out := fs.String("out", "bench.out", "file the benchmark output goes to (Go benchmark format)")
	sum := fs.String("summary", "bench-summary.md", "file the summary table goes to")
	filter := fs.String("bench", "", "run only the suites whose package or -bench pattern matches this regexp")
	fs.Parse(args)
	var re *regexp.Regexp
	if *filter != "" && *filter != "." {
		var err error
		if re, err = regexp.Compile(*filter); err != nil {
			return fmt.Errorf("-bench: %w", err)
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := io.MultiWriter(f, os.Stdout)
	fmt.Fprintf(w, "# make bench, %s\n", time.Now().UTC().Format(time.RFC3339))
	failed := 0
	for _, s := range suites {
		if re != nil && !re.MatchString(s.Pkg) && !re.MatchString(s.Bench) {
			continue
		}
		args := append([]string{"test", "-run", "^$", "-bench", s.Bench}, s.Args...)
		args = append(args, s.Pkg)
		fmt.Fprintf(w, "\n# $ %sgo %s\n", envPrefix(s.Env), quoteArgs(args))
		fmt.Fprintf(w, "# load average before: %s\n", loadavg())
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), s.Env...)
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Run(); err != nil {
			failed++
			fmt.Fprintf(w, "# FAILED: %v\n", err)
		}
		fmt.Fprintf(w, "# load average after: %s\n", loadavg())
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := summary([]string{"-summary", *sum, *out}); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d benchmark commands failed (see %s)", failed, *out)
	}
	return nil
}

func summary(args []string) error {
	fs := flag.NewFlagSet("summary", flag.ExitOnError)
	sum := fs.String("summary", "", "file to write the table to (default stdout)")
	fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("summary: name the benchmark output files")
	}
	var rs []result
	for _, name := range fs.Args() {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		got, err := parse(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rs = append(rs, got...)
	}
	header := []string{
		fmt.Sprintf("Goals of BENCHMARKS.md from %s (%d benchmark lines), written %s; load average now %s.", strings.Join(fs.Args(), ", "), len(rs),
			time.Now().UTC().Format(time.RFC3339), loadavg()),
		"Each value is the median over the runs (the range after it); ratios are the baseline's cost over ours, measured in the same run.",
		"",
	}
	out := io.Writer(os.Stdout)
	if *sum != "" {
		f, err := os.Create(*sum)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(f, os.Stdout)
	}
	return writeSummary(out, evaluate(rs, goals), header)
}

// loadavg returns the 1, 5 and 15 minute load averages, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

// quoteArgs renders args as a shell would need them typed.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*? ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}
