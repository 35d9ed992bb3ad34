package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/stream"
	"trending/model"
	"trending/model/event"
	boltstore "trending/serving/store/bolt"
)

// TestFaultKafkaRestart restarts the real Kafka broker (services.sh stop, then start: a clean
// shutdown, the same data directory) while a producer writes event time in order and `trending speed`, `trending archive` and `trending merge` run as child processes.
// The producer retries what failed, as a real one would, so the log may hold an event twice:
// the truth is what the topic holds once the stream ended (every event the producer saw
// acknowledged among it). Afterwards every role is still running (none exited over the
// outage), the archive read back equals the topic's truth, and the merged speed list of the
// calendar hour (still open: the stream ends before hh:30) equals the truth's top 100.
func TestFaultKafkaRestart(t *testing.T) {
	itest.Faults(t)
	ctx := itest.Context(t, 4*time.Minute)
	f := newFixture(t, ctx, "kafkarestart", 4)
	bin := binary(t)
	testStart := time.Now()

	speed := newChild(bin, "speed", f.args("speed", "--checkpoint-every", "1s", "--publish-every", "1s",
		"--sketch-width", "16384", "--topics-sketch-width", "1024"))
	arch := newChild(bin, "archive", f.args("archive", "--roll-age", "1s"))
	storePath := filepath.Join(t.TempDir(), "speed.db")
	merger := newChild(bin, "merge", append([]string{"merge", "--store", "bolt:" + storePath, "--publish-every", "1s",
		"--metrics-addr", "", "--log-format", "json"}, f.kafka...))
	roles := []*child{speed, arch, merger}
	for _, c := range roles {
		c.start(t)
	}
	t.Cleanup(func() {
		for _, c := range roles {
			c.kill()
			if t.Failed() {
				t.Logf("%s output (last 25 lines):\n%s", c.name, c.logs.tail(25))
			}
		}
	})

	// Event time from hh:05 three hours ago, 100 events (5 s of event time) every 100 ms
	// while Kafka is up: 5 s before the restart and 3 s after, about 7 minutes of event time.
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	prod := f.startOrdered(ctx, hour.Add(5*time.Minute), 50*time.Millisecond, 100, 0, 100*time.Millisecond, 3)
	time.Sleep(5 * time.Second)
	down := time.Now()
	itest.Stop(t, "kafka")
	time.Sleep(time.Second)
	itest.Start(t, "kafka")
	t.Logf("Kafka down for %s from %s", time.Since(down).Round(100*time.Millisecond), down.Sub(testStart).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	prod.stop(t)
	t.Logf("produced %d events at %s, %d writes retried", prod.sent, time.Since(testStart).Round(100*time.Millisecond), prod.retries)

	truth, ends, n := f.topicTruth(t, ctx)
	t.Logf("the topic holds %d events (%d sent: %d written twice by a retry)", n, prod.sent, n-prod.sent)
	for item, w := range prod.truth.Range(hour, hour.Add(time.Hour)).Map() {
		if got := truth.Range(hour, hour.Add(time.Hour)).Get(item); got < w {
			t.Fatalf("%s: the topic holds %d views, the producer had %d acknowledged", item, got, w)
		}
	}

	// The archive, read back deduplicated, equals the topic.
	f.waitArchived(t, ctx, ends, 90*time.Second)
	got := map[string]uint64{}
	var rows int
	if err := archive.NewReader(f.obj).ReadHour(ctx, hour, func(r archive.Row) error {
		got[r.ItemID] += uint64(r.Count)
		rows++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if d := diffCounts(got, truth.Range(hour, hour.Add(time.Hour)).Map()); d != "" || rows != n {
		t.Errorf("the archive (%d rows, the topic %d events) differs from the topic: %s", rows, n, d)
	}

	// The speed layer: the group committed the end, and the open hour's list is exact.
	f.waitCommitted(t, ctx, eventlog.NamesFor(f.topic).SpeedGroup, ends, 60*time.Second)
	want := truth.Range(hour, hour.Add(time.Hour)).Top(100)
	waitSpeedList(t, ctx, merger, storePath, model.Key{Window: "hour", Start: hour}, 60*time.Second, func(l model.List) string {
		if !sameList(l.Items, want) {
			return fmt.Sprintf("hour list (status %s, as of %s, partial %v) differs from the truth", l.Status, l.AsOf.Format(time.RFC3339), l.Incomplete)
		}
		return ""
	})
	for _, c := range roles[:2] {
		if !c.kill() {
			t.Errorf("%s exited by itself: %s", c.name, c.cmd.ProcessState)
		}
	}
	t.Logf("done in %s", time.Since(testStart).Round(100*time.Millisecond))
}

// topicTruth reads every message of the fixture's topic back: the truth of its valid
// events, the end offsets, and how many valid events it holds.
func (f *fixture) topicTruth(t *testing.T, ctx context.Context) (*stream.Truth, []eventlog.Offsets, int) {
	t.Helper()
	ends, err := f.kc.TopicOffsets(ctx, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	truth := stream.NewTruth()
	n := 0
	for _, o := range ends {
		readRange(t, ctx, f.kc, f.topic, o.Partition, o.First, o.Last, func(m kafka.Message) {
			if e, err := event.Decode(m.Value); err == nil {
				truth.Add(e)
				n++
			}
		})
	}
	return truth, ends, n
}

// waitCommitted waits until group committed every partition's end offset.
func (f *fixture) waitCommitted(t *testing.T, ctx context.Context, group string, ends []eventlog.Offsets, within time.Duration) {
	t.Helper()
	parts := make([]int, len(ends))
	for i, o := range ends {
		parts[i] = o.Partition
	}
	waitFor(t, time.Now().Add(within), "the commits of "+group+" at the end of every partition", func() (bool, string) {
		c := &kafka.Client{Addr: kafka.TCP(f.kafkaAddr), Timeout: 10 * time.Second}
		resp, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{f.topic: parts}})
		if err != nil {
			return false, err.Error()
		}
		got := map[int]int64{}
		for _, p := range resp.Topics[f.topic] {
			got[p.Partition] = p.CommittedOffset
		}
		for _, o := range ends {
			if got[o.Partition] < o.Last {
				return false, fmt.Sprintf("committed %v, ends %v", got, ends)
			}
		}
		return true, ""
	})
}

// waitSpeedList waits until check (an empty answer) accepts the merger's list of key in
// its bolt store. The merger holds the file, so each look stops it (SIGTERM) and starts it
// again when the list is not there yet.
func waitSpeedList(t *testing.T, ctx context.Context, merger *child, storePath string, key model.Key, within time.Duration, check func(model.List) string) {
	t.Helper()
	waitFor(t, time.Now().Add(within), "the speed layer's "+key.Name()+" list", func() (bool, string) {
		time.Sleep(2 * time.Second)
		merger.cmd.Process.Signal(syscall.SIGTERM)
		merger.cmd.Wait()
		why := func() string {
			ss, err := boltstore.Open(storePath)
			if err != nil {
				return err.Error()
			}
			defer ss.Close()
			l, err := ss.Get(ctx, key)
			if err != nil {
				return err.Error()
			}
			return check(l)
		}()
		if why != "" {
			merger.start(t)
		}
		return why == "", why
	})
}
