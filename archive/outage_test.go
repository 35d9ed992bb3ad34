package archive

import (
	"math/rand/v2"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/itest"
)

// TestFaultArchiverKafkaOutage stops the real broker for 20 s, twice the time that ended the
// archiver before issue 28 ("a part failed; stopping the process ... connection refused"
// after about 10 s), then starts it again (same port and data): the archiver is still
// running, said the broker was down (trending_kafka_up 0) and up again, and archives what
// was produced after the restart, every event exactly once.
func TestFaultArchiverKafkaOutage(t *testing.T) {
	itest.Faults(t)
	broker := itest.Kafka(t)
	ctx := itest.Context(t, 90*time.Second)
	topic := itest.Name(t, "views")
	if _, err := eventlog.EnsureTopics(ctx, []string{broker}, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	st := embeddedStore(t)
	s := newStream()
	rng := rand.New(rand.NewPCG(28, 1))
	now := time.Now().UTC()
	s.produce(t, ctx, broker, topic, rng, 500, now.Add(-time.Hour), 50*time.Minute, 0)
	run := startArchiver(t, testConfig(broker, topic), st, nil)
	r := NewReader(st)
	waitArchived(t, ctx, r, s)
	up := run.a.kafka
	if !up.Up() || value(run.a.kafka.Gauge()) != 1 {
		t.Fatal("the archiver says Kafka is down before the outage")
	}

	itest.Stop(t, "kafka")
	down := time.Now()
	for time.Since(down) < 20*time.Second {
		select {
		case err := <-run.done:
			run.done <- err
			t.Fatalf("the archiver returned %s into the broker's outage: %v", time.Since(down).Round(100*time.Millisecond), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if up.Up() || value(run.a.kafka.Gauge()) != 0 {
		t.Error("20 s into the outage the archiver still says Kafka is up")
	}
	itest.Start(t, "kafka")
	back := time.Now()
	s.produce(t, ctx, broker, topic, rng, 500, now.Add(-30*time.Minute), 25*time.Minute, 0)
	waitArchived(t, ctx, r, s)
	t.Logf("broker away %s; everything archived %s after it returned", back.Sub(down).Round(100*time.Millisecond), time.Since(back).Round(100*time.Millisecond))
	if !up.Up() || value(run.a.kafka.Gauge()) != 1 {
		t.Error("the archiver still says Kafka is down after archiving again")
	}
	if err := run.stop(t); err != nil {
		t.Fatalf("graceful stop after the outage: %v", err)
	}
}
