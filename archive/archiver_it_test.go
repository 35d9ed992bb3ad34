package archive

import (
	"errors"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
)

// Integration tests against the real Kafka and MinIO (make test); each gets its own topic,
// consumer group and bucket.

func minioBucket(t *testing.T) (itest.S3Config, string, *objstore.Client) {
	s3 := itest.S3(t)
	bucket := itest.Name(t, "archive")
	return s3, bucket, newStore(t, s3.Endpoint, bucket, s3.AccessKey, s3.SecretKey)
}

// TestITStreamAcrossHours: a stream over several hours with late and invalid events is
// archived exactly once, garbage lands in quarantine with its reasons, and a graceful stop
// then a restart leave every offset committed.
func TestITStreamAcrossHours(t *testing.T) {
	broker := itest.Kafka(t)
	_, _, st := minioBucket(t)
	archiveScenario(t, broker, st)
}

// TestITCrashBetweenUploadAndCommit: the archiver dies after uploading a roll and before
// committing it. The restarted archiver archives those offsets again with other roll
// boundaries, so S3 really holds duplicates, and the reader still returns each event once.
func TestITCrashBetweenUploadAndCommit(t *testing.T) {
	broker := itest.Kafka(t)
	_, _, st := minioBucket(t)
	ctx := itest.Context(t, 55*time.Second)
	topic := itest.Name(t, "views")
	if _, err := eventlog.EnsureTopics(ctx, []string{broker}, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	s := newStream()
	rng := rand.New(rand.NewPCG(2, 2))
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	s.produce(t, ctx, broker, topic, rng, 600, start, 2*time.Hour, 0)

	cfg := testConfig(broker, topic)
	cfg.RollBytes, cfg.MaxBufferBytes, cfg.RollAge = 4<<20, 16<<20, time.Second // roll by age only
	crashed := startArchiver(t, cfg, st, func(int32) error { return errCrash })
	if err := crashed.wait(t); !errors.Is(err, errCrash) {
		t.Fatalf("Run = %v, want the simulated crash", err)
	}
	objs, err := st.List(ctx, DefaultRoot+"/views/dt=")
	if err != nil || len(objs) == 0 {
		t.Fatalf("the crashed run uploaded nothing (%v): the test would prove nothing", err)
	}
	for p, off := range committed(t, ctx, broker, cfg.ConsumerGroup, topic, 2) {
		if off >= 0 {
			t.Fatalf("partition %d committed at %d though the run crashed before committing", p, off)
		}
	}

	// More events before the restart, so its first roll of the same partition ends
	// elsewhere and is a different object over the same offsets.
	s.produce(t, ctx, broker, topic, rng, 300, start.Add(2*time.Hour), 30*time.Minute, 0)
	run := startArchiver(t, cfg, st, nil)
	r := NewReader(st)
	waitArchived(t, ctx, r, s)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}

	stored := 0
	for h := range s.hours {
		objs, err := r.ListHour(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			body, err := st.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			if err := readFile(body, func(Row) error { stored++; return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stored <= s.total() {
		t.Fatalf("S3 holds %d rows for %d events: no duplicates, so dedup was not tested", stored, s.total())
	}
	t.Logf("S3 holds %d rows for %d events; the reader returned each once", stored, s.total())
	got, err := readAll(t, ctx, r, s.hours)
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got, s)
}

// TestITS3Outage takes S3 away mid-stream (a proxy in front of MinIO, closed and reopened,
// so other tests sharing MinIO are not disturbed): the archiver commits nothing while it is
// down, holds no more than its buffer budget, and loses nothing once S3 is back.
func TestITS3Outage(t *testing.T) {
	broker := itest.Kafka(t)
	s3, bucket, direct := minioBucket(t)
	u, _ := url.Parse(s3.Endpoint)
	prx := startProxy(t, u.Host)
	via := newStore(t, "http://"+prx.addr, bucket, s3.AccessKey, s3.SecretKey)
	ctx := itest.Context(t, 58*time.Second)
	topic := itest.Name(t, "views")
	if _, err := eventlog.EnsureTopics(ctx, []string{broker}, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	s := newStream()
	rng := rand.New(rand.NewPCG(3, 3))
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	s.produce(t, ctx, broker, topic, rng, 500, start, time.Hour, 25)

	cfg := testConfig(broker, topic)
	cfg.RollBytes, cfg.MaxBufferBytes = 16<<10, 64<<10
	run := startArchiver(t, cfg, via, nil)
	r := NewReader(direct)
	waitArchived(t, ctx, r, s)

	prx.Down()
	s.produce(t, ctx, broker, topic, rng, 3000, start.Add(time.Hour), time.Hour, 25)
	m := run.a.m
	for value(m.stalled) != 1 {
		if ctx.Err() != nil {
			t.Fatal("the archiver never noticed S3 was down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := committed(t, ctx, broker, cfg.ConsumerGroup, topic, 2)
	time.Sleep(2 * time.Second) // several retries' worth
	after := committed(t, ctx, broker, cfg.ConsumerGroup, topic, 2)
	for p := range before {
		if before[p] != after[p] {
			t.Fatalf("partition %d committed %d -> %d while S3 was down", p, before[p], after[p])
		}
	}
	ends := endOffsets(t, ctx, broker, topic, 2)
	if buffered, limit := value(m.bufferBytes), float64(cfg.MaxBufferBytes+8<<10); buffered > limit {
		t.Fatalf("buffered %v bytes while S3 was down, budget %d (+ one message)", buffered, cfg.MaxBufferBytes)
	}
	behind := int64(0)
	for p := range ends {
		behind += ends[p] - after[p]
	}
	if held := value(m.bufferEvents); held >= float64(behind) {
		t.Fatalf("holds %v messages in memory for %d uncommitted: it kept fetching though it could not upload", held, behind)
	}
	if value(m.uploadFailures) == 0 || value(m.uploadRetries) == 0 {
		t.Fatal("no upload failures or retries counted")
	}

	prx.Up(t)
	waitArchived(t, ctx, r, s)
	checkQuarantine(t, ctx, direct, s)
	if err := run.stop(t); err != nil {
		t.Fatal(err)
	}
	if value(m.stalled) != 0 {
		t.Error("stalled gauge still 1 after S3 came back")
	}
	ends = endOffsets(t, ctx, broker, topic, 2)
	for p, off := range committed(t, ctx, broker, cfg.ConsumerGroup, topic, 2) {
		if off != ends[p] {
			t.Errorf("partition %d committed %d after recovery and stop, end is %d", p, off, ends[p])
		}
	}
}

// wait returns Run's error once it ends by itself (a crash).
func (r *running) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("archiver did not end within 30s")
		return nil
	}
}
