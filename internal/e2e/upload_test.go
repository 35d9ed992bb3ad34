package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model/event"
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
	kafkaAddr := itest.Kafka(t)
	s3 := itest.S3(t)
	ctx := itest.Context(t, 3*time.Minute)
	bin := binary(t)
	testStart := time.Now()

	topic := itest.Name(t, "upcommit")
	kc := eventlog.Plain(kafkaAddr)
	if _, err := kc.EnsureTopics(ctx, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, topic, s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}

	// The producer: chunks of events spread over two closed hours until stopped; the truth
	// is what Kafka acknowledged.
	hours := []time.Time{time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)}
	hours = append(hours, hours[0].Add(time.Hour))
	truth := map[time.Time]map[string]uint64{hours[0]: {}, hours[1]: {}}
	var sent int
	stopProducing := make(chan struct{})
	produced := make(chan error, 1)
	w := kc.NewWriter(topic)
	defer w.Close()
	go func() {
		rng := rand.New(rand.NewPCG(18, 1))
		for {
			msgs := make([]kafka.Message, 100)
			type ev struct {
				hour  time.Time
				item  string
				count uint64
			}
			evs := make([]ev, len(msgs))
			for i := range msgs {
				e := event.Event{ItemID: fmt.Sprintf("item-%03d", rng.IntN(300)), Count: uint32(1 + rng.IntN(5)),
					TS: hours[0].Add(time.Duration(rng.Int64N(int64(2 * time.Hour)))).Truncate(time.Millisecond)}
				msgs[i] = kafka.Message{Key: []byte(e.ItemID), Value: e.AppendJSON(nil)}
				evs[i] = ev{e.TS.Truncate(time.Hour), e.ItemID, uint64(e.Count)}
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				produced <- err
				return
			}
			for _, e := range evs {
				truth[e.hour][e.item] += e.count
			}
			sent += len(msgs)
			select {
			case <-stopProducing:
				produced <- nil
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var stopOnce sync.Once
	stop := func() error {
		stopOnce.Do(func() { close(stopProducing) })
		return <-produced
	}
	defer func() {
		stopOnce.Do(func() { close(stopProducing) })
	}()

	args := []string{"archive", "--kafka", kafkaAddr, "--views-topic", topic, "--partitions", "2",
		"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", topic,
		"--roll-age", "500ms", "--roll-bytes", "1MiB", "--metrics-addr", "", "--log-format", "json"}
	arch := newChild(bin, "archive", args)
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
	if err := stop(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	ends, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rd := archive.NewReader(obj)
	waitFor(t, time.Now().Add(60*time.Second), "the archive's progress at the end of both partitions", func() (bool, string) {
		ps, err := rd.Progress(ctx)
		if err != nil {
			return false, err.Error()
		}
		next := map[int]int64{}
		for _, p := range ps {
			next[int(p.Partition)] = p.NextOffset
		}
		for _, o := range ends {
			if next[o.Partition] < o.Last {
				return false, fmt.Sprintf("progress %v, ends %v", next, ends)
			}
		}
		return true, ""
	})
	if !arch.kill() {
		t.Errorf("the restarted archiver exited by itself: %s", arch.cmd.ProcessState)
	}

	// The raw objects, every row: some offsets twice.
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
			body, err := obj.Get(ctx, o.Key)
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
	t.Logf("%d events sent; the archive's %d objects hold %d rows, %d of them copies of an offset another object holds", sent, objects, rawRows, dups)
	if dups == 0 {
		t.Fatal("no offset archived twice: the kill between upload and commit did not exercise the readers' dedup")
	}
	if len(copies) != sent {
		t.Errorf("the raw objects hold %d distinct offsets, %d events were sent", len(copies), sent)
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
		if d := diffCounts(got, truth[h]); d != "" {
			t.Errorf("hour %s: the archive read back differs from what was sent: %s", h.Format(time.RFC3339), d)
		}
	}
	if read != sent {
		t.Errorf("the deduplicated read holds %d events, %d were sent", read, sent)
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
