package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model/event"
	"trending/serving/api"
)

// TestUpSeed004Spans runs `trending up --window-preset seed-004` over rounds of events near a
// moving clock, with late events (up to 90 s, past the 30 s lateness) and early ones, and
// after each round reads every live list (minute, hour, day, 7d) once the pipeline has
// counted the round: each item's views are the truth over the list's stated span,
// [window_start, window_end] by event time (the minute exactly, the others exact or within
// the sketch bound). The rounds end at random seconds of their minute, so that many reads
// come while the minute before is still open (the lateness has not passed): the minute list
// must not count that minute, since its window_start is the current minute.
func TestUpSeed004Spans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	seed004Spans(t, k.Addr, nil)
}

func TestUpSeed004SpansKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	seed004Spans(t, broker, []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "spans")})
}

func seed004Spans(t *testing.T, broker string, extra []string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	up := startInProcess(t, append([]string{"up", "--window-preset", "seed-004", "--sketch-width", "4096",
		"--data", data, "--listen", addr, "--kafka", broker, "--views-topic", topic, "--no-load", "--backfill", "0",
		"--publish-every", "200ms", "--checkpoint-every", "5s", "--log-format", "json", "--log-level", "warn"}, extra...)...)
	defer up.stop()
	base := "http://" + addr
	get := func(path string) (int, []byte) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, []byte(err.Error())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	deadline := time.Now().Add(60 * time.Second)
	for c, _ := get("/readyz"); c != 200; c, _ = get("/readyz") {
		if time.Now().After(deadline) {
			t.Fatal("the API never became ready")
		}
		time.Sleep(250 * time.Millisecond)
	}

	type sent struct {
		ms   int64
		item string
		n    uint64
	}
	var all []sent
	truth := func(from, to time.Time) map[string]uint64 {
		out := map[string]uint64{}
		for _, s := range all {
			if s.ms >= from.UnixMilli() && s.ms <= to.UnixMilli() {
				out[s.item] += s.n
			}
		}
		return out
	}
	w := eventlog.NewWriter([]string{broker}, topic)
	defer w.Close()
	r := rand.New(rand.NewPCG(27, 3))
	items := make([]string, 24)
	for i := range items {
		items[i] = fmt.Sprintf("span-%02d", i)
	}
	// The clock starts 20 minutes ago (a minute and a few seconds into it) and moves 2 to 45
	// s a round: event times stay in the past, far from --max-future.
	clock := time.Now().UTC().Add(-20 * time.Minute).Truncate(time.Minute).Add(time.Duration(r.IntN(50)) * time.Second)
	const rounds = 16
	inOpen := 0 // reads while the minute before the list's start was open and had events
	for round := range rounds {
		clock = clock.Add(time.Duration(2000+r.IntN(43000)) * time.Millisecond)
		end := clock
		var msgs []kafka.Message
		emit := func(item string, ts time.Time, n uint32) {
			ev := event.Event{ItemID: item, Count: n, TS: ts.Truncate(time.Millisecond)}
			msgs = append(msgs, kafka.Message{Key: []byte(item), Value: ev.AppendJSON(nil)})
			all = append(all, sent{ev.TS.UnixMilli(), item, uint64(n)})
		}
		for range 40 + r.IntN(80) {
			ts := clock.Add(-time.Duration(r.Int64N(int64(8 * time.Second))))
			switch x := r.IntN(100); {
			case x < 15: // late, some past the lateness
				ts = clock.Add(-time.Duration(r.Int64N(int64(90 * time.Second))))
			case x < 20: // early
				ts = clock.Add(time.Duration(r.Int64N(int64(3 * time.Second))))
				end = maxTime(end, ts.Truncate(time.Millisecond))
			}
			emit(items[min(r.IntN(len(items)), r.IntN(len(items)))], ts, uint32(1+r.IntN(3)))
		}
		// Last, one view of every item at the round's newest event time: every partition then
		// ends the round at the same as-of (a list merges partitions at one as-of exactly).
		for _, it := range items {
			emit(it, end, 1)
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		// Wait until every live list is as of the round's end, complete (no partition
		// stale) and unchanged for 1.5 s: every partition has counted all it was sent.
		lists := map[string]api.ListResponse{}
		var stable time.Time
		prev := ""
		deadline := time.Now().Add(60 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the lists never settled as of %s; last %s", round, end.Format(time.RFC3339Nano), prev)
			}
			time.Sleep(150 * time.Millisecond)
			ok, cur := true, ""
			for _, win := range []string{"minute", "hour", "day", "7d"} {
				c, b := get("/v1/trending?window=" + win + "&limit=100")
				var l api.ListResponse
				if c != 200 || json.Unmarshal(b, &l) != nil || !l.AsOf.Equal(end) || l.Partial {
					ok = false
					cur += fmt.Sprintf("%s: %d %.300s; ", win, c, b)
					continue
				}
				lists[win] = l
				items, _ := json.Marshal(l.Items)
				cur += win + string(items)
			}
			if !ok || cur != prev {
				prev, stable = cur, time.Now()
				continue
			}
			if time.Since(stable) >= 1500*time.Millisecond {
				break
			}
		}
		minute := lists["minute"]
		if want := end.Truncate(time.Minute); !minute.WindowStart.Equal(want) || !minute.WindowEnd.Equal(end) {
			t.Errorf("round %d: the minute list spans [%s, %s], want [%s, %s]", round, minute.WindowStart.Format(time.RFC3339Nano),
				minute.WindowEnd.Format(time.RFC3339Nano), want.Format(time.RFC3339), end.Format(time.RFC3339Nano))
		}
		if end.Sub(end.Truncate(time.Minute)) < 30*time.Second && len(truth(end.Truncate(time.Minute).Add(-time.Minute), end.Truncate(time.Minute).Add(-time.Millisecond))) > 0 {
			inOpen++
		}
		for _, win := range []string{"minute", "hour", "day", "7d"} {
			l := lists[win]
			tr := truth(l.WindowStart, l.WindowEnd)
			if l.WindowStart.IsZero() || !l.WindowEnd.Equal(l.AsOf) {
				t.Fatalf("round %d %s: span [%s, %s] as of %s", round, win, l.WindowStart, l.WindowEnd, l.AsOf)
			}
			what := fmt.Sprintf("round %d (as of %s) %s [%s, %s]", round, end.Format("15:04:05.000"), win, l.WindowStart.Format("15:04:05"), l.WindowEnd.Format("15:04:05.000"))
			if l.ErrorBound == nil && len(l.Items) != len(tr) {
				// (A sketch list ranks its candidates: an item seen only in open minutes is one
				// once its minute closes.)
				t.Errorf("%s: %d items, the truth over the span has %d", what, len(l.Items), len(tr))
			}
			for _, it := range l.Items {
				want := tr[it.ItemID]
				switch {
				case l.ErrorBound == nil && it.Views != want:
					t.Errorf("%s: %s has %d views, the truth %d", what, it.ItemID, it.Views, want)
				case l.ErrorBound != nil && (it.Views < want || float64(it.Views-want) > l.ErrorBound.MaxOvercount):
					t.Errorf("%s: %s estimated %d views, the truth %d (bound %.1f)", what, it.ItemID, it.Views, want, l.ErrorBound.MaxOvercount)
				}
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d rounds, %d events; %d reads while the minute before the minute list's start was still open with events in it", rounds, len(all), inOpen)
	if inOpen < 3 {
		t.Fatalf("only %d reads while the minute before was open: the case is not exercised", inOpen)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
