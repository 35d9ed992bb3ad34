package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/model/event"
)

func TestArchiveUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"roll larger than the buffer", []string{"--roll-bytes", "1GiB", "--max-buffer", "10MiB"}, "--roll-bytes: 1073741824 exceeds the max buffer of 10485760 bytes: raise the buffer"},
		{"zero roll age", []string{"--roll-age", "0s"}, "--roll-age: 0s: must be positive"},
		{"zero row group rows", []string{"--row-group-rows", "0"}, "--row-group-rows: 0: must be positive"},
		{"zero stop timeout", []string{"--stop-timeout", "0s"}, "--stop-timeout: 0s: must be positive"},
		{"empty root", []string{"--archive-root", ""}, "--archive-root: empty"},
		{"no brokers", []string{"--kafka", " , "}, "--kafka"},
		{"bad size", []string{"--roll-bytes", "lots"}, "lots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runTrending(t, append([]string{"archive", "--metrics-addr", ""}, tc.args...)...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a usage error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestArchiveCommandEmbedded runs `trending archive` on the embedded broker and S3: events
// produced end up readable through archive.Reader, and Ctrl-C (context cancel) stops it
// cleanly with exit status 0.
func TestArchiveCommandEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	s3, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.EnsureTopics(ctx, []string{k.Addr}, eventlog.Spec{Name: eventlog.TopicViews, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(k.Addr), Topic: eventlog.TopicViews, Balancer: &kafka.Hash{}, BatchTimeout: 5 * time.Millisecond}
	hour := time.Now().UTC().Truncate(time.Hour)
	var msgs []kafka.Message
	for i := range 50 {
		e := event.Event{ItemID: "V" + string(rune('a'+i%5)), Count: uint32(i + 1), TS: hour.Add(time.Duration(i) * time.Second)}
		msgs = append(msgs, kafka.Message{Key: []byte(e.ItemID), Value: e.AppendJSON(nil)})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		root := newRootCommand()
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"archive", "--kafka", k.Addr, "--s3-endpoint", s3.Endpoint, "--s3-access-key", "test", "--s3-secret-key", "test",
			"--roll-age", "200ms", "--metrics-addr", "", "--log-level", "warn"})
		done <- root.ExecuteContext(runCtx)
	}()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, "trending", "test", "test"
	store, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	r := archive.NewReader(store)
	for {
		cols, err := r.ReadColumns(ctx, hour)
		if err == nil && cols.Len() == len(msgs) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("archive holds %v events (err %v), want %d", cols, err, len(msgs))
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("archive exited with %v after a graceful stop\n%s", err, out.String())
	}
}
