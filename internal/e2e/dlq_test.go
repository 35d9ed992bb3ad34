package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model/event"
)

// TestFaultPausedWorkerDLQ is issue 28's second finding (652 DLQ messages for 574 malformed
// events): one of two `trending speed` workers is SIGSTOPped past its session while
// `trending loadgen` sends a stream with malformed messages, the broker is restarted while
// it sleeps, and then it is woken. The other worker replays the paused one's partitions
// from their checkpoints (5 s apart, so each has DLQ messages queued or written since), and
// the woken one still holds its queue. Afterwards the DLQ holds exactly one message per
// malformed message of the topic: as many messages as malformed events, none twice.
func TestFaultPausedWorkerDLQ(t *testing.T) {
	itest.Faults(t)
	ctx := itest.Context(t, 5*time.Minute)
	f := newFixture(t, ctx, "pausedlq", 4)
	bin := binary(t)
	testStart := time.Now()
	speedArgs := f.args("speed", "--checkpoint-every", "5s", "--publish-every", "1s", "--sketch-width", "16384", "--topics-sketch-width", "1024")
	a, b := newChild(bin, "speed-a", speedArgs), newChild(bin, "speed-b", speedArgs)
	for _, c := range []*child{a, b} {
		c.start(t)
	}
	t.Cleanup(func() {
		a.cmd.Process.Signal(syscall.SIGCONT)
		for _, c := range []*child{a, b} {
			if !c.kill() {
				t.Errorf("%s exited by itself: %s", c.name, c.cmd.ProcessState)
			}
			if t.Failed() {
				t.Logf("%s output (last 25 lines):\n%s", c.name, c.logs.tail(25))
			}
		}
	})
	first := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	lg := newChild(bin, "loadgen", append(append([]string{"loadgen"}, f.kafka...),
		"--rate", "20", "--items", "2000", "--servers", "3", "--malformed", "0.01", "--seed", "29",
		"--speedup", "60", "--duration", "1h", "--start", first.Format(time.RFC3339), "--log-format", "json"))
	lg.start(t)
	lgDone := make(chan error, 1)
	go func() { lgDone <- lg.cmd.Wait() }()
	t.Cleanup(func() { lg.cmd.Process.Kill() })

	waitFor(t, time.Now().Add(60*time.Second), "both workers assigned partitions and checkpointing", func() (bool, string) {
		la, lb := lastAssigned(a.logs.String()), lastAssigned(b.logs.String())
		return strings.Contains(la, `"partitions":2`) && strings.Contains(lb, `"partitions":2`) && time.Since(testStart) > 12*time.Second, la + " " + lb
	})
	bAssigned := strings.Count(b.logs.String(), `"msg":"partitions assigned"`)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	waitFor(t, time.Now().Add(30*time.Second), "worker B to take every partition", func() (bool, string) {
		return strings.Count(b.logs.String(), `"msg":"partitions assigned"`) > bAssigned && strings.Contains(lastAssigned(b.logs.String()), `"partitions":4`), ""
	})
	time.Sleep(2 * time.Second) // B replays what A had counted
	itest.Stop(t, "kafka")
	time.Sleep(2 * time.Second)
	itest.Start(t, "kafka")
	time.Sleep(5 * time.Second)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("A paused for %s, the broker restarted meanwhile", time.Since(paused).Round(100*time.Millisecond))
	select {
	case err := <-lgDone:
		if err != nil {
			t.Fatalf("loadgen: %v\n%s", err, lg.logs.tail(10))
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("loadgen did not finish")
	}

	_, ends, _ := f.topicTruth(t, ctx)
	malformed := map[string]bool{}
	for _, o := range ends {
		readRange(t, ctx, f.kc, f.topic, o.Partition, o.First, o.Last, func(m kafka.Message) {
			if _, err := event.Decode(m.Value); err != nil {
				malformed[fmt.Sprintf("%s/%d@%d", m.Topic, m.Partition, m.Offset)] = true
			}
		})
	}
	if len(malformed) == 0 {
		t.Fatal("no malformed message in the topic")
	}
	dlq := eventlog.NamesFor(f.topic).DLQ
	f.waitCommitted(t, ctx, eventlog.NamesFor(f.topic).SpeedGroup, ends, 90*time.Second)
	time.Sleep(5 * time.Second) // a late write of either worker would land by now
	total, sources, valid := dlqSources(t, ctx, f.kc, dlq)
	missing := 0
	for s := range malformed {
		if sources[s] == 0 {
			missing++
		}
	}
	copies := total - len(sources)
	t.Logf("%d DLQ messages from %d distinct sources for %d malformed in the topic (%d missing, %d copies, %d valid); done in %s",
		total, len(sources), len(malformed), missing, copies, valid, time.Since(testStart).Round(100*time.Millisecond))
	logs := a.logs.String() + b.logs.String()
	t.Logf("guards hit: %d restores found DLQ messages already written for offsets to replay; %d DLQ flushes refused by the generation's fence",
		strings.Count(logs, "the DLQ already holds"), strings.Count(logs, "the generation's fence"))
	if total != len(malformed) || missing != 0 || valid != 0 {
		t.Errorf("the DLQ holds %d messages (%d copies, %d missing, %d valid) for %d malformed: want each exactly once",
			total, copies, missing, valid, len(malformed))
	}
}
