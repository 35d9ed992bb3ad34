package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/model/event"
	"trending/speed/window"
)

func TestAheadBy(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		ts, msgTime time.Time
		want        time.Duration
	}{
		{"no kafka timestamp: the wall clock", now.Add(time.Hour), time.Time{}, time.Hour},
		{"kafka timestamp earlier: a replay decides as the first run", now.Add(time.Hour), now.Add(-2 * time.Hour), 3 * time.Hour},
		{"kafka timestamp ahead of the wall clock: the wall clock", now.Add(time.Hour), now.Add(50 * time.Minute), time.Hour},
		{"in the past", now.Add(-time.Minute), now, -time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := aheadBy(tc.ts, tc.msgTime, now); got != tc.want {
				t.Fatalf("aheadBy = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestMaxFuture: DefaultConfig's guard is DefaultMaxFuture and sends an event dated a year
// ahead to the DLQ; MaxFuture 0 turns the guard off (the event is counted), not the default.
func TestMaxFuture(t *testing.T) {
	if got := DefaultConfig().MaxFuture; got != DefaultMaxFuture {
		t.Fatalf("DefaultConfig().MaxFuture = %s, want %s", got, DefaultMaxFuture)
	}
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ev := event.Event{ItemID: "early", Count: 1, TS: now.AddDate(1, 0, 0).Truncate(time.Millisecond)}
	msg := kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil), Time: now}
	for _, tc := range []struct {
		maxFuture time.Duration
		dlq       int
	}{{DefaultMaxFuture, 1}, {0, 0}} {
		cfg := DefaultConfig()
		cfg.MaxFuture, cfg.Log = tc.maxFuture, slog.New(slog.DiscardHandler)
		st, err := window.New(cfg.Window)
		if err != nil {
			t.Fatal(err)
		}
		p := &partition{w: &Worker{cfg: cfg, m: m}, state: st}
		if err := p.handle(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
		if len(p.dlq) != tc.dlq {
			t.Errorf("MaxFuture %s: %d messages for the DLQ, want %d", tc.maxFuture, len(p.dlq), tc.dlq)
		}
	}
}

// TestServedKeys: the worker publishes every configured window under the serving layer's
// key; with the default windows that is every live list and every calendar span, and the
// all-time window is the live list "all".
func TestServedKeys(t *testing.T) {
	want := map[string]servingName{
		"hour": {"hour", true}, "day": {"day", true}, "month": {"month", true}, "all": {"all", true},
		"calendar-hour": {"hour", false}, "calendar-day": {"day", false}, "calendar-month": {"month", false},
	}
	ws := window.DefaultWindows()
	if len(ws) != len(want) {
		t.Fatalf("%d default windows, want %d", len(ws), len(want))
	}
	for _, wc := range ws {
		if got := served(wc); got != want[wc.Name] {
			t.Errorf("%s: served as %+v, want %+v", wc.Name, got, want[wc.Name])
		}
	}
}

// TestFutureMatchesAheadBy: the guard that reads the clock only when it must decides every
// event as aheadBy with a fresh clock reading would, over live traffic, replays, events
// ahead of the clock, producers whose clock runs ahead and missing Kafka timestamps, while
// reading the clock far less often than once per event.
func TestFutureMatchesAheadBy(t *testing.T) {
	for _, mf := range []time.Duration{time.Millisecond, time.Second, 10 * time.Minute} {
		t.Run(mf.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(mf), 3))
			clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			reads := 0
			now := func() time.Time { reads++; return clock }
			var p partition
			const n = 100_000
			for i := range n {
				clock = clock.Add(time.Duration(rng.IntN(int(time.Second / 10))))
				msgTime := clock.Add(-time.Duration(rng.IntN(int(time.Second)))).Truncate(time.Millisecond)
				ts := msgTime.Add(-time.Duration(rng.IntN(int(time.Second))))
				switch x := rng.IntN(100); {
				case x < 5: // a replay: logged a day ago
					msgTime = msgTime.Add(-24 * time.Hour)
					ts = msgTime.Add(time.Duration(rng.Int64N(int64(2*mf))) - mf/2)
				case x < 10: // dated around the limit
					ts = clock.Add(mf + time.Duration(rng.Int64N(int64(2*time.Second))) - time.Second)
				case x < 12: // the producer's clock, and so the Kafka timestamp, runs ahead
					msgTime = clock.Add(time.Duration(rng.Int64N(int64(2 * mf))))
					ts = msgTime.Add(time.Duration(rng.Int64N(int64(time.Second))) - time.Second/2)
				case x < 14:
					msgTime = time.Time{}
				}
				ts = ts.Truncate(time.Millisecond)
				want := aheadBy(ts, msgTime, clock)
				got, over := p.future(ts, msgTime, mf, now)
				if over != (want > mf) || (over && got != want) {
					t.Fatalf("event %d ts %s msg %s clock %s: future = %s, %v; aheadBy = %s", i, ts, msgTime, clock, got, over, want)
				}
			}
			if mf >= time.Second && reads > n/5 {
				t.Fatalf("%d clock reads for %d events", reads, n)
			}
		})
	}
}

func TestIdleClock(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := idleClock{next: 10, at: t0}
	for _, tc := range []struct {
		name string
		next int64
		at   time.Duration // tick time after t0
		d    time.Duration
		want bool
	}{
		{"off", 10, time.Hour, 0, false},
		{"nothing new, not long enough", 10, 30 * time.Second, time.Minute, false},
		{"nothing new for over d", 10, 61 * time.Second, time.Minute, true},
		{"a message since the last tick", 11, 62 * time.Second, time.Minute, false},
		{"counted from the tick that saw it", 11, 62*time.Second + time.Minute, time.Minute, false},
		{"then idle", 11, 63*time.Second + time.Minute, time.Minute, true},
	} {
		if got := c.idle(tc.next, t0.Add(tc.at), tc.d); got != tc.want {
			t.Errorf("%s: idle = %v, want %v", tc.name, got, tc.want)
		}
	}
}
