package itest

import (
	"fmt"
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
