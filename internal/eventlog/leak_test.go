package eventlog_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
)

// TestNoTransportOutlivesItsUse: reading a topic's offsets (the archive does it every few
// seconds) and a writer that was closed leave no kafka-go connection pool behind. An open
// pool keeps a broker connection and a goroutine that reads the cluster's metadata every
// 10 s for good: before, a test binary that ran the pipelines held 874 of them, each with
// the metadata of every topic, 1.8 GB in all, and CI's was killed at 22 GB.
func TestNoTransportOutlivesItsUse(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := eventlog.EnsureTopics(ctx, []string{k.Addr}, eventlog.Spec{Name: "leak", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	before := pools()
	for range 10 {
		if _, err := eventlog.TopicOffsets(ctx, []string{k.Addr}, "leak"); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		w := eventlog.NewWriter([]string{k.Addr}, "leak")
		if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("a"), Value: []byte("b")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A closed pool's goroutine ends at its next select.
	deadline := time.Now().Add(5 * time.Second)
	for pools() > before && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := pools(); got > before {
		t.Fatalf("%d kafka-go connection pools still refresh metadata after 10 offset reads and 5 closed writers (%d before)", got, before)
	}
}

// pools counts the goroutines of open kafka-go connection pools (their metadata refresh).
func pools() int {
	buf := make([]byte, 4<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "kafka-go.(*connPool).discover(")
}

// TestWritersAskForTheirTopicsOnly: a writer's transport refreshes the metadata of the
// topics it writes, not of every topic on the cluster (the shared test broker held 1,521, about
// 1 MB a refresh): one topic for NewWriter(topic), the named ones for NewTopicsWriter.
func TestWritersAskForTheirTopicsOnly(t *testing.T) {
	c := eventlog.Plain("127.0.0.1:1")
	for _, tc := range []struct {
		name string
		w    *eventlog.Writer
		want []string
	}{
		{"NewWriter(views)", c.NewWriter("views"), []string{"views"}},
		{"NewTopicsWriter(partials, dlq)", c.NewTopicsWriter("partials", "dlq"), []string{"partials", "dlq"}},
	} {
		tr, ok := tc.w.Transport.(*kafka.Transport)
		if !ok {
			t.Fatalf("%s: transport %T", tc.name, tc.w.Transport)
		}
		if !slices.Equal(tr.MetadataTopics, tc.want) {
			t.Errorf("%s: metadata of %q, want %q", tc.name, tr.MetadataTopics, tc.want)
		}
		tc.w.Close()
	}
}
