package worker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
)

// TestDLQWritten: a new owner's read of the DLQ finds the offsets of its partition, from the
// offset it replays from on, that the DLQ holds (by the source header), and with a
// checkpoint's time reads only from a minute before it.
func TestDLQWritten(t *testing.T) {
	br, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kc := eventlog.Plain(br.Addr)
	if _, err := kc.EnsureTopics(ctx, eventlog.Spec{Name: "views.dlq", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := now.Add(-10 * time.Minute)
	msg := func(at time.Time, source string) kafka.Message {
		return kafka.Message{Key: []byte("k"), Value: []byte("not json"), Time: at,
			Headers: []kafka.Header{{Key: "reason", Value: []byte("malformed_json")}, {Key: "source", Value: []byte(source)}}}
	}
	w := kc.NewWriter("views.dlq")
	defer w.Close()
	if err := w.WriteMessages(ctx,
		msg(old, "views/0@5"), msg(old, "views/1@7"),
		msg(now, "views/0@3"), msg(now, "views/0@9"), msg(now, "views/1@12"), msg(now, "views/10@11"), msg(now, "other/0@13"),
	); err != nil {
		t.Fatal(err)
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role = "speed"
	h, _ := eventlog.NewHealth(hc)
	wk := &Worker{cfg: Config{Kafka: kc, Topic: "views", DLQTopic: "views.dlq"}, kafka: h}
	for _, c := range []struct {
		name  string
		id    int
		from  int64
		since time.Time
		want  []int64
	}{
		{"no checkpoint: the whole DLQ", 0, kafka.FirstOffset, time.Time{}, []int64{3, 5, 9}},
		{"from the checkpoint's offset", 0, 4, time.Time{}, []int64{5, 9}},
		{"a minute before the checkpoint's time", 0, 4, now.Add(-30 * time.Second), []int64{9}},
		{"another partition", 1, 0, now.Add(-30 * time.Second), []int64{12}},
		{"nothing since", 0, 0, now.Add(5 * time.Minute), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := wk.dlqWrittenRetrying(ctx, c.id, c.from, c.since)
			if err != nil {
				t.Fatal(err)
			}
			var offs []int64
			for o := range got {
				offs = append(offs, o)
			}
			slices.Sort(offs)
			if fmt.Sprint(offs) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", offs, c.want)
			}
		})
	}
}
