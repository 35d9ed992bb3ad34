package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	chstore "trending/serving/store/clickhouse"
)

// TestBatchTitlesClickHouse: `trending batch run --titles FILE` on the real ClickHouse (the
// exact engine and the serving store) and MinIO publishes the closed hour's exact list with
// every item's title and thumbnail from the file, the merger's source, and none for an item
// the file does not describe; a --titles file that does not exist is a usage error naming
// the flag.
func TestBatchTitlesClickHouse(t *testing.T) {
	s3 := itest.S3(t)
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, 2*time.Minute)
	bucket := itest.Name(t, "batchtitles")
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, bucket, s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	hour := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	archiveClosedHour(t, ctx, obj, hour, []archive.Row{
		{ItemID: "V1", Count: 5, TS: hour.Add(time.Minute).UnixMilli(), Partition: 0, Offset: 0},
		{ItemID: "V2", Count: 3, TS: hour.Add(2 * time.Minute).UnixMilli(), Partition: 0, Offset: 1},
		{ItemID: "V3", Count: 1, TS: hour.Add(3 * time.Minute).UnixMilli(), Partition: 0, Offset: 2},
		{ItemID: "V1", Count: 1, TS: hour.Add(4 * time.Minute).UnixMilli(), Partition: 0, Offset: 3},
	})

	dsn := migratedClickHouse(t, addr, "trending_it_titles")
	titles := filepath.Join(t.TempDir(), "titles.csv")
	if err := os.WriteFile(titles, []byte("item_id,title,thumbnail_url\nV1,Cats,https://img.example/V1.jpg\nV2,\"Dogs, again\",\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"batch", "run", "--window", "hour", "--start", "2026-11-14T10", "--clickhouse", dsn, "--store", dsn,
		"--s3-endpoint", s3.Endpoint, "--s3-bucket", bucket, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey}

	out, err := runTrending(t, append(args, "--titles", filepath.Join(t.TempDir(), "missing.csv"))...)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--titles") {
		t.Fatalf("a missing titles file: %v\n%s\nwant a usage error naming --titles", err, out)
	}
	if out, err := runTrending(t, append(args, "--titles", titles)...); err != nil || !strings.Contains(out, "1 lists published") {
		t.Fatalf("batch run: %v\n%s", err, out)
	}
	st, err := openStore(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Get(ctx, model.Key{Window: "hour", Start: hour})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Item{
		{Rank: 1, ItemID: "V1", Views: 6, Exact: true, Title: "Cats", Thumbnail: "https://img.example/V1.jpg"},
		{Rank: 2, ItemID: "V2", Views: 3, Exact: true, Title: "Dogs, again"},
		{Rank: 3, ItemID: "V3", Views: 1, Exact: true},
	}
	if l.Source != model.SourceBatch || len(l.Items) != len(want) {
		t.Fatalf("published %s list of %d items, want the batch's of %d", l.Source, len(l.Items), len(want))
	}
	for i, it := range l.Items {
		if it != want[i] {
			t.Errorf("item %d: %+v, want %+v", i, it, want[i])
		}
	}
}

// migratedClickHouse creates a database named after prefix on the ClickHouse server at addr
// with `trending migrate`, dropped when the test ends, and returns its DSN.
func migratedClickHouse(t *testing.T, addr, prefix string) string {
	t.Helper()
	db := itest.Underscored(t, prefix)
	t.Cleanup(func() {
		o, _ := chstore.ParseDSN(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn, err := o.Conn(ctx); err == nil {
			_ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db)
			conn.Close()
		}
	})
	dsn := "clickhouse://" + addr + "/" + db
	if out, err := runTrending(t, "migrate", "--clickhouse", dsn); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	return dsn
}

// archiveClosedHour puts rows (one partition) in the archive as the archiver would, with the
// progress and topic manifest that make the hour complete.
func archiveClosedHour(t *testing.T, ctx context.Context, obj *objstore.Client, hour time.Time, rows []archive.Row) {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[archive.Row](&buf, archive.Schema())
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1].Offset
	key := fmt.Sprintf("archive/views/%s/p0000-o000000000000-o%012d.parquet", hour.Format("dt=2006-01-02/hour=15"), last)
	if _, err := obj.Put(ctx, key, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	prog, _ := json.Marshal(archive.Progress{Partition: 0, NextOffset: last + 1, Watermark: hour.Add(2 * time.Hour), Updated: hour.Add(2 * time.Hour)})
	if _, err := obj.Put(ctx, "archive/views/_progress/p0000.json", prog); err != nil {
		t.Fatal(err)
	}
	manifest, _ := json.Marshal(archive.TopicManifest{Topic: "views", Partitions: 1, Updated: hour})
	if _, err := obj.Put(ctx, "archive/views/_topic.json", manifest); err != nil {
		t.Fatal(err)
	}
}
