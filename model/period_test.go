package model

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestPeriodMinutesMatchTimes: the minute arithmetic the speed layer uses (StartMinute,
// EndMinute) is Align and Next, which the merger, the batch and the API use: an ISO week
// starting Monday 00:00 UTC.
func TestPeriodMinutesMatchTimes(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	minuteTime := func(m int64) time.Time { return time.Unix(m*60, 0).UTC() }
	for _, p := range Periods {
		for range 2000 {
			m := r.Int64N(200*365*1440) - 50*365*1440 // 1920 to 2120
			start := p.StartMinute(m)
			want := p.Align(minuteTime(m))
			if !minuteTime(start).Equal(want) {
				t.Fatalf("%s of %s: start %s, want %s", p, minuteTime(m), minuteTime(start), want)
			}
			if end := minuteTime(p.EndMinute(start)); !end.Equal(p.Next(want)) {
				t.Fatalf("%s of %s: end %s, want %s", p, minuteTime(m), end, p.Next(want))
			}
			if !p.Aligned(want) || p.Aligned(want.Add(time.Minute)) {
				t.Fatalf("%s: Aligned(%s) wrong", p, want)
			}
			if back := p.Back(p.Next(p.Next(want)), 2); !back.Equal(want) {
				t.Fatalf("%s: Back(Next(Next(%s)), 2) = %s", p, want, back)
			}
			n := r.IntN(40)
			if got := p.Count(want, p.Back(want, -n)); got != n {
				t.Fatalf("%s: Count over %d periods from %s = %d", p, n, want, got)
			}
		}
	}
	if got := minuteTime(Week.StartMinute(time.Date(2026, 12, 6, 23, 59, 0, 0, time.UTC).Unix() / 60)); got.Weekday() != time.Monday || got.Day() != 30 {
		t.Errorf("week of Sunday 2026-12-06 starts %s, want Monday 2026-11-30", got)
	}
}

// TestPeriodNames: a period's name is its serialized form (store keys, JSON, ClickHouse
// levels), read back by ParsePeriod; nothing else parses.
func TestPeriodNames(t *testing.T) {
	want := []string{"hour", "day", "week", "month"}
	if len(Periods) != len(want) {
		t.Fatalf("Periods %v, want %v", Periods, want)
	}
	for i, p := range Periods {
		if p.String() != want[i] || p.Index() != i || p.Starts() == "" || p.Nominal() <= 0 {
			t.Errorf("period %d: %q index %d", i, p, p.Index())
		}
		if q, ok := ParsePeriod(want[i]); !ok || q != p {
			t.Errorf("ParsePeriod(%q) = %q, %v", want[i], q, ok)
		}
		if i > 0 && Periods[i-1].Nominal() >= p.Nominal() {
			t.Errorf("Periods not shortest first: %v", Periods)
		}
	}
	for _, s := range []string{"", "Hour", "all", "minute", "year", "calendar-hour"} {
		if _, ok := ParsePeriod(s); ok {
			t.Errorf("ParsePeriod(%q) accepted", s)
		}
	}
	if PeriodNames() != "hour, day, week, month" {
		t.Errorf("PeriodNames() = %q", PeriodNames())
	}
}

// TestPeriodPartsAndLabels: each period's parts tile it exactly, and labels are the short forms
// the batch logs.
func TestPeriodPartsAndLabels(t *testing.T) {
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) // a Monday
	for _, p := range Periods {
		q, ok := p.Parts()
		if p == Hour {
			if ok {
				t.Errorf("hour has parts %s", q)
			}
			continue
		}
		s := p.Align(start)
		n := 0
		for x := s; x.Before(p.Next(s)); x = q.Next(x) {
			n++
		}
		if !q.Back(p.Next(s), n).Equal(s) || q.Index() >= p.Index() {
			t.Errorf("%s: parts %s do not tile it (%d from %s)", p, q, n, s)
		}
	}
	if _, ok := Period("all").Parts(); ok {
		t.Error("all has parts")
	}
	for p, want := range map[Period]string{Hour: "2026-11-30T00Z", Day: "2026-11-30", Week: "2026-11-30", Month: "2026-11"} {
		if got := p.Label(start); got != want {
			t.Errorf("%s.Label = %q, want %q", p, got, want)
		}
	}
}
