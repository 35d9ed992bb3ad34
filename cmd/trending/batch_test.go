package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	boltstore "trending/serving/store/bolt"
)

// TestBatchCommands drives run, status, backfill --dry-run and the open-window refusal
// through the CLI, on MinIO with the Go-native engine and the Bolt store (embedded mode).
func TestBatchCommands(t *testing.T) {
	cfg := itest.S3(t)
	ctx := itest.Context(t, 2*time.Minute)
	bucket := itest.Name(t, "batchcli")
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, bucket, cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	rows := []archive.Row{
		{ItemID: "V1", Count: 5, TS: hour.Add(time.Minute).UnixMilli(), Partition: 0, Offset: 0},
		{ItemID: "V2", Count: 3, TS: hour.Add(2 * time.Minute).UnixMilli(), Partition: 0, Offset: 1},
		{ItemID: "V1", Count: 1, TS: hour.Add(3 * time.Minute).UnixMilli(), Partition: 0, Offset: 2},
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[archive.Row](&buf, archive.Schema())
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := obj.Put(ctx, "archive/views/dt=2026-11-14/hour=10/p0000-o000000000000-o000000000002.parquet", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	prog, _ := json.Marshal(archive.Progress{Partition: 0, NextOffset: 3, Watermark: hour.Add(2 * time.Hour), Updated: hour.Add(2 * time.Hour)})
	if _, err := obj.Put(ctx, "archive/views/_progress/p0000.json", prog); err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(archive.TopicManifest{Topic: "views", Partitions: 1, Updated: hour})
	if _, err := obj.Put(ctx, "archive/views/_topic.json", manifest); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	common := []string{"--s3-endpoint", cfg.Endpoint, "--s3-bucket", bucket, "--s3-access-key", cfg.AccessKey, "--s3-secret-key", cfg.SecretKey,
		"--rollups", filepath.Join(dir, "rollups.db"), "--store", "bolt:" + filepath.Join(dir, "serving.db")}
	run := func(args ...string) (string, error) {
		t.Helper()
		return runTrending(t, append(append([]string{"batch"}, args...), common...)...)
	}

	out, err := run("backfill", "--dry-run", "--from", "2026-11-14", "--windows", "hour,day")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "hour 2026-11-14T10Z  1") || !strings.Contains(out, "25 windows, 2 objects") || !strings.Contains(out, "Dry run: nothing done") {
		t.Fatalf("dry run printed:\n%s", out)
	}

	out, err = run("run", "--window", "hour", "--start", "2026-11-14T10")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "1 lists published") {
		t.Fatalf("run printed %q", out)
	}
	st, err := boltstore.Open(filepath.Join(dir, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Get(ctx, model.Key{Window: "hour", Start: hour})
	st.Close()
	if err != nil || l.Source != model.SourceBatch || len(l.Items) != 2 || l.Items[0].ItemID != "V1" || l.Items[0].Views != 6 || l.Items[1].Views != 3 {
		t.Fatalf("published list %+v, %v", l, err)
	}

	// The same hour's trending-topics lists (the hour and its 7 baseline days built): V1 has
	// 6 mentions, all worldwide (no region).
	out, err = run("run", "--window", "hour", "--start", "2026-11-14T10", "--topics", "eu", "--topics-score", "volume", "--topics-floor", "1")
	if err != nil {
		t.Fatalf("run --topics: %v\n%s", err, out)
	}
	if !strings.Contains(out, "topics version") || !strings.Contains(out, "8 hour rollups built, 2 lists published") {
		t.Fatalf("run --topics printed %q", out)
	}
	st, err = boltstore.Open(filepath.Join(dir, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	l, err = st.Get(ctx, model.Key{Window: "topics/world/volume", Start: hour})
	eu, euErr := st.Get(ctx, model.Key{Window: "topics/eu/volume", Start: hour})
	st.Close()
	if err != nil || l.Source != model.SourceBatch || len(l.Items) != 2 || l.Items[0].ItemID != "V1" || l.Items[0].Views != 6 || l.Items[0].Score != 6 {
		t.Fatalf("published topics list %+v, %v", l, err)
	}
	if euErr != nil || len(eu.Items) != 0 {
		t.Fatalf("eu topics list %+v, %v: want an empty exact list", eu, euErr)
	}
	// nightly: the hour's lists are current (the other hours have no events): nothing is
	// republished.
	out, err = run("nightly", "--date", "2026-11-14", "--lookback-days", "1", "--force", "--topics", "eu", "--topics-score", "volume", "--topics-floor", "1")
	if err != nil {
		t.Fatalf("nightly --topics: %v\n%s", err, out)
	}
	if !strings.Contains(out, "0 lists published, 2 current") {
		t.Fatalf("nightly --topics printed %q", out[max(0, len(out)-300):])
	}
	if _, err := run("run", "--window", "day", "--start", "2026-11-14", "--topics", "eu"); !errors.As(err, new(usageError)) {
		t.Fatalf("--topics with --window day: %v, want a usage error", err)
	}

	// The speed layer's final list of hour 12: provisional until the batch replaces it.
	st, err = boltstore.Open(filepath.Join(dir, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	h12 := hour.Add(2 * time.Hour)
	err = st.Put(ctx, model.List{Window: "hour", Start: h12, End: h12.Add(time.Hour), AsOf: h12.Add(time.Hour), Version: 1,
		Source: model.SourceSpeed, Status: model.StatusProvisional, ComputedAt: h12.Add(time.Hour)})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err = run("status", "--from", "2026-11-14", "--windows", "hour")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if !strings.Contains(out, "hour 2026-11-14T10Z  exact") || !strings.Contains(out, "hour 2026-11-14T11Z  missing") ||
		!strings.Contains(out, "hour 2026-11-14T12Z  provisional") {
		t.Fatalf("status printed:\n%s", out)
	}

	// Hour 13 is past the archive's progress (12:00): left out and listed, saying how to
	// compute it anyway; the run itself succeeds (it did what could be done).
	out, err = run("run", "--window", "hour", "--start", "2026-11-14T13")
	if err != nil || !strings.Contains(out, "left out 1 windows not closed yet (--force") || !strings.Contains(out, "not complete") {
		t.Fatalf("open window: %v %q, want it left out with a word on --force", err, out)
	}
	_, err = run("run", "--window", "week", "--start", "2026-11-14")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("bad window: %v, want a usage error", err)
	}

	// Not a terminal (above, and in logs): one line per window. On a terminal: a bar with
	// the windows done of the total and no per-window lines.
	out, err = run("backfill", "--from", "2026-11-14", "--windows", "hour", "--force")
	if err != nil || strings.Count(out, "batch: built") != 24 {
		t.Fatalf("backfill into a pipe: %v, want a line for each of the 24 hours:\n%s", err, out)
	}
	ptm, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	screen := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptm) // until tty is closed
		screen <- string(b)
	}()
	root := newRootCommand()
	var stdout bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(tty)
	root.SetArgs(append([]string{"batch", "backfill", "--from", "2026-11-14", "--windows", "hour", "--force"}, common...))
	err = root.ExecuteContext(ctx)
	tty.Close()
	got := <-screen
	if err != nil {
		t.Fatalf("backfill on a terminal: %v\n%s", err, got)
	}
	if strings.Contains(got, "batch: built") || !strings.Contains(got, "24/24") || !strings.Contains(got, "windows") {
		t.Fatalf("the terminal showed %q, want a bar reaching 24/24 windows and no per-window lines", got)
	}
	if !strings.Contains(stdout.String(), "24 rollups built") {
		t.Fatalf("backfill report on stdout: %q", stdout.String())
	}
}
