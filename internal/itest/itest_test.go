package itest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// recorder stands in for *testing.T to see whether a gate skips or fails.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(f string, a ...any) {
	r.skipped = fmt.Sprintf(f, a...)
	panic(r)
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.failed = fmt.Sprintf(f, a...)
	panic(r)
}

func run(gate func(testing.TB)) (r *recorder) {
	r = &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	gate(r)
	return r
}

func TestGates(t *testing.T) {
	gates := map[string]struct {
		env  string
		gate func(testing.TB)
	}{
		"kafka":      {EnvKafka, func(tb testing.TB) { Kafka(tb) }},
		"clickhouse": {EnvClickHouse, func(tb testing.TB) { ClickHouse(tb) }},
		"s3":         {EnvS3, func(tb testing.TB) { S3(tb) }},
	}
	for name, g := range gates {
		t.Run(name+"/unset skips", func(t *testing.T) {
			t.Setenv(g.env, "")
			r := run(g.gate)
			if r.skipped == "" || r.failed != "" {
				t.Fatalf("unset %s: skipped=%q failed=%q, want a skip", g.env, r.skipped, r.failed)
			}
		})
		t.Run(name+"/unreachable fails", func(t *testing.T) {
			v := "127.0.0.1:1"
			if g.env == EnvS3 {
				v = "http://127.0.0.1:1"
			}
			t.Setenv(g.env, v)
			r := run(g.gate)
			if r.failed == "" || r.skipped != "" {
				t.Fatalf("unreachable %s: skipped=%q failed=%q, want a failure", g.env, r.skipped, r.failed)
			}
		})
	}
}

// TestMemReportNamesTheSites: the report WatchMemory prints names the heap, the limit, the
// profile's path and the allocation site that holds the most.
func TestMemReportNamesTheSites(t *testing.T) {
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = 512 * 1024 }()
	hold = holdMemory()
	f, err := os.CreateTemp(t.TempDir(), "report")
	if err != nil {
		t.Fatal(err)
	}
	memReport(f, 9<<30, 8<<30)
	f.Close()
	b, _ := os.ReadFile(f.Name())
	out := string(b)
	for _, want := range []string{"holds 9.00 GiB, over the test binary's 8.00 GiB", "heap profile: ", "itest.holdMemory", "goroutines:"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%.2000s", want, out)
		}
	}
	os.Remove(strings.Fields(out[strings.Index(out, "heap profile: ")+len("heap profile: "):])[0])
}

var hold [][]byte

//go:noinline
func holdMemory() [][]byte {
	var out [][]byte
	for range 64 {
		out = append(out, make([]byte, 1<<20))
	}
	return out
}
