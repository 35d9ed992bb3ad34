package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEnvTypoIsAnError: a TRENDING_* variable that names no flag is refused like an unknown key
// of the YAML file, with the nearest flag suggested, instead of leaving the default silently.
func TestEnvTypoIsAnError(t *testing.T) {
	t.Setenv("TRENDING_SKETCH_WIDHT", "1")
	_, err := runTrending(t, "plan", "--json")
	if !errors.As(err, new(usageError)) {
		t.Fatalf("err = %v, want a usage error (exit 2)", err)
	}
	for _, want := range []string{"TRENDING_SKETCH_WIDHT names no flag", "did you mean TRENDING_SKETCH_WIDTH, for --sketch-width?"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestReservedEnvIsNoFlagAndAccepted: the variables the project's scripts and tests set stay
// allowed (make test runs the binary with TRENDING_IT_* and TRENDING_RUN set), and a variable
// far from any flag gets no suggestion.
func TestReservedEnvIsNoFlagAndAccepted(t *testing.T) {
	t.Setenv("TRENDING_IT_KAFKA", "127.0.0.1:1")
	t.Setenv("TRENDING_RUN", "/tmp/x")
	t.Setenv("TRENDING_CONFIG", "")
	t.Setenv("TRENDING_SKETCH_WIDTH", "262144")
	if _, err := runTrending(t, "plan", "--json"); err != nil {
		t.Fatalf("reserved and flag variables refused: %v", err)
	}
	t.Setenv("TRENDING_QQQQQQQQQQQQ", "1")
	_, err := runTrending(t, "plan", "--json")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("err = %v, want an unknown variable without a suggestion", err)
	}
}

// TestNegativeDurationsRefused: a sign typed by mistake is refused on every duration flag
// whose help gives a negative value no meaning, from the command line and the environment.
func TestNegativeDurationsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"up", "--lateness", "-5s", "--listen", "127.0.0.1:0"},
		{"speed", "--checkpoint-every", "-1m"},
		{"serve", "--max-age", "-30s"},
	} {
		_, err := runTrending(t, args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("%v: err = %v, want a usage error saying it must not be negative", args, err)
		}
	}
	t.Setenv("TRENDING_LATENESS", "-5s")
	if _, err := runTrending(t, "speed"); err == nil || !strings.Contains(err.Error(), "--lateness: -5s: must not be negative") {
		t.Errorf("from the environment: err = %v", err)
	}
}

// TestValueErrorsInWords: a value of the wrong kind is named in words, not Go's parser errors.
func TestValueErrorsInWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--partitions", "x"}, `--partitions "x": not a whole number`},
		{[]string{"speed", "--lateness", "5"}, `--lateness "5": not a duration (a number with a unit: 30s, 5m, 1h30m)`},
		{[]string{"plan", "--partitions", "99999999999999999999"}, `out of range`},
	} {
		_, err := runTrending(t, c.args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want a usage error with %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "strconv") {
			t.Errorf("%v: %q shows Go internals", c.args, err)
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "t.yaml")
	if err := os.WriteFile(file, []byte("partitions: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runTrending(t, "plan", "--config", file); err == nil || !strings.Contains(err.Error(), `key "partitions" value "many": not a whole number`) {
		t.Errorf("from the file: err = %v", err)
	}
	t.Setenv("TRENDING_PARTITIONS", "many")
	if _, err := runTrending(t, "plan"); err == nil || !strings.Contains(err.Error(), `TRENDING_PARTITIONS="many": not a whole number`) {
		t.Errorf("from the environment: err = %v", err)
	}
}

// TestJSONLogDurationsInSeconds: JSON logs write a duration as seconds, text logs as Go does.
func TestJSONLogDurationsInSeconds(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("x", "took", 1500*time.Millisecond)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["took"] != 1.5 {
		t.Errorf("took = %v (%T), want 1.5 seconds", rec["took"], rec["took"])
	}
	buf.Reset()
	log, _ = newLogger(&buf, "info", "text")
	log.Info("x", "took", 1500*time.Millisecond)
	if !strings.Contains(buf.String(), "took=1.5s") {
		t.Errorf("text log %q, want took=1.5s", buf.String())
	}
}

// TestVersionNamesTheCommit: the commit passed at build time (the Makefile passes it, since Go
// stamps none with GOFLAGS=-buildvcs=false) is what `trending version` prints.
func TestVersionNamesTheCommit(t *testing.T) {
	old := commit
	t.Cleanup(func() { commit = old })
	commit = "0123456789abcdef"
	out, err := runTrending(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "commit 0123456789abcdef") {
		t.Errorf("version printed %q", out)
	}
}
