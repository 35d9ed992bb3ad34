package archive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model/event"
)

// stream is what a test produced: the valid events (the truth the archive must hold exactly
// once), and how many invalid messages of each reason.
type stream struct {
	valid map[string]int // canonical event JSON -> occurrences
	hours map[time.Time]bool
	bad   map[string]int // reason -> count
	n     int
}

func newStream() *stream {
	return &stream{valid: map[string]int{}, hours: map[time.Time]bool{}, bad: map[string]int{}}
}

// garbage are invalid messages with the reason the decoder gives them.
var garbage = []struct {
	value  string
	reason event.Reason
}{
	{`{"item_id":"V1","count":0,"ts":"2026-11-14T10:00:00Z"}`, event.ReasonBadCount},
	{`not json`, event.ReasonMalformedJSON},
	{`{"item_id":"V1","count":1}`, event.ReasonMissingField},
	{`{"item_id":"V1","count":1,"ts":"2026-11-14T10:00:00Z","colour":"red"}`, event.ReasonUnknownField},
	{`{"item_id":"V1","count":1,"ts":1}`, event.ReasonBadTS},
}

// produce writes n valid events spread over hours from..from+spread with one in five late
// by up to 90 minutes, plus one invalid message every badEvery (0: none). Every event is
// unique, so the truth is a set.
func (s *stream) produce(t testing.TB, ctx context.Context, broker, topic string, rng *rand.Rand, n int, from time.Time, spread time.Duration, badEvery int) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(broker), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: 5 * time.Millisecond, BatchSize: 500, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	msgs := make([]kafka.Message, 0, n)
	for i := range n {
		if badEvery > 0 && i%badEvery == badEvery-1 {
			g := garbage[rng.IntN(len(garbage))]
			msgs = append(msgs, kafka.Message{Key: []byte("junk"), Value: []byte(g.value)})
			s.bad[string(g.reason)]++
			continue
		}
		ts := from.Add(time.Duration(i) * spread / time.Duration(n))
		if rng.IntN(5) == 0 {
			ts = ts.Add(-time.Duration(rng.Int64N(int64(90 * time.Minute))))
		}
		seq := s.n
		s.n++
		e := event.Event{ItemID: fmt.Sprintf("V%d", rng.IntN(40)), Count: uint32(1 + seq%1000), TS: ts.Truncate(time.Millisecond).UTC(),
			Region: []string{"", "eu", "us"}[rng.IntN(3)]}
		e.TS = e.TS.Add(time.Duration(seq%1000) * time.Microsecond).Truncate(time.Millisecond) // keep ms
		// Unique per event: the count and millisecond alone could collide, the sequence in
		// the region cannot.
		e.Region = fmt.Sprintf("%s%d", e.Region, seq)
		b := e.AppendJSON(nil)
		s.valid[string(b)]++
		s.hours[e.TS.Truncate(time.Hour)] = true
		msgs = append(msgs, kafka.Message{Key: []byte(e.ItemID), Value: b})
	}
	for {
		err := w.WriteMessages(ctx, msgs...)
		if err == nil {
			return
		}
		// A topic just created may not be in every broker's metadata yet.
		if !errors.Is(err, kafka.UnknownTopicOrPartition) || ctx.Err() != nil {
			t.Fatalf("produce: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *stream) total() int {
	n := 0
	for _, c := range s.valid {
		n += c
	}
	return n
}

// readAll reads every hour the stream touched through the Reader and returns the events
// found as canonical JSON with how often each was read.
func readAll(t testing.TB, ctx context.Context, r *Reader, hours map[time.Time]bool) (map[string]int, error) {
	t.Helper()
	got := map[string]int{}
	for h := range hours {
		err := r.ReadHour(ctx, h, func(row Row) error {
			e := event.Event{ItemID: row.ItemID, Count: row.Count, TS: time.UnixMilli(row.TS).UTC(), Region: row.Region}
			got[string(e.AppendJSON(nil))]++
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return got, nil
}

// waitArchived polls the reader until it returns as many events as were produced, then
// checks each produced event was read exactly once.
func waitArchived(t testing.TB, ctx context.Context, r *Reader, s *stream) {
	t.Helper()
	want := s.total()
	var got map[string]int
	var err, lastErr error
	lastN := -1
	for {
		got, err = readAll(t, ctx, r, s.hours)
		n := 0
		for _, c := range got {
			n += c
		}
		if err == nil && n >= want {
			break
		}
		if err != nil && (lastErr == nil || err.Error() != lastErr.Error()) {
			t.Logf("reading the archive: %v", err)
		}
		lastErr = err
		if n != lastN {
			t.Logf("archive holds %d of %d events", n, want)
			lastN = n
		}
		if ctx.Err() != nil {
			t.Fatalf("archive holds %d of %d events when the test ran out of time (last error: %v)", n, want, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkExactlyOnce(t, got, s)
}

func checkExactlyOnce(t testing.TB, got map[string]int, s *stream) {
	t.Helper()
	var problems []string
	for e, c := range s.valid {
		if got[e] != c {
			problems = append(problems, fmt.Sprintf("%s read %d times, produced %d", e, got[e], c))
		}
	}
	for e, c := range got {
		if _, ok := s.valid[e]; !ok {
			problems = append(problems, fmt.Sprintf("%s read %d times, never produced", e, c))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		t.Fatalf("%d events not read exactly once, e.g.:\n%s", len(problems), strings.Join(problems[:min(len(problems), 10)], "\n"))
	}
}

// run starts an archiver and returns a function that stops it gracefully and returns Run's
// error.
type running struct {
	a      *Archiver
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

func startArchiver(t testing.TB, cfg Config, st *objstore.Client, hook func(int32) error) *running {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := New(cfg, st, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	a.beforeCommit = hook
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// stop stops the archiver gracefully and returns Run's error.
func (r *running) stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for Cleanup
		return err
	case <-time.After(40 * time.Second):
		t.Fatal("archiver did not stop within 40s")
		return nil
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testConfig is a configuration that rolls often, for tests.
func testConfig(broker, topic string) Config {
	cfg := DefaultConfig()
	cfg.Kafka = eventlog.Plain(broker)
	cfg.Topic = topic
	cfg.ConsumerGroup = topic + "-archive"
	cfg.RollBytes = 32 << 10
	cfg.MaxBufferBytes = 256 << 10
	cfg.RollAge = 300 * time.Millisecond
	cfg.MaxWait = 100 * time.Millisecond
	cfg.RetryMin = 50 * time.Millisecond
	cfg.RetryMax = 500 * time.Millisecond
	cfg.StopTimeout = 10 * time.Second
	cfg.RowGroupRows = 64
	return cfg
}

// committed returns the group's committed offsets by partition (-1: none).
func committed(t testing.TB, ctx context.Context, broker, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second}
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	resp, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// endOffsets returns the topic's end offsets by partition.
func endOffsets(t testing.TB, ctx context.Context, broker, topic string, partitions int) map[int]int64 {
	t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second}
	req := make([]kafka.OffsetRequest, partitions)
	for i := range req {
		req[i] = kafka.LastOffsetOf(i)
	}
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: req}})
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.LastOffset
	}
	return out
}

// quarantined reads every quarantine record under the archive.
func quarantined(t testing.TB, ctx context.Context, st *objstore.Client) []QuarantineRecord {
	t.Helper()
	objs, err := st.List(ctx, DefaultRoot+"/quarantine/")
	if err != nil {
		t.Fatal(err)
	}
	var out []QuarantineRecord
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".jsonl") {
			t.Fatalf("unexpected quarantine object %s", o.Key)
		}
		b, err := st.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var r QuarantineRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", o.Key, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// checkQuarantine checks every invalid message is in quarantine once, with its reason and
// raw bytes.
func checkQuarantine(t testing.TB, ctx context.Context, st *objstore.Client, s *stream) {
	t.Helper()
	recs := quarantined(t, ctx, st)
	byReason := map[string]int{}
	seen := map[pk]bool{}
	known := map[string]event.Reason{}
	for _, g := range garbage {
		known[g.value] = g.reason
	}
	for _, r := range recs {
		if seen[pk{r.Partition, r.Offset}] {
			continue // a repeated roll; quarantine is deduplicated by (partition, offset) too
		}
		seen[pk{r.Partition, r.Offset}] = true
		byReason[r.Reason]++
		if want, ok := known[string(r.Value)]; !ok || string(want) != r.Reason {
			t.Errorf("quarantined %q with reason %s; want a produced invalid message with its reason %s", r.Value, r.Reason, want)
		}
		if r.Detail == "" || r.IngestTS.IsZero() || string(r.Key) != "junk" {
			t.Errorf("quarantine record lacks detail, ingest time or key: %+v", r)
		}
	}
	if fmt.Sprint(byReason) != fmt.Sprint(s.bad) {
		t.Fatalf("quarantined by reason %v, produced %v", byReason, s.bad)
	}
}

// TestArchiverEmbedded is the fast path on the in-process broker and S3: a stream over
// several hours with late and invalid events is archived exactly once, garbage lands in
// quarantine, progress markers close the hours, a graceful stop commits everything.
func TestArchiverEmbedded(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	archiveScenario(t, k.Addr, embeddedStore(t))
}

func archiveScenario(t *testing.T, broker string, st *objstore.Client) {
	ctx := itest.Context(t, 55*time.Second)
	topic := itest.Name(t, "views")
	if _, err := eventlog.EnsureTopics(ctx, []string{broker}, eventlog.Spec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	s := newStream()
	rng := rand.New(rand.NewPCG(1, 1))
	// Event times up to the wall clock (none ahead of it, which the archive would quarantine
	// as future_ts), so that caught-up markers (wall time) and watermarks (event time) tell
	// the same story: three hours ago is closed, the current hour is not.
	now := time.Now().UTC()
	start := now.Truncate(time.Hour).Add(-3 * time.Hour)
	s.produce(t, ctx, broker, topic, rng, 3000, start, now.Sub(start), 50)
	cfg := testConfig(broker, topic)
	run := startArchiver(t, cfg, st, nil)
	r := NewReader(st)
	waitArchived(t, ctx, r, s)
	checkQuarantine(t, ctx, st, s)
	if len(s.hours) < 4 {
		t.Fatalf("BUG: stream touched %d hours, want several", len(s.hours))
	}

	// More events, then a graceful stop: they are uploaded and committed on the way out.
	s.produce(t, ctx, broker, topic, rng, 200, now.Add(-10*time.Minute), 10*time.Minute, 0)
	// Stop while some are buffered (fetched, not yet rolled by age), so the stop path
	// uploads and commits them.
	for value(run.a.m.bufferEvents) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the new events were never buffered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	// What was committed is archived, and the progress markers say the same offsets.
	stopped := committed(t, ctx, broker, cfg.ConsumerGroup, topic, 3)
	prog, err := r.Progress(ctx)
	if err != nil || len(prog) != 3 {
		t.Fatalf("progress %+v, %v: want a marker per partition", prog, err)
	}
	for _, p := range prog {
		if p.NextOffset != stopped[int(p.Partition)] {
			t.Errorf("partition %d: progress next offset %d, committed %d", p.Partition, p.NextOffset, stopped[int(p.Partition)])
		}
	}
	got, err := readAll(t, ctx, r, s.hours)
	if err != nil {
		t.Fatal(err)
	}
	for e, c := range got {
		if c != 1 || s.valid[e] != 1 {
			t.Fatalf("after the stop %s is read %d times, produced %d", e, c, s.valid[e])
		}
	}

	// A new run resumes from the commits and archives the rest; after its own stop every
	// offset is committed.
	m := run.a.m
	run = startArchiver(t, cfg, st, nil)
	waitArchived(t, ctx, r, s)
	if err := run.stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	ends := endOffsets(t, ctx, broker, topic, 3)
	if got := committed(t, ctx, broker, cfg.ConsumerGroup, topic, 3); fmt.Sprint(got) != fmt.Sprint(ends) {
		t.Fatalf("committed %v after a graceful stop, want the end offsets %v", got, ends)
	}
	m2 := run.a.m
	if got, want := value(m.events)+value(m2.events), float64(s.total()); got != want {
		t.Errorf("events_total %v over both runs, want %v (no duplicates without a crash)", got, want)
	}

	if value(m.rolls.WithLabelValues(whyStop)) == 0 {
		t.Error("the graceful stop rolled nothing though messages were buffered")
	}
	if value(m2.bufferBytes) != 0 || value(m2.bufferEvents) != 0 {
		t.Errorf("buffer gauges not zero after stop: %v bytes, %v messages", value(m2.bufferBytes), value(m2.bufferEvents))
	}
	if value(m.objects.WithLabelValues(kindParquet)) == 0 || value(m.bytes) == 0 {
		t.Error("no objects or bytes counted")
	}
	if got := value(m.quarantined.WithLabelValues(string(event.ReasonMalformedJSON))); got != float64(s.bad[string(event.ReasonMalformedJSON)]) {
		t.Errorf("quarantined{malformed_json} = %v, want %d", got, s.bad[string(event.ReasonMalformedJSON)])
	}

	prog, err = r.Progress(ctx)
	if err != nil || len(prog) != 3 {
		t.Fatalf("progress %+v, %v: want a marker per partition", prog, err)
	}
	for _, p := range prog {
		if p.NextOffset != ends[int(p.Partition)] {
			t.Errorf("partition %d progress next offset %d, want %d", p.Partition, p.NextOffset, ends[int(p.Partition)])
		}
	}
	if m, err := r.Manifest(ctx); err != nil || m.Partitions != 3 || m.Topic != topic {
		t.Errorf("topic manifest %+v, %v: want %s with 3 partitions", m, err, topic)
	}
	if why, err := r.Incomplete(ctx, start, 10*time.Minute); err != nil || why != "" {
		t.Errorf("first hour not complete (%q, %v) with every partition's watermark hours past it: %+v", why, err, prog)
	}
	if why, err := r.Incomplete(ctx, start.Add(3*time.Hour), 10*time.Minute); err != nil || why == "" {
		t.Errorf("next hour %s complete (%v) though neither watermarks nor the clock passed it: %+v", start.Add(3*time.Hour), err, prog)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"defaults with brokers", func(*Config) {}, ""},
		{"no brokers", func(c *Config) { c.Kafka = nil }, "Kafka: no Kafka brokers"},
		{"roll bigger than buffer", func(c *Config) { c.RollBytes = c.MaxBufferBytes + 1 }, "raise the buffer"},
		{"backoff upside down", func(c *Config) { c.RetryMin = time.Minute; c.RetryMax = time.Second }, "min <= max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Kafka = eventlog.Plain("127.0.0.1:1")
			tc.mod(&c)
			err := c.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

var errCrash = errors.New("simulated crash between upload and commit")

// value reads a counter's or gauge's current value.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}
