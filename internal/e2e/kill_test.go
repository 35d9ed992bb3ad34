package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/model"
	"trending/model/event"
	"trending/model/topk"
	boltstore "trending/serving/store/bolt"
)

// killPartitions is the views topic's partition count: more than one per worker, so a
// rebalance moves some.
const killPartitions = 4

// TestKill9Pipeline runs the real binary as child processes against the real Kafka and MinIO:
// two `trending speed` workers and one `trending archive`, fed by `trending loadgen` (an hour
// of event time, two calendar hours, with late and malformed messages and its exact truth).
// While the stream flows it SIGKILLs each of the three processes three times, 1-3 s apart,
// restarting each at once. Afterwards, once everything caught up: the archive read back
// (deduplicated by partition and offset) equals the truth per hour, and says each hour is
// complete; `trending batch run` over the closed hours publishes lists equal to the truth's
// top 100; the DLQ holds every malformed message of the views topic and nothing else; and
// the speed layer's lists, merged by a `trending merge` child (never killed) into a bolt
// store, count the open hour exactly and the closed one short by at most its dropped_late.
// Every kill must find its process running: a role that exits by itself fails the test.
func TestKill9Pipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes for about 80 s")
	}
	kafkaAddr := itest.Kafka(t)
	s3 := itest.S3(t)
	ctx := itest.Context(t, 6*time.Minute)
	testStart := time.Now()

	dir := t.TempDir()
	bin := binary(t)

	topic := itest.Name(t, "kill9")
	bucket := topic
	names := eventlog.NamesFor(topic)
	kc := eventlog.Plain(kafkaAddr)
	if _, err := kc.EnsureTopics(ctx, eventlog.Spec{Name: topic, Partitions: killPartitions}); err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, bucket, s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}

	kafkaFlags := []string{"--kafka", kafkaAddr, "--views-topic", topic, "--partitions", fmt.Sprint(killPartitions)}
	s3Flags := []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", bucket}
	common := append(append(slices.Clip(kafkaFlags), s3Flags...), "--metrics-addr", "", "--log-format", "json")
	speedArgs := append([]string{"speed", "--checkpoint-every", "1s", "--publish-every", "1s",
		"--sketch-width", "16384", "--topics-sketch-width", "1024"}, common...)
	archiveArgs := append([]string{"archive", "--roll-age", "1s", "--roll-bytes", "256KiB"}, common...)

	procs := []*child{
		newChild(bin, "speed-1", speedArgs),
		newChild(bin, "speed-2", speedArgs),
		newChild(bin, "archive", archiveArgs),
	}
	speedStore := filepath.Join(dir, "speed.db")
	merger := newChild(bin, "merge", append([]string{"merge", "--store", "bolt:" + speedStore, "--publish-every", "1s"},
		append(slices.Clip(kafkaFlags), "--metrics-addr", "", "--log-format", "json")...))
	for _, p := range append(procs, merger) {
		p.start(t)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if !p.kill() {
				t.Errorf("%s exited by itself before the end: %s", p.name, p.cmd.ProcessState)
			}
		}
		merger.kill()
		if t.Failed() {
			for _, p := range append(procs, merger) {
				t.Logf("%s output (last 30 lines, %d starts):\n%s", p.name, p.starts, p.logs.tail(30))
			}
		}
	})

	// An hour of event time from hh:30 three hours ago: two calendar hours, both closed (the
	// batch's lateness is 10 minutes), sent in about 25 s of wall time.
	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	hours := []time.Time{first, first.Add(time.Hour)}
	truthFile := filepath.Join(dir, "truth.jsonl")
	lg := newChild(bin, "loadgen", append(append([]string{"loadgen"}, kafkaFlags...),
		"--rate", "20", "--items", "2000", "--servers", "3", "--late", "0.01", "--malformed", "0.002", "--seed", "9",
		"--speedup", "144", "--duration", "1h", "--start", first.Add(30*time.Minute).Format(time.RFC3339),
		"--truth", truthFile, "--progress-every", "5s"))
	lg.start(t)
	t.Cleanup(func() {
		lg.cmd.Process.Kill() // its Wait is the goroutine's below
		if t.Failed() {
			t.Logf("loadgen output (last 10 lines):\n%s", lg.logs.tail(10))
		}
	})
	lgDone := make(chan error, 1)
	go func() { lgDone <- lg.cmd.Wait() }()

	// Three rounds: each process in a random order, SIGKILLed 1-3 s after the previous kill
	// and restarted at once.
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill order seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	kills := 0
	for round := range 3 {
		for _, i := range rng.Perm(len(procs)) {
			time.Sleep(time.Second + time.Duration(rng.Int64N(int64(2*time.Second))))
			p := procs[i]
			if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill %s: %v", p.name, err)
			}
			p.cmd.Wait()
			if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("%s had exited by itself before its kill: %s", p.name, p.cmd.ProcessState)
			}
			kills++
			t.Logf("round %d: SIGKILLed %s at %s", round+1, p.name, time.Since(testStart).Round(100*time.Millisecond))
			p.start(t)
		}
	}
	select {
	case err := <-lgDone:
		if err != nil {
			t.Fatalf("loadgen: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("loadgen did not finish within 90s of the last kill")
	}
	t.Logf("%d kills; loadgen done at %s: %s", kills, time.Since(testStart).Round(100*time.Millisecond), lastLine(lg.logs.String()))

	f, err := os.Open(truthFile)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := stream.ReadTruth(bufio.NewReader(f))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	// What the topic holds: its end offsets, and every message no event decodes from.
	ends, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	malformed := map[string]int{}
	var nMalformed, nValid int
	for _, o := range ends {
		readRange(t, ctx, kc, topic, o.Partition, o.First, o.Last, func(m kafka.Message) {
			if _, err := event.Decode(m.Value); err != nil {
				malformed[string(m.Value)]++
				nMalformed++
			} else {
				nValid++
			}
		})
	}
	// What loadgen says it sent (and Kafka acknowledged) is what the topic holds.
	var sent struct{ Views, Events, Malformed uint64 }
	if err := json.Unmarshal([]byte(lastLine(lg.logs.String())), &sent); err != nil || sent.Events == 0 {
		t.Fatalf("loadgen's last line is not its summary (%v): %s", err, lastLine(lg.logs.String()))
	}
	if uint64(nValid) != sent.Events || uint64(nMalformed) != sent.Malformed || truth.Views() != sent.Views {
		t.Errorf("the topic holds %d valid events and %d malformed, the truth %d views; loadgen sent %+v", nValid, nMalformed, truth.Views(), sent)
	}
	if nMalformed == 0 {
		t.Fatal("no malformed message in the topic: the test does not test the DLQ")
	}

	// (c) The DLQ holds every malformed message (a worker killed after flushing the DLQ and
	// before its checkpoint sends some again on replay: at least once) and nothing valid.
	var dlqLast string
	waitFor(t, time.Now().Add(60*time.Second), "every malformed message in the DLQ", func() (bool, string) {
		offs, err := kc.TopicOffsets(ctx, names.DLQ)
		if err != nil {
			return false, err.Error()
		}
		seen := map[string]int{}
		var n, valid int
		for _, o := range offs {
			readRange(t, ctx, kc, names.DLQ, o.Partition, o.First, o.Last, func(m kafka.Message) {
				n++
				if _, err := event.Decode(m.Value); err == nil {
					valid++
				}
				seen[string(m.Value)]++
			})
		}
		missing := 0
		for v, c := range malformed {
			if seen[v] < c {
				missing += c - seen[v]
			}
		}
		dlqLast = fmt.Sprintf("%d messages in the DLQ for %d malformed in the topic (%d missing, %d valid)", n, nMalformed, missing, valid)
		if valid > 0 {
			t.Fatalf("valid events in the DLQ: %s", dlqLast)
		}
		return missing == 0, dlqLast
	})
	t.Logf("%s", dlqLast)

	// (d) The speed layer, through the merger: once the speed group committed the topic's
	// end (a commit follows the checkpoint that includes it), the open hour (the stream ends
	// at hh:30) is the truth's top 100 exactly, nothing counted twice after the replays; the
	// closed hour counts no item over its truth, and misses at most its dropped_late events.
	waitFor(t, time.Now().Add(60*time.Second), "the speed group's commits at the end of every partition", func() (bool, string) {
		c := &kafka.Client{Addr: kafka.TCP(kafkaAddr), Timeout: 10 * time.Second}
		resp, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: names.SpeedGroup, Topics: map[string][]int{topic: {0, 1, 2, 3}}})
		if err != nil {
			return false, err.Error()
		}
		got := map[int]int64{}
		for _, p := range resp.Topics[topic] {
			got[p.Partition] = p.CommittedOffset
		}
		for _, o := range ends {
			if got[o.Partition] < o.Last {
				return false, fmt.Sprintf("committed %v, ends %v", got, ends)
			}
		}
		return true, ""
	})
	open, closed := hours[1], hours[0]
	wantOpen := truth.Range(open, open.Add(time.Hour)).Top(100)
	closedTruth := truth.Range(closed, closed.Add(time.Hour))
	var speedLast string
	waitFor(t, time.Now().Add(60*time.Second), "the speed layer's open hour list equal to the truth", func() (bool, string) {
		// The merger holds the bolt file: stop it to read, start it again when not there yet.
		time.Sleep(2 * time.Second)
		merger.cmd.Process.Signal(syscall.SIGTERM)
		merger.cmd.Wait()
		defer func() {
			if speedLast != "" {
				merger.start(t)
			}
		}()
		ss, err := boltstore.Open(speedStore)
		if err != nil {
			speedLast = err.Error()
			return false, speedLast
		}
		defer ss.Close()
		lo, err := ss.Get(ctx, model.Key{Window: "hour", Start: open})
		if err != nil {
			speedLast = "open hour: " + err.Error()
			return false, speedLast
		}
		if !sameList(lo.Items, wantOpen) {
			speedLast = fmt.Sprintf("open hour list (status %s, as of %s, partial %v) differs from the truth", lo.Status, lo.AsOf.Format(time.RFC3339), lo.Incomplete)
			return false, speedLast
		}
		lc, err := ss.Get(ctx, model.Key{Window: "hour", Start: closed})
		if err != nil {
			speedLast = "closed hour: " + err.Error()
			return false, speedLast
		}
		var missing uint64
		for _, it := range lc.Items {
			w := closedTruth.Get(it.ItemID)
			if it.Views > w {
				t.Fatalf("closed hour %s: speed counts %s %d times, the truth %d: counted twice", closed.Format(time.RFC3339), it.ItemID, it.Views, w)
			}
			missing += w - it.Views
		}
		if lc.Source != model.SourceSpeed || lc.Status != model.StatusProvisional || len(lc.Items) != 100 || missing > lc.DroppedLate {
			speedLast = fmt.Sprintf("closed hour: source %s, status %s, %d items, %d views missing, %d dropped late", lc.Source, lc.Status, len(lc.Items), missing, lc.DroppedLate)
			return false, speedLast
		}
		speedLast = ""
		t.Logf("speed: open hour equals the truth; closed hour %s, %d views missing from its top 100, %d dropped late", lc.Status, missing, lc.DroppedLate)
		return true, ""
	})
	// (a) The archive catches up (every partition's progress at the topic's end) and, read
	// back, equals the truth per hour.
	rd := archive.NewReader(obj)
	deadline := time.Now().Add(90 * time.Second)
	waitFor(t, deadline, "the archive's progress at the end of every partition", func() (bool, string) {
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
	waitFor(t, deadline, "the archive to call both hours complete", func() (bool, string) {
		for _, h := range hours {
			why, err := rd.Incomplete(ctx, h, 10*time.Minute)
			if err != nil {
				return false, err.Error()
			}
			if why != "" {
				return false, h.Format(time.RFC3339) + ": " + why
			}
		}
		return true, ""
	})
	var archived uint64
	for _, h := range hours {
		got := map[string]uint64{}
		var rows int
		if err := rd.ReadHour(ctx, h, func(r archive.Row) error {
			got[r.ItemID] += uint64(r.Count)
			rows++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		want := truth.Range(h, h.Add(time.Hour)).Map()
		if len(want) == 0 {
			t.Fatalf("hour %s: empty truth", h.Format(time.RFC3339))
		}
		if d := diffCounts(got, want); d != "" {
			t.Errorf("hour %s: the archive (%d rows) differs from the truth: %s", h.Format(time.RFC3339), rows, d)
		}
		archived += uint64(rows)
	}
	t.Logf("archive: %d objects, %d of them re-archiving offsets an earlier object holds (a kill between upload and commit; the reader's dedup skips them)",
		countObjects(t, ctx, rd, hours), overlapping(t, ctx, rd, hours))
	if archived != sent.Events {
		t.Errorf("the archive read back holds %d events, loadgen sent %d: each must be there exactly once", archived, sent.Events)
	}

	// (b) The batch over the closed hours: lists equal to the truth's top 100.
	storePath := filepath.Join(dir, "serving.db")
	bt := exec.CommandContext(ctx, bin, append([]string{"batch", "run", "--window", "hour",
		"--start", hours[0].Format("2006-01-02T15"), "--end", hours[1].Add(time.Hour).Format("2006-01-02T15"),
		"--store", "bolt:" + storePath, "--rollups", filepath.Join(dir, "rollups.db"), "--log-format", "json"}, s3Flags...)...)
	if out, err := bt.CombinedOutput(); err != nil {
		t.Fatalf("batch run: %v\n%s", err, out)
	}
	st, err := boltstore.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, h := range hours {
		l, err := st.Get(ctx, model.Key{Window: "hour", Start: h})
		if err != nil {
			t.Errorf("batch hour %s: %v", h.Format(time.RFC3339), err)
			continue
		}
		if want := truth.Range(h, h.Add(time.Hour)).Top(100); l.Source != model.SourceBatch || !sameList(l.Items, want) {
			t.Errorf("batch hour %s (source %s, %d items) differs from the truth's top %d", h.Format(time.RFC3339), l.Source, len(l.Items), len(want))
		}
	}

	var restores int
	for _, p := range procs[:2] {
		restores += strings.Count(p.logs.String(), `"msg":"restored checkpoint"`)
	}
	t.Logf("speed: %d partition restores from a checkpoint over %d starts; done in %s",
		restores, procs[0].starts+procs[1].starts, time.Since(testStart).Round(100*time.Millisecond))
}

// child is one role of the binary, restartable after a kill.
type child struct {
	bin, name string
	args      []string
	env       []string // added to the test's environment
	cmd       *exec.Cmd
	logs      *syncBuffer
	starts    int
}

func newChild(bin, name string, args []string) *child {
	return &child{bin: bin, name: name, args: args, logs: &syncBuffer{}}
}

func (c *child) start(t *testing.T) {
	t.Helper()
	c.cmd = exec.Command(c.bin, c.args...)
	if c.env != nil {
		c.cmd.Env = append(os.Environ(), c.env...)
	}
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", c.name, err)
	}
	c.starts++
	fmt.Fprintf(c.logs, "--- start %d of %s (pid %d)\n", c.starts, c.name, c.cmd.Process.Pid)
}

// kill SIGKILLs the process unless it was already waited for, and says whether the kill
// is what ended it (false: it had exited by itself).
func (c *child) kill() bool {
	if c.cmd == nil || c.cmd.Process == nil || c.cmd.ProcessState != nil {
		return true
	}
	c.cmd.Process.Kill()
	c.cmd.Wait()
	ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

var objectName = regexp.MustCompile(`p(\d+)-o(\d+)-o(\d+)\.parquet$`)

func countObjects(t *testing.T, ctx context.Context, rd *archive.Reader, hours []time.Time) int {
	n := 0
	for _, h := range hours {
		objs, err := rd.ListHour(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		n += len(objs)
	}
	return n
}

// overlapping counts the archive objects of hours whose offsets start at or below the end
// of an earlier object of the same partition and hour.
func overlapping(t *testing.T, ctx context.Context, rd *archive.Reader, hours []time.Time) int {
	n := 0
	for _, h := range hours {
		objs, err := rd.ListHour(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		type span struct{ p, first, last int64 }
		var spans []span
		for _, o := range objs {
			m := objectName.FindStringSubmatch(o.Key)
			if m == nil {
				t.Fatalf("archive object %s: unexpected name", o.Key)
			}
			p, _ := strconv.ParseInt(m[1], 10, 64)
			f, _ := strconv.ParseInt(m[2], 10, 64)
			l, _ := strconv.ParseInt(m[3], 10, 64)
			spans = append(spans, span{p, f, l})
		}
		slices.SortFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.p, b.p), cmp.Compare(a.first, b.first)) })
		end := map[int64]int64{}
		for _, s := range spans {
			if e, ok := end[s.p]; ok && s.first <= e {
				n++
			}
			end[s.p] = max(end[s.p], s.last)
		}
	}
	return n
}

// readRange calls fn with every message of topic's partition in [from, to).
func readRange(t *testing.T, ctx context.Context, kc *eventlog.Client, topic string, partition int, from, to int64, fn func(kafka.Message)) {
	t.Helper()
	if from >= to {
		return
	}
	r := kc.Reader(kafka.ReaderConfig{Topic: topic, Partition: partition, MaxWait: 200 * time.Millisecond, MaxBytes: 8 << 20})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		m, err := r.FetchMessage(rctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("read %s/%d: timed out before offset %d", topic, partition, to)
			}
			t.Fatalf("read %s/%d: %v", topic, partition, err)
		}
		fn(m)
		if m.Offset >= to-1 {
			return
		}
	}
}

func waitFor(t *testing.T, deadline time.Time, what string, check func() (bool, string)) {
	t.Helper()
	start := time.Now()
	var last string
	for time.Now().Before(deadline) {
		ok, detail := check()
		if ok {
			t.Logf("%s: after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		last = detail
		time.Sleep(500 * time.Millisecond)
	}
	if len(last) > 600 {
		last = last[:600] + "..."
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

func diffCounts(got, want map[string]uint64) string {
	var d []string
	for k, w := range want {
		if got[k] != w {
			d = append(d, fmt.Sprintf("%s: %d, want %d", k, got[k], w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s: %d, want none", k, g))
		}
	}
	if len(d) == 0 {
		return ""
	}
	slices.Sort(d)
	if len(d) > 10 {
		d = append(d[:10], fmt.Sprintf("... %d more", len(d)-10))
	}
	return fmt.Sprintf("%d items differ: %s", len(d), strings.Join(d, "; "))
}

func sameList(items []model.Item, want []topk.Entry) bool {
	if len(items) != len(want) {
		return false
	}
	for i := range items {
		if items[i].ItemID != want[i].Item || items[i].Views != want[i].Count {
			return false
		}
	}
	return true
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
