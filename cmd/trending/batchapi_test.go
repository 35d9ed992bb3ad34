package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBatchFromASecondTerminal runs `trending up` (embedded, its load generator replaying
// the last 150 minutes quickly) and, as an analyst in a second terminal would, asks its batch
// status and reruns a closed hour into it through the API, with the progress and the JSON
// a script reads; without up's token the rerun is refused.
func TestBatchFromASecondTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	addr := freeAddr(t)
	api := "http://" + addr
	startInProcess(t, "up", "--data", filepath.Join(t.TempDir(), "data"), "--listen", addr, "--token", "s3cret",
		"--backfill", "150m", "--speedup", "600", "--rate", "50", "--archive-roll", "2s", "--batch-every", "1h")
	hour := time.Now().UTC().Truncate(time.Hour).Add(-time.Hour) // closed, and inside the replay
	from := hour.Format("2006-01-02T15")

	var o batchOutput
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, err := runTrending(t, "batch", "backfill", "--api", api, "--api-token", "s3cret", "--from", from, "--windows", "hour", "--json")
		if err == nil {
			if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &o); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if o.Summary.Published == 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hour %s never published through the API: %v %+v", from, err, o.Summary)
		}
		time.Sleep(3 * time.Second) // not yet archived through the hour: it was left out as open
	}
	if w := o.Windows[0]; w.Window != "hour" || w.Start != hour.Format(time.RFC3339) || w.Views == 0 || o.Command != "backfill" {
		t.Errorf("the rerun's result %+v", o)
	}

	out, err := runTrending(t, "batch", "status", "--api", api, "--from", from, "--windows", "hour")
	if err != nil || !strings.Contains(out, hour.Format(time.RFC3339)+"   exact") || !strings.Contains(out, "1 windows: 1 exact") {
		t.Errorf("status through the API: %v\n%s", err, out)
	}
	_, err = runTrending(t, "batch", "run", "--api", api, "--windows", "hour", "--from", from)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--api-token") {
		t.Errorf("a rerun without the token: %v, want a usage error naming --api-token", err)
	}
	out, err = runTrending(t, "batch", "run", "--api", api, "--api-token", "s3cret", "--windows", "hour", "--from", from)
	if err != nil || !strings.Contains(out, "batch: published hour "+hour.Format("2006-01-02T15")+"Z") || !strings.Contains(out, "1 lists published") {
		t.Errorf("batch run through the API: %v\n%s", err, out)
	}
}
