package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model"
	"trending/model/event"
	"trending/serving/api"
)

// TestUpSeed004Spans runs `trending up --window-preset seed-004` over rounds of events near a
// moving clock, with regions, late events (up to 90 s, past the 30 s lateness) and early ones,
// and after each round reads every live list (minute, hour, day, 7d; of all items and of each
// region) once the pipeline has counted the round: each item's views are the truth over the
// list's stated span, [window_start, window_end] by event time (exact lists exactly, sketch
// lists within their bound), and the current calendar period's list (the week) is the truth
// of its period up to as_of. The rounds end at random seconds of their minute, so that many
// reads come while the minute before is still open (the lateness has not passed): the minute
// list must not count that minute, since its window_start is the current minute.
// TestUpDefaultSpans does the same with the default windows (hour, day, month, all; calendar
// hour, day and month).
func TestUpSeed004Spans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upSpans(t, k.Addr, seed004Spans)
}

func TestUpSeed004SpansKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	broker := itest.Kafka(t)
	s3 := itest.S3(t)
	upSpans(t, broker, seed004Spans, "--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey,
		"--s3-secret-key", s3.SecretKey, "--s3-bucket", itest.Name(t, "spans"))
}

func TestUpDefaultSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	upSpans(t, k.Addr, defaultSpans)
}

// spansPreset is a window preset and the lists TestUpSeed004Spans reads under it: the live
// sliding and all-time windows, and the calendar spans.
type spansPreset struct {
	preset   string
	live     []string
	calendar []string
	minute   bool // a minute window: the reads while the minute before is open must occur
}

var (
	seed004Spans = spansPreset{"seed-004", []string{"minute", "hour", "day", "7d"}, []string{"week"}, true}
	defaultSpans = spansPreset{"default", []string{"hour", "day", "month", "all"}, []string{"hour", "day", "month"}, false}
)

func upSpans(t *testing.T, broker string, ps spansPreset, extra ...string) {
	addr := freeAddr(t)
	data := filepath.Join(t.TempDir(), "data")
	topic := itest.Name(t, "views")
	ctx := context.Background()
	up := startInProcess(t, append([]string{"up", "--window-preset", ps.preset, "--sketch-width", "4096",
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
		ms     int64
		item   string
		region string
		n      uint64
	}
	var all []sent
	// truth is every item's views in [from, to] (of region, or of all items when "").
	truth := func(region string, from, to time.Time) map[string]uint64 {
		out := map[string]uint64{}
		for _, s := range all {
			if s.ms >= from.UnixMilli() && s.ms <= to.UnixMilli() && (region == "" || s.region == region) {
				out[s.item] += s.n
			}
		}
		return out
	}
	regions := []string{"", "eu", "us", "apac"}
	query := func(win, region string) string {
		q := "/v1/trending?limit=100&window=" + win
		if region != "" {
			q += "&region=" + region
		}
		return q
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
	inOpen := 0        // reads while the minute before the list's start was open and had events
	calendarReads := 0 // calendar lists read
	for round := range rounds {
		clock = clock.Add(time.Duration(2000+r.IntN(43000)) * time.Millisecond)
		end := clock
		var msgs []kafka.Message
		emit := func(item string, ts time.Time, n uint32) {
			ev := event.Event{ItemID: item, Count: n, TS: ts.Truncate(time.Millisecond), Region: regions[1+r.IntN(3)]}
			msgs = append(msgs, kafka.Message{Key: []byte(item), Value: ev.AppendJSON(nil)})
			all = append(all, sent{ev.TS.UnixMilli(), item, ev.Region, uint64(n)})
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
		// stale) and unchanged for 1.5 s: every partition has counted all it was sent. The
		// current calendar periods' lists too where every partition has opened them (a
		// partition whose watermark is still in the period before lists that one until it
		// closes: the list is partial).
		var lists map[string]api.ListResponse
		var stable time.Time
		prev := ""
		deadline := time.Now().Add(60 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the lists never settled as of %s; last %s", round, end.Format(time.RFC3339Nano), prev)
			}
			time.Sleep(150 * time.Millisecond)
			ok, cur := true, ""
			lists = map[string]api.ListResponse{}
			for _, span := range ps.calendar {
				for _, region := range regions {
					q := query(span, region) + "&start=" + model.Period(span).Align(end).Format(time.RFC3339)
					c, b := get(q)
					var l api.ListResponse
					if c != 200 || json.Unmarshal(b, &l) != nil || l.Incomplete || l.Status != model.StatusLive {
						continue
					}
					if !l.WindowStart.IsZero() || l.AsOf.After(end) {
						t.Fatalf("round %d %s: window_start %s, as of %s (the round's end %s)", round, q, l.WindowStart, l.AsOf, end)
					}
					if !l.AsOf.Equal(end) {
						ok = false
						cur += fmt.Sprintf("%s as of %s; ", q, l.AsOf)
						continue
					}
					l.WindowStart, l.WindowEnd = l.Start, l.AsOf
					lists[q] = l
					items, _ := json.Marshal(l.Items)
					cur += q + string(items)
				}
			}
			for _, win := range ps.live {
				for _, region := range regions {
					q := query(win, region)
					c, b := get(q)
					var l api.ListResponse
					if c != 200 || json.Unmarshal(b, &l) != nil || !l.AsOf.Equal(end) || l.Incomplete {
						ok = false
						cur += fmt.Sprintf("%s: %d %.300s; ", q, c, b)
						continue
					}
					lists[q] = l
					items, _ := json.Marshal(l.Items)
					cur += q + string(items)
				}
			}
			if !ok || cur != prev {
				prev, stable = cur, time.Now()
				continue
			}
			if time.Since(stable) >= 1500*time.Millisecond {
				break
			}
		}
		for q := range lists {
			if strings.Contains(q, "&start=") {
				calendarReads++
			}
		}
		if ps.minute {
			minute := lists[query("minute", "")]
			if want := end.Truncate(time.Minute); !minute.WindowStart.Equal(want) || !minute.WindowEnd.Equal(end) {
				t.Errorf("round %d: the minute list spans [%s, %s], want [%s, %s]", round, minute.WindowStart.Format(time.RFC3339Nano),
					minute.WindowEnd.Format(time.RFC3339Nano), want.Format(time.RFC3339), end.Format(time.RFC3339Nano))
			}
			if end.Sub(end.Truncate(time.Minute)) < 30*time.Second && len(truth("", end.Truncate(time.Minute).Add(-time.Minute), end.Truncate(time.Minute).Add(-time.Millisecond))) > 0 {
				inOpen++
			}
		}
		for q, l := range lists {
			region := ""
			if _, r, ok := strings.Cut(q, "&region="); ok {
				region, _, _ = strings.Cut(r, "&")
			}
			tr := truth(region, l.WindowStart, l.WindowEnd)
			if l.WindowStart.IsZero() || !l.WindowEnd.Equal(l.AsOf) {
				t.Fatalf("round %d %s: span [%s, %s] as of %s", round, q, l.WindowStart, l.WindowEnd, l.AsOf)
			}
			what := fmt.Sprintf("round %d (as of %s) %s [%s, %s]", round, end.Format("15:04:05.000"), q, l.WindowStart.Format(time.DateTime), l.WindowEnd.Format("15:04:05.000"))
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
	t.Logf("%d rounds, %d events; %d reads while the minute before the minute list's start was still open with events in it; %d calendar lists read",
		rounds, len(all), inOpen, calendarReads)
	if calendarReads < rounds {
		t.Fatalf("only %d calendar lists read in %d rounds", calendarReads, rounds)
	}
	if ps.minute && inOpen < 3 {
		t.Fatalf("only %d reads while the minute before was open: the case is not exercised", inOpen)
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
