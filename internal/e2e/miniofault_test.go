package e2e

import (
	"bufio"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model"
)

// TestFaultMinIODownUnderSpeed stops the real MinIO for longer than three checkpoint
// intervals (every 2 s) while `trending speed` counts a stream: its checkpoints fail and are
// counted (trending_speed_checkpoint_failures_total), counting goes on meanwhile
// (trending_speed_events_total grows), and once MinIO is back checkpoints are saved again.
// Then the worker is SIGKILLed and restarted: it restores the partitions from the checkpoints
// written after the outage, replays from their offsets, and the merged list of the open hour
// equals what the topic holds.
func TestFaultMinIODownUnderSpeed(t *testing.T) {
	itest.Faults(t)
	ctx := itest.Context(t, 3*time.Minute)
	f := newFixture(t, ctx, "miniodown", 2)
	bin := binary(t)
	testStart := time.Now()

	metricsAddr := freeAddr(t)
	speedArgs := f.args("speed", "--checkpoint-every", "2s", "--publish-every", "1s",
		"--sketch-width", "16384", "--topics-sketch-width", "1024")
	speedArgs = append(speedArgs, "--metrics-addr", metricsAddr) // the later flag wins over f.args' empty one
	speed := newChild(bin, "speed", speedArgs)
	storePath := filepath.Join(t.TempDir(), "speed.db")
	merger := newChild(bin, "merge", append([]string{"merge", "--store", "bolt:" + storePath, "--publish-every", "1s",
		"--metrics-addr", "", "--log-format", "json"}, f.kafka...))
	speed.start(t)
	merger.start(t)
	t.Cleanup(func() {
		for _, c := range []*child{speed, merger} {
			c.kill()
			if t.Failed() {
				t.Logf("%s output (last 25 lines, %d starts):\n%s", c.name, c.starts, c.logs.tail(25))
			}
		}
	})

	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	prod := f.startOrdered(ctx, hour.Add(5*time.Minute), 50*time.Millisecond, 50, 0, 100*time.Millisecond, 4)
	t.Cleanup(func() { prod.stop(t) })
	metric := func(name string) float64 { return scrape(t, metricsAddr, name) }
	waitFor(t, time.Now().Add(30*time.Second), "a first checkpoint", func() (bool, string) {
		return metric("trending_speed_checkpoints_total") > 0, ""
	})

	itest.Stop(t, "minio")
	down := time.Now()
	saved, failed, counted := metric("trending_speed_checkpoints_total"), metric("trending_speed_checkpoint_failures_total"), metric(`trending_speed_events_total{outcome="counted"}`)
	time.Sleep(7 * time.Second)
	saved2, failed2, counted2 := metric("trending_speed_checkpoints_total"), metric("trending_speed_checkpoint_failures_total"), metric(`trending_speed_events_total{outcome="counted"}`)
	itest.Start(t, "minio")
	t.Logf("MinIO down %s: checkpoints saved %v -> %v, failed %v -> %v; events counted %v -> %v",
		time.Since(down).Round(100*time.Millisecond), saved, saved2, failed, failed2, counted, counted2)
	if failed2 <= failed {
		t.Errorf("no checkpoint failure counted while MinIO was down")
	}
	if counted2 <= counted {
		t.Errorf("counting stopped while MinIO was down")
	}
	waitFor(t, time.Now().Add(30*time.Second), "checkpoints saved again after MinIO started", func() (bool, string) {
		n := metric("trending_speed_checkpoints_total")
		return n >= saved2+2, fmt.Sprintf("%v saved", n) // two: one per partition
	})

	// A crash now: the restart restores from the checkpoints written after the outage.
	speed.cmd.Process.Signal(syscall.SIGKILL)
	speed.cmd.Wait()
	speed.start(t)
	time.Sleep(2 * time.Second)
	prod.stop(t)
	truth, ends, n := f.topicTruth(t, ctx)
	f.waitCommitted(t, ctx, eventlog.NamesFor(f.topic).SpeedGroup, ends, 60*time.Second)
	want := truth.Range(hour, hour.Add(time.Hour)).Top(100)
	waitSpeedList(t, ctx, merger, storePath, model.Key{Window: "hour", Start: hour}, 60*time.Second, func(l model.List) string {
		if !sameList(l.Items, want) {
			return fmt.Sprintf("hour list (status %s, as of %s) differs from the truth", l.Status, l.AsOf.Format(time.RFC3339))
		}
		return ""
	})
	restored := 0
	for _, line := range strings.Split(speed.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"restored checkpoint"`) {
			restored++
		}
	}
	if restored < 2 {
		t.Errorf("%d partitions restored from a checkpoint after the kill, want 2", restored)
	}
	if !speed.kill() {
		t.Errorf("speed exited by itself: %s", speed.cmd.ProcessState)
	}
	t.Logf("%d events; %d restores after the kill; done in %s", n, restored, time.Since(testStart).Round(100*time.Millisecond))
}

// scrape returns the value of one series (name with its labels, as the text format writes
// it) from a /metrics endpoint; 0 when it is not there yet.
func scrape(t *testing.T, addr, series string) float64 {
	t.Helper()
	code, body := get("http://" + addr + "/metrics")
	if code != 200 {
		return 0
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %q", series, v)
			}
			return x
		}
	}
	return 0
}
