package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"trending/model/topicrules"
)

// TestUpTopicsBound runs `trending up --topics eu,us` with its built-in load (500 views a
// second over 4 partitions, every view a mention) and a 20-minute replay: once the 15-minute
// window is full, the error bound the topics lists serve is at most 10% of the floor (seed
// 001: 5 x 65,536 keeps 15 minutes within about 20 of 300). At the quarter width up used
// before (16,384) it served about 40.
func TestUpTopicsBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	addr := freeAddr(t)
	start := time.Now().UTC().Add(-20 * time.Minute)
	up := startInProcess(t, "up", "--data", filepath.Join(t.TempDir(), "data"), "--listen", addr, "--topics", "eu,us",
		"--backfill", "20m", "--log-format", "json", "--log-level", "warn")
	base := "http://" + addr
	type topicsList struct {
		AsOf       time.Time `json:"as_of"`
		ErrorBound *struct {
			MaxOvercount float64 `json:"max_overcount"`
		} `json:"error_bound"`
		Baseline *struct {
			Days, Wanted, Unavailable int
		} `json:"baseline"`
	}
	for _, region := range []string{topicrules.World, "eu", "us"} {
		var l topicsList
		waitFor(t, "the "+region+" topics list over a full 15-minute window", 3*time.Minute, func() (bool, string) {
			c, b := httpGet(base + "/v1/topics?region=" + region)
			l = topicsList{}
			if c != 200 || json.Unmarshal([]byte(b), &l) != nil {
				return false, b
			}
			return l.AsOf.After(start.Add(16*time.Minute)) && l.ErrorBound != nil, b
		})
		floor := float64(topicrules.DefaultFloor)
		t.Logf("%s: as of %s, error bound %.1f mentions (%.1f%% of the floor %g)", region, l.AsOf.Format(time.RFC3339),
			l.ErrorBound.MaxOvercount, 100*l.ErrorBound.MaxOvercount/floor, floor)
		if b := l.ErrorBound.MaxOvercount; b > 0.1*floor || b <= 0 {
			t.Errorf("%s topics list: error bound %.1f mentions, want above 0 and at most 10%% of the floor (%g)", region, b, 0.1*floor)
		}
		// The baseline is read from up's embedded S3: it answers, and 20 minutes hold no
		// earlier day, so no day is used and none is unavailable.
		if b := l.Baseline; b == nil || b.Wanted != 7 || b.Unavailable != 0 {
			t.Errorf("%s topics list: baseline %+v, want 7 days wanted and none unavailable", region, b)
		}
	}
	up.stop()
}

// TestUpTopicsHoursSaved runs `trending up --topics eu` over an 80-minute replay, which
// closes at least one clock hour: each partition writes the closed hour's topic sketch to
// the embedded S3 (DATA/s3, topics/hours/views/<partition>/<hour>Z.cms), where the baseline of
// the same hour tomorrow reads it, instead of keeping it in memory and in every checkpoint.
func TestUpTopicsHoursSaved(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	start := time.Now().UTC().Add(-80 * time.Minute)
	up := startInProcess(t, "up", "--data", data, "--listen", addr, "--topics", "eu",
		"--backfill", "80m", "--log-format", "json", "--log-level", "warn")
	// The first hour boundary after start closes 15 minutes (the window) after it.
	closed := start.Truncate(time.Hour).Add(time.Hour)
	dir := filepath.Join(data, "s3", "buckets", "trending", "topics", "hours", "views")
	var found []string
	waitFor(t, "a closed hour's topic sketch in the embedded S3", 5*time.Minute, func() (bool, string) {
		found, _ = filepath.Glob(filepath.Join(dir, "*", closed.Add(-time.Hour).Format("2006-01-02T15")+"Z.cms"))
		return len(found) > 0, dir
	})
	t.Logf("%d partitions saved hour %s: %v", len(found), closed.Add(-time.Hour).Format("2006-01-02T15"), found)
	up.stop()
}
