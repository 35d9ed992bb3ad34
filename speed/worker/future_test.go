package worker

import (
	"testing"
	"time"

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

func TestMaxFutureDefault(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, DefaultMaxFuture}, {-1, -1}, {time.Hour, time.Hour},
	} {
		c := Config{MaxFuture: tc.in}
		c.defaults()
		if c.MaxFuture != tc.want {
			t.Errorf("MaxFuture %s: defaults gave %s, want %s", tc.in, c.MaxFuture, tc.want)
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
