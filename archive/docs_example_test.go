package archive

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"trending/internal/itest"
)

// TestDocsPyarrowExample runs docs/examples/archive_counts.py, the pyarrow example of
// docs/archive.md, against an archive in MinIO that holds the same events twice (a roll
// repeated with other boundaries, as after a crash between upload and commit), and checks
// its per-item counts equal what the batch layer reads (Reader.ReadHour, deduplicated by
// partition and offset). With the integration environment set (make test) a missing pyarrow
// fails the test.
func TestDocsPyarrowExample(t *testing.T) {
	cfg := itest.S3(t)
	if err := exec.Command("python3", "-c", "import pyarrow.dataset").Run(); err != nil {
		t.Fatalf("pyarrow is not importable (%v): install it with `pip install pyarrow`", err)
	}
	ctx := itest.Context(t, time.Minute)
	bucket := itest.Name(t, "docs")
	st := newStore(t, cfg.Endpoint, bucket, cfg.AccessKey, cfg.SecretKey)
	rng := rand.New(rand.NewPCG(11, 12))
	for p := range int32(2) {
		log := logEvents(rng, p, 300)
		putRoll(t, st, log, 0, 149)
		putRoll(t, st, log, 100, 299) // offsets 100..149 again, in other files
	}
	// Offsets 100..149 are 11:00-11:30 of event time: the hour that holds the duplicates.
	hour := hour0.Add(time.Hour)
	want := map[string]uint64{}
	if err := NewReader(st).ReadHour(ctx, hour, func(r Row) error { want[r.ItemID] += uint64(r.Count); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("BUG: no events in the hour")
	}
	cmd := exec.CommandContext(ctx, "python3", "../docs/examples/archive_counts.py", "--endpoint", cfg.Endpoint, "--bucket", bucket,
		"--access-key", cfg.AccessKey, "--secret-key", cfg.SecretKey, "--hour", hour.Format("2006-01-02T15"))
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("archive_counts.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got map[string]uint64
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pyarrow example counts %v, the batch reads %v", got, want)
	}
}
