package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"trending/internal/topicstore"

	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/topicrules"
	boltstore "trending/serving/store/bolt"
)

// TestBatchTopicsSharedReview: `trending batch run|nightly --topics` keeps the topics the
// shared review queue (topics/review.json in the bucket) holds off the exact lists; approved
// there with `trending topics review approve`, the next nightly recomputes the hour and lists
// the topic. --topics-review FILE overrides the shared queue with a local file, and a corrupt
// shared queue fails the run instead of listing what it may hold.
func TestBatchTopicsSharedReview(t *testing.T) {
	onEveryBucket(t, "batchreview", func(t *testing.T, obj *objstore.Client, s3 []string) {
		ctx := t.Context()
		hour := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
		var rows []archive.Row
		for i, id := range []string{"#quake", "V1", "#quake", "V1", "#quake", "#quake"} {
			rows = append(rows, archive.Row{ItemID: id, Count: 1, TS: hour.Add(time.Duration(i+1) * time.Minute).UnixMilli(), Partition: 0, Offset: int64(i)})
		}
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[archive.Row](&buf, archive.Schema())
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := obj.Put(ctx, "archive/views/dt=2026-11-14/hour=10/p0000-o000000000000-o000000000005.parquet", buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		prog, _ := json.Marshal(archive.Progress{Partition: 0, NextOffset: int64(len(rows)), Watermark: hour.Add(2 * time.Hour), Updated: hour.Add(2 * time.Hour)})
		if _, err := obj.Put(ctx, "archive/views/_progress/p0000.json", prog); err != nil {
			t.Fatal(err)
		}
		manifest, _ := json.Marshal(archive.TopicManifest{Topic: "views", Partitions: 1, Updated: hour})
		if _, err := obj.Put(ctx, "archive/views/_topic.json", manifest); err != nil {
			t.Fatal(err)
		}
		// A speed worker held #quake (never seen before) in the shared queue.
		worker := topicrules.NewReview(0)
		worker.Hold("#quake", "", topicrules.ReasonNewTopic, time.Now().UTC(), 4, 4)
		if err := topicstore.SyncReview(ctx, obj, topicstore.ReviewKey, worker); err != nil {
			t.Fatal(err)
		}

		dir := t.TempDir()
		common := append([]string{"--rollups", filepath.Join(dir, "rollups.db"), "--store", "bolt:" + filepath.Join(dir, "serving.db"),
			"--topics", "eu", "--topics-score", "volume", "--topics-floor", "1"}, s3...)
		batchRun := func(args ...string) string {
			t.Helper()
			out, err := runTrending(t, append(append([]string{"batch"}, args...), common...)...)
			if err != nil {
				t.Fatalf("batch %v: %v\n%s", args, err, out)
			}
			return out
		}
		listed := func() []string {
			t.Helper()
			st, err := boltstore.Open(filepath.Join(dir, "serving.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			l, err := st.Get(ctx, model.Key{Window: "topics/world/volume", Start: hour})
			if err != nil || l.Source != model.SourceBatch || !l.Exact {
				t.Fatalf("world topics list %+v, %v", l, err)
			}
			var ids []string
			for _, it := range l.Items {
				ids = append(ids, it.ItemID)
			}
			return ids
		}

		batchRun("run", "--window", "hour", "--start", "2026-11-14T10")
		if got := listed(); !slices.Equal(got, []string{"V1"}) {
			t.Fatalf("held in the shared queue: the exact list is %v, want [V1] without #quake", got)
		}
		// Still held: nightly finds the list current.
		nightly := []string{"nightly", "--date", "2026-11-14", "--lookback-days", "1", "--force"}
		if out := batchRun(nightly...); !strings.Contains(out, "0 lists published, 2 current") {
			t.Fatalf("nightly with the hold unchanged printed %q", out[max(0, len(out)-300):])
		}

		if out, err := runTrending(t, append([]string{"topics", "review", "approve", "#quake", "--by", "alice"}, s3...)...); err != nil {
			t.Fatalf("approve: %v\n%s", err, out)
		}
		// The approval is an input of the world list (eu holds neither topic: still current).
		if out := batchRun(nightly...); !strings.Contains(out, "1 lists published, 1 current") {
			t.Fatalf("nightly after the approval printed %q", out[max(0, len(out)-300):])
		}
		if got := listed(); !slices.Equal(got, []string{"#quake", "V1"}) {
			t.Fatalf("approved in the shared queue: the exact list is %v, want [#quake V1]", got)
		}

		// --topics-review FILE: a local queue holding #quake wins over the shared approval.
		local := topicrules.NewReview(0)
		local.Hold("#quake", "", topicrules.ReasonNewTopic, time.Now().UTC(), 4, 4)
		file := filepath.Join(dir, "review.json")
		if err := writeReviewQueue(file, local); err != nil {
			t.Fatal(err)
		}
		batchRun("run", "--window", "hour", "--start", "2026-11-14T10", "--topics-review", file)
		if got := listed(); !slices.Equal(got, []string{"V1"}) {
			t.Fatalf("held in --topics-review FILE: the exact list is %v, want [V1]", got)
		}

		// A shared queue that does not decode fails the run: it may hold anything.
		if _, err := obj.Put(ctx, topicstore.ReviewKey, []byte(`{"version":1,"max":`)); err != nil {
			t.Fatal(err)
		}
		out, err := runTrending(t, append([]string{"batch", "run", "--window", "hour", "--start", "2026-11-14T10"}, common...)...)
		if err == nil || !strings.Contains(err.Error(), topicstore.ReviewKey) {
			t.Fatalf("corrupt shared queue: %v, want an error naming %s\n%s", err, topicstore.ReviewKey, out)
		}
	})
}
