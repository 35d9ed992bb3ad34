package eventlog

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRetainBoundsTheEmbeddedLog: with Retain, the embedded broker trims a partition to its
// byte bound (whole segment files leave the data directory; the log start moves up, the end
// stays), and leaves a compacted topic whole; without it nothing is trimmed.
func TestRetainBoundsTheEmbeddedLog(t *testing.T) {
	sizes := map[bool]int64{}
	for _, retained := range []bool{true, false} {
		dir := t.TempDir()
		var opts []EmbeddedOption
		if retained {
			opts = []EmbeddedOption{Retain(24*time.Hour, 256<<10), trimEvery(100 * time.Millisecond)}
		}
		e, err := StartEmbedded(dir, 0, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		c := Plain(e.Addr)
		if _, err := c.EnsureTopics(ctx, Spec{Name: "v", Partitions: 1}, Spec{Name: "hot", Partitions: 1, Compact: true}); err != nil {
			t.Fatal(err)
		}
		value := bytes.Repeat([]byte("x"), 1000)
		for _, topic := range []string{"v", "hot"} {
			w := c.NewWriter(topic)
			for batch := 0; batch < 40; batch++ { // 4 MB in 40 batches of 100 messages
				msgs := make([]kafka.Message, 100)
				for i := range msgs {
					msgs[i] = kafka.Message{Key: []byte{byte(batch), byte(i)}, Value: value}
				}
				if err := w.WriteMessages(ctx, msgs...); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
		}
		var v, hot []Offsets
		deadline := time.Now().Add(20 * time.Second)
		for {
			if v, err = c.TopicOffsets(ctx, "v"); err != nil {
				t.Fatal(err)
			}
			if !retained || v[0].First > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if hot, err = c.TopicOffsets(ctx, "hot"); err != nil {
			t.Fatal(err)
		}
		cancel()
		e.Close()
		if v[0].Last != 4000 || hot[0].First != 0 || hot[0].Last != 4000 {
			t.Errorf("retained %v: offsets v %+v hot %+v, want v ending at 4000 and hot whole [0, 4000)", retained, v[0], hot[0])
		}
		switch {
		case retained && (v[0].First == 0 || v[0].Last-v[0].First > 1000):
			t.Errorf("retained: v keeps %+v, want at most about 256 KiB of 1 KB messages", v[0])
		case !retained && v[0].First != 0:
			t.Errorf("not retained: v trimmed to %+v", v[0])
		}
		sizes[retained] = dirBytes(t, dir)
		t.Logf("retained %v: v %+v, data directory %d bytes", retained, v[0], sizes[retained])
	}
	// Both topics take about 4 MB each unretained; retained, v's files shrink to its bound.
	if sizes[true] > sizes[false]*6/10 {
		t.Errorf("data directory %d bytes retained against %d not: the trimmed segments stayed on disk", sizes[true], sizes[false])
	}
}
