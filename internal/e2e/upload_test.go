package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/internal/itest"
)

// TestKillBetweenUploadAndCommit runs the real `trending archive` against the real Kafka and
// MinIO with archive.FaultEnv set, so it SIGKILLs itself after its third roll's objects and
// progress marker are in S3 and before that roll's Kafka commit, while a producer keeps
// writing events across two hours. Restarted without the fault, it archives the uncommitted
// offsets again into objects of other names. Then: the raw objects hold some (partition,
// offset) more than once (the dedup has something to do: the test would prove nothing
// otherwise), and the Reader's deduplicated read of each hour equals what was produced, each
// event once.
func TestKillBetweenUploadAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the archiver binary against the real Kafka and MinIO for about 15 s")
	}
	t.Parallel() // its own topic and bucket; with the package's other parallel test
	ctx := itest.Context(t, 3*time.Minute)
	f := newFixture(t, ctx, "upcommit", 2)
	bin := binary(t)
	testStart := time.Now()

	hours := []time.Time{time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)}
	hours = append(hours, hours[0].Add(time.Hour))
	prod := f.startProducer(ctx, hours[0], 2*time.Hour, 100, 0, 100*time.Millisecond, 18)
	t.Cleanup(func() { prod.stop(t) })

	arch := newChild(bin, "archive", f.args("archive", "--roll-age", "500ms", "--roll-bytes", "1MiB"))
	arch.env = []string{archive.FaultEnv + "=archive-after-upload:3"}
	arch.start(t)
	defer func() {
		arch.kill()
		if t.Failed() {
			t.Logf("archive output (last 40 lines, %d starts):\n%s", arch.starts, arch.logs.tail(40))
		}
	}()
	exited := make(chan struct{})
	go func() { arch.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the archiver did not kill itself within 60 s")
	}
	if ws, ok := arch.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the archiver ended by %s, want its own SIGKILL after an upload", arch.cmd.ProcessState)
	}
	t.Logf("the archiver SIGKILLed itself between upload and commit at %s", time.Since(testStart).Round(100*time.Millisecond))

	// Restarted without the fault while the producer still writes, it fetches from the
	// last commit: the killed roll's offsets again, and newer ones in the same roll.
	arch.env = nil
	arch.start(t)
	time.Sleep(2 * time.Second)
	prod.stop(t)
	ends, err := f.kc.TopicOffsets(ctx, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	f.waitArchived(t, ctx, ends, 60*time.Second)
	if !arch.kill() {
		t.Errorf("the restarted archiver exited by itself: %s", arch.cmd.ProcessState)
	}

	// The raw objects, every row: some offsets twice.
	rd := archive.NewReader(f.obj)
	type po struct {
		p int32
		o int64
	}
	copies := map[po]int{}
	var rawRows, objects int
	for _, h := range hours {
		objs, err := rd.ListHour(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			body, err := f.obj.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			objects++
			for _, r := range objectRows(t, o.Key, body) {
				copies[po{r.Partition, r.Offset}]++
				rawRows++
			}
		}
	}
	dups := 0
	for _, n := range copies {
		dups += n - 1
	}
	t.Logf("%d events sent; the archive's %d objects hold %d rows, %d of them copies of an offset another object holds", prod.sent, objects, rawRows, dups)
	if dups == 0 {
		t.Fatal("no offset archived twice: the kill between upload and commit did not exercise the readers' dedup")
	}
	if len(copies) != prod.sent {
		t.Errorf("the raw objects hold %d distinct offsets, %d events were sent", len(copies), prod.sent)
	}

	// The deduplicated read: each hour equal to the truth, each offset once.
	var read int
	for _, h := range hours {
		got := map[string]uint64{}
		seen := map[po]bool{}
		if err := rd.ReadHour(ctx, h, func(r archive.Row) error {
			if seen[po{r.Partition, r.Offset}] {
				return fmt.Errorf("partition %d offset %d read twice", r.Partition, r.Offset)
			}
			seen[po{r.Partition, r.Offset}] = true
			got[r.ItemID] += uint64(r.Count)
			read++
			return nil
		}); err != nil {
			t.Fatalf("hour %s: %v", h.Format(time.RFC3339), err)
		}
		if d := diffCounts(got, prod.truth.Range(h, h.Add(time.Hour)).Map()); d != "" {
			t.Errorf("hour %s: the archive read back differs from what was sent: %s", h.Format(time.RFC3339), d)
		}
	}
	if read != prod.sent {
		t.Errorf("the deduplicated read holds %d events, %d were sent", read, prod.sent)
	}
	t.Logf("done in %s", time.Since(testStart).Round(100*time.Millisecond))
}

// objectRows decodes every row of one archive object, without dedup.
func objectRows(t *testing.T, key string, body []byte) []archive.Row {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	r := parquet.NewGenericReader[archive.Row](f, archive.Schema())
	defer r.Close()
	var rows []archive.Row
	buf := make([]archive.Row, 512)
	for {
		n, err := r.Read(buf)
		rows = append(rows, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return rows
		}
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
	}
}
