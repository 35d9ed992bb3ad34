package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
)

// TestUpExactListsKeepTitles runs `trending up` as `make run` does (embedded broker and S3,
// the built-in load generator with its invented titles, a short replay of the past), and
// follows the last closed hour, of all items and of a region, from its speed list to the
// batch's exact list: every item of the exact list has the title and thumbnail its speed list
// showed (and the catalog file gives), none blank. Before the batch wrote through the titles
// source too, an hour turning exact lost every title.
func TestUpExactListsKeepTitles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	upExactListsKeepTitles(t, nil)
}

// TestUpExactListsKeepTitlesKafka is TestUpExactListsKeepTitles on the real servers: Kafka,
// MinIO and the ClickHouse serving store, which the merger and the batch both write.
func TestUpExactListsKeepTitlesKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker, s3, ch := itest.Kafka(t), itest.S3(t), itest.ClickHouse(t)
	upExactListsKeepTitles(t, []string{"--kafka", broker, "--views-topic", itest.Name(t, "views"),
		"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "titles"),
		"--store", migratedClickHouse(t, ch, "trending_it_uptitles")})
}

func upExactListsKeepTitles(t *testing.T, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	// 70 minutes of the past replayed 300 times faster: the last closed hour is in it, and
	// the real-time load after it moves the watermark past the hour's end.
	up := startInProcess(t, append([]string{"up", "--data", data, "--listen", addr, "--backfill", "70m", "--speedup", "300", "--rate", "20",
		"--items", "300", "--servers", "6", "--publish-every", "300ms", "--checkpoint-every", "2s", "--archive-roll", "500ms",
		"--batch-every", "500ms", "--batch-lateness", "1m", "--log-format", "json", "--log-level", "warn"}, extra...)...)
	base := "http://" + addr
	waitFor(t, "up ready", 60*time.Second, func() (bool, string) { c, b := httpGet(base + "/readyz"); return c == 200, b })

	type item struct {
		ItemID    string `json:"item_id"`
		Title     string `json:"title"`
		Thumbnail string `json:"thumbnail_url"`
	}
	type list struct {
		Source string `json:"source"`
		Status string `json:"status"`
		Items  []item `json:"items"`
	}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour).Format(time.RFC3339)
	// Both lists are polled together from the start, so each one's speed versions are seen
	// before the batch replaces it.
	regions := []string{"", "&region=eu"}
	seen := map[string]map[string]item{} // per list, the speed lists' metadata of each item
	exact := map[string]list{}
	waitFor(t, "hour "+hour+" exact, of all items and of eu", 180*time.Second, func() (bool, string) {
		last := ""
		for _, region := range regions {
			if _, done := exact[region]; done {
				continue
			}
			c, b := httpGet(base + "/v1/trending?window=hour&limit=100&start=" + hour + region)
			if c != 200 {
				last = b
				continue
			}
			var l list
			if err := json.Unmarshal([]byte(b), &l); err != nil {
				t.Fatalf("%s: %v", region, err)
			}
			if l.Source != "speed" {
				exact[region] = l
				continue
			}
			if seen[region] == nil {
				seen[region] = map[string]item{}
			}
			for _, it := range l.Items {
				seen[region][it.ItemID] = it
			}
			last = trimBody(b)
		}
		if len(exact) < len(regions) {
			// Why it is not exact yet, should it never be: the batch's view of the hour.
			_, st := httpGet(base + "/v1/batch/status?windows=hour&from=" + hour + "&to=" + hour)
			if len(st) > 1500 {
				st = st[:1500] + "..."
			}
			last = "batch status " + st + "; list " + last
		}
		return len(exact) == len(regions), last
	})
	for _, region := range regions {
		what, l := "hour "+hour+region, exact[region]
		if len(seen[region]) == 0 {
			t.Fatalf("%s: the batch's list came before any speed list was seen; the test compares nothing", what)
		}
		if l.Status != "exact" || len(l.Items) < 50 {
			t.Fatalf("%s: the batch's list is %s with %d items, want exact with at least 50", what, l.Status, len(l.Items))
		}
		compared := 0
		for _, it := range l.Items {
			if it.Title == "" || !strings.HasSuffix(it.Thumbnail, "id="+it.ItemID) {
				t.Errorf("%s exact: %s has title %q thumbnail %q, want its invented title and placeholder thumbnail", what, it.ItemID, it.Title, it.Thumbnail)
			}
			if s, ok := seen[region][it.ItemID]; ok {
				compared++
				if s != it {
					t.Errorf("%s: %s was %+v in the speed list, %+v in the exact one", what, it.ItemID, s, it)
				}
			}
		}
		if compared < len(l.Items)/2 {
			t.Errorf("%s: only %d of the exact list's %d items were in the speed lists seen", what, compared, len(l.Items))
		}
		t.Logf("%s: %d exact items, %d of them compared with the speed lists' metadata", what, len(l.Items), compared)
	}
	up.stop()

	// The titles are the catalog's (DATA/items.csv, the load generator's invented titles).
	csv, err := os.ReadFile(filepath.Join(data, "items.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), "V1,") {
		t.Fatalf("items.csv does not list V1:\n%.300s", csv)
	}
}
