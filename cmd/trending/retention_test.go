package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpBoundsTheEmbeddedLog runs up with a small --kafka-retention-bytes while its load
// generator replays half an hour (tens of MB a partition): each partition of the input topic
// stays within the bound (1.25 times it, the trim deleting whole segments) plus what arrives
// between two trims, and the banner says what --data holds and what bounds it.
func TestUpBoundsTheEmbeddedLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	data := filepath.Join(t.TempDir(), "data")
	p := startInProcess(t, "up", "--data", data, "--listen", freeAddr(t), "--backfill", "30m", "--speedup", "120",
		"--kafka-retention-bytes", "2MiB")
	const bound = 2 << 20
	var sizes []int64
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Second)
		sizes = sizes[:0]
		total := int64(0)
		for i := range 4 {
			n := dirSize(filepath.Join(data, "kafka", "partitions", "views-"+string(rune('0'+i))))
			sizes = append(sizes, n)
			total += n
		}
		// The replay writes 2 to 3 MB a partition every 10 s: past 25 s of it each partition
		// was over its bound at least once, so a partition within the bound was trimmed.
		if len(sizes) == 4 && time.Since(deadline.Add(-2*time.Minute)) > 30*time.Second {
			break
		}
	}
	for i, n := range sizes {
		if n > 4*bound {
			t.Errorf("views-%d holds %d bytes, over 4 x the 2 MiB bound (1.25 x, plus 10 s of the replay)", i, n)
		}
	}
	p.stop()
	if out := p.out.String(); !strings.Contains(out, "the broker keeps messages for 24h0m0s, at most 2.0 MiB a partition") {
		t.Errorf("the banner does not say what bounds the log:\n%.3000s", out)
	}
	t.Logf("views partitions after 30 s of a 120x replay: %v bytes", sizes)
}
