package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/internal/objstore"
)

// batchArchive is an embedded S3 holding an archive with events in the given hours (V1 5+1
// views, V2 3 in each), complete through until; its args point a batch command at it, with
// the rollups and the serving store in dir.
type batchArchive struct {
	dir, s3dir string
	args       []string
}

func newBatchArchive(t *testing.T, hours []time.Time, until time.Time) *batchArchive {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	s3dir := filepath.Join(dir, "s3")
	emb, err := objstore.StartEmbedded(ctx, s3dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = emb.Endpoint, "trending", "trending", "trending-secret"
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	off := int64(0)
	for _, h := range hours {
		rows := []archive.Row{
			{ItemID: "V1", Count: 5, TS: h.Add(time.Minute).UnixMilli(), Offset: off},
			{ItemID: "V2", Count: 3, TS: h.Add(2 * time.Minute).UnixMilli(), Offset: off + 1},
			{ItemID: "V1", Count: 1, TS: h.Add(3 * time.Minute).UnixMilli(), Offset: off + 2},
		}
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[archive.Row](&buf, archive.Schema())
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("archive/views/dt=%s/hour=%02d/p0000-o%012d-o%012d.parquet", h.Format(time.DateOnly), h.Hour(), off, off+2)
		if _, err := obj.Put(ctx, key, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		off += 3
	}
	prog, _ := json.Marshal(archive.Progress{Partition: 0, NextOffset: off, Watermark: until, Updated: until})
	if _, err := obj.Put(ctx, "archive/views/_progress/p0000.json", prog); err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(archive.TopicManifest{Topic: "views", Partitions: 1, Updated: until})
	if _, err := obj.Put(ctx, "archive/views/_topic.json", manifest); err != nil {
		t.Fatal(err)
	}
	return &batchArchive{dir: dir, s3dir: s3dir, args: []string{"--s3-endpoint", emb.Endpoint,
		"--rollups", filepath.Join(dir, "data", "rollups.db"), "--store", "bolt:" + filepath.Join(dir, "data", "serving.db")}}
}

// run runs `trending batch args...` on the archive and returns its standard output (the
// report, the JSON) and, apart, its standard error (the progress lines).
func (a *batchArchive) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := a.run2(t, args...)
	return out, err
}

func (a *batchArchive) run2(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(append([]string{"batch"}, args...), a.args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// files is every file under dir with its size and modification time.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				out[p] = info.ModTime().String() + " " + string(rune(info.Size()))
			}
		}
		return nil
	})
	return out
}

// TestBatchRangeVocabulary: --windows, --from and --to read alike on run, backfill and
// status, --from -1d is the whole of yesterday, and run's old flags still work and say what
// to use instead.
func TestBatchRangeVocabulary(t *testing.T) {
	now := time.Date(2026, 12, 5, 15, 42, 0, 0, time.UTC)
	for _, c := range []struct {
		from, to string
		lo, hi   string
	}{
		{"-1d", "-1d", "2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z"},
		{"-1d", "", "2026-12-04T00:00:00Z", "2026-12-05T00:00:00Z"},
		{"yesterday", "now", "2026-12-04T00:00:00Z", "2026-12-05T15:42:00Z"},
		{"today", "", "2026-12-05T00:00:00Z", "2026-12-06T00:00:00Z"},
		{"2026-11-14T10", "", "2026-11-14T10:00:00Z", "2026-11-14T11:00:00Z"},
		{"2026-11-14T10", "2026-11-14T12", "2026-11-14T10:00:00Z", "2026-11-14T13:00:00Z"},
		{"2026-11-14", "2026-11-15", "2026-11-14T00:00:00Z", "2026-11-16T00:00:00Z"},
		{"2026-11", "", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"-3h", "", "2026-12-05T12:00:00Z", "2026-12-05T13:00:00Z"},
	} {
		lo, hi, err := rangeFlags{from: c.from, to: c.to}.span(now, "")
		if err != nil || lo.Format(time.RFC3339) != c.lo || hi.Format(time.RFC3339) != c.hi {
			t.Errorf("--from %q --to %q: [%s, %s) %v, want [%s, %s)", c.from, c.to, lo.Format(time.RFC3339), hi.Format(time.RFC3339), err, c.lo, c.hi)
		}
	}
	for _, c := range []rangeFlags{{from: "2026-11-15", to: "2026-11-14"}, {from: "soon"}, {from: "2026-11-14", to: "x"}, {}} {
		if _, _, err := c.span(now, ""); !errors.As(err, new(usageError)) {
			t.Errorf("%+v: %v, want a usage error", c, err)
		}
	}
	// The same three flags, with the same words, on every subcommand with a range.
	root := newRootCommand()
	var usage map[string]string
	for _, sub := range []string{"run", "backfill", "status"} {
		c, _, err := root.Find([]string{"batch", sub})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, name := range []string{"from", "to", "windows"} {
			f := c.Flags().Lookup(name)
			if f == nil {
				t.Fatalf("batch %s has no --%s", sub, name)
			}
			got[name] = f.Usage
		}
		got["windows"] = "" // the kinds a command takes differ; the parsing does not
		got["from"] = got["from"][strings.Index(got["from"], ";"):]
		if usage != nil && !maps.Equal(usage, got) {
			t.Errorf("batch %s: --from/--to read %v, others %v", sub, got, usage)
		}
		usage = got
	}
	a := newBatchArchive(t, []time.Time{time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)}, time.Date(2026, 11, 14, 12, 0, 0, 0, time.UTC))
	out, err := a.run(t, "run", "--window", "hour", "--start", "2026-11-14T10")
	if err != nil || !strings.Contains(out, "1 lists published") {
		t.Errorf("run --window --start: %v %q", err, out)
	}
	if _, err := a.run(t, "status", "--window", "hour"); !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "unknown flag: --window (did you mean --windows?)") {
		t.Errorf("status --window: %v, want unknown flag with the nearest suggested", err)
	}
}

// TestBatchDoesWhatCanBeDone: a range reaching into the present recomputes its closed windows
// and lists the open ones (exit 0); one wholly in the future is a usage error (exit 2).
func TestBatchDoesWhatCanBeDone(t *testing.T) {
	now := time.Now().UTC()
	h := now.Add(-3 * time.Hour).Truncate(time.Hour)
	a := newBatchArchive(t, []time.Time{h}, now) // archived through now: hours up to now-lateness close
	out, err := a.run(t, "backfill", "--from", h.Format("2006-01-02T15"), "--to", "now", "--windows", "hour", "--json")
	if err != nil {
		t.Fatalf("backfill into the present: %v\n%s", err, out)
	}
	var o batchOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// h, h+1 and h+2 have closed (their end plus 10 minutes has passed) unless now is within
	// 10 minutes past the hour; the current hour is open.
	wantOpen := 1
	if now.Sub(now.Truncate(time.Hour)) < 10*time.Minute {
		wantOpen = 2
	}
	// h is published; the closed hours after it have no events (kept: nothing to publish).
	if o.Summary.Windows != 4 || o.Summary.Open != wantOpen || o.Summary.Published != 1 || o.Summary.Kept != 3-wantOpen ||
		o.Windows[0].State != "published" || o.Windows[0].Views != 9 || o.Windows[3].State != "open" || !strings.Contains(o.Windows[3].Reason, "--force") {
		t.Errorf("summary %+v, windows %+v: want 1 published, %d kept and %d open", o.Summary, o.Windows, 3-wantOpen, wantOpen)
	}
	_, err = a.run(t, "backfill", "--from", "+2d", "--windows", "hour,day")
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "in the future") {
		t.Errorf("a future range: %v, want a usage error", err)
	}
}

// TestBatchDryRunTouchesNothing: a dry run creates no rollup file and no serving store, and
// leaves the bucket as it was; so does planning all time.
func TestBatchDryRunTouchesNothing(t *testing.T) {
	a := newBatchArchive(t, []time.Time{time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)}, time.Date(2026, 11, 15, 1, 0, 0, 0, time.UTC))
	before := files(t, a.dir)
	out, err := a.run(t, "backfill", "--from", "2026-11-14", "--windows", "hour,day,all", "--dry-run")
	if err != nil || !strings.Contains(out, "Dry run: nothing done") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if after := files(t, a.dir); !maps.Equal(before, after) {
		t.Errorf("the dry run changed files:\nbefore %v\nafter  %v", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
	}
	if _, err := os.Stat(filepath.Join(a.dir, "data")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run created the data directory: %v", err)
	}
}

// TestBatchProgressLines: off a terminal a backfill prints a line per window that a log
// keeps: n of N windows and the time left.
func TestBatchProgressLines(t *testing.T) {
	a := newBatchArchive(t, []time.Time{time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)}, time.Date(2026, 11, 15, 1, 0, 0, 0, time.UTC))
	_, out, err := a.run2(t, "backfill", "--from", "2026-11-14", "--windows", "hour,day")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`batch: published hour 2026-11-14T10Z .* \[[0-9]+/25 windows, eta [0-9]`).MatchString(out) {
		t.Errorf("the hour's line lacks n/N windows and the time left:\n%s", out)
	}
	for _, want := range []string{"batch: published day 2026-11-14", "[25/25 windows]", " 3 events ("} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// volatile are the JSON fields that change from run to run: versions (run time), durations
// and computation times.
// allBaseStart is the start of the all-time base's row: the boundary the clock has reached.
var allBaseStart = regexp.MustCompile(`("window": "all-base",\s*"start": )"[^"]*"`)

// summaryCounts are the summary's counts of windows and built ones (rows say "built": true).
var summaryCounts = regexp.MustCompile(`"(windows|built)": [0-9]+`)

var volatile = regexp.MustCompile(`"(version|took_seconds|computed_at|speed_version)": ("[^"]*"|[0-9.e+-]+)`)

// TestBatchJSONGolden: every batch subcommand's --json is the one schema (docs/batch-json.md),
// kept by a golden file each (go test -run TestBatchJSONGolden -update rewrites them).
func TestBatchJSONGolden(t *testing.T) {
	a := newBatchArchive(t, []time.Time{time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC), time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)},
		time.Date(2026, 11, 15, 1, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name string
		args []string
	}{
		{"backfill-dry-run", []string{"backfill", "--from", "2026-11-14T09", "--to", "2026-11-14T11", "--windows", "hour", "--dry-run", "--json"}},
		{"run", []string{"run", "--windows", "hour,day", "--from", "2026-11-14", "--json"}},
		{"backfill", []string{"backfill", "--from", "2026-11-14T09", "--to", "2026-11-14T11", "--windows", "hour", "--json"}},
		{"nightly", []string{"nightly", "--date", "2026-11-01", "--lookback-days", "1", "--json"}},
		{"status", []string{"status", "--from", "2026-11-14T09", "--to", "2026-11-14T11", "--windows", "hour", "--json"}},
	} {
		out, err := a.run(t, c.args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		var o batchOutput
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o); err != nil || dec.More() {
			t.Fatalf("%s: not one document of the schema: %v\n%s", c.name, err, out)
		}
		// The golden file keeps the summary and every row but the rollups rebuilt only for a
		// window above them (a nightly rebuilds a month's 700-odd hours so): their rows have
		// the same fields, checked by the decoding above.
		rows := o.Windows[:0]
		for _, r := range o.Windows {
			if r.State != "built" {
				rows = append(rows, r)
			}
		}
		o.Windows = rows
		var buf bytes.Buffer
		if err := writeJSON(&buf, o); err != nil {
			t.Fatal(err)
		}
		got := volatile.ReplaceAllString(buf.String(), `"$1": "*"`)
		if c.name == "nightly" {
			// The nightly also keeps every level above the night's up to today (the all-time
			// base at today's boundary, the hours since): how many depends on the date run.
			got = allBaseStart.ReplaceAllString(got, `$1"*"`)
			got = summaryCounts.ReplaceAllString(got, `"$1": "*"`)
		}
		path := filepath.Join("testdata", "batch-json", c.name+".json")
		if updateGolden() {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if got != string(want) {
			t.Errorf("%s: --json changed (go test -run TestBatchJSONGolden -update if on purpose):\n%s", c.name, got)
		}
	}
}

// TestBatchRefusesExpiredWindows: with a retention recorded beside the archive (trending
// archive retention), a window past it is refused, --force or not, naming the retention,
// and one within it runs.
func TestBatchRefusesExpiredWindows(t *testing.T) {
	now := time.Now().UTC()
	recent := now.AddDate(0, 0, -2).Truncate(time.Hour)
	a := newBatchArchive(t, []time.Time{recent}, now)
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = a.args[1], "trending", "trending", "trending-secret"
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	// The embedded S3 keeps no lifecycle rules: record the retention as ApplyRetention would.
	b, _ := json.Marshal(archive.Retention{Days: 40, Applied: now})
	if _, err := obj.Put(context.Background(), "archive/views/_retention.json", b); err != nil {
		t.Fatal(err)
	}
	old := now.AddDate(0, 0, -50).Format(time.DateOnly)
	_, err = a.run(t, "run", "--windows", "hour", "--from", old)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "keeps raw events 40 days") {
		t.Errorf("an expired day: %v, want a usage error naming the retention", err)
	}
	if _, err = a.run(t, "run", "--windows", "day", "--from", old, "--force"); err == nil || !strings.Contains(err.Error(), "past the archive's retention") {
		t.Errorf("an expired day with --force: %v, want a refusal", err)
	}
	if out, err := a.run(t, "run", "--windows", "hour", "--from", recent.Format("2006-01-02T15")); err != nil || !strings.Contains(out, "1 lists published") {
		t.Errorf("a recent hour: %v %q", err, out)
	}
}
