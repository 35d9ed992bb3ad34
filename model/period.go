package model

import (
	"slices"
	"strings"
	"time"
)

// Period is a calendar period: a UTC hour, day, ISO week (from Monday 00:00 UTC) or month.
// Its name is the string a calendar list is stored and served under (Key.Window), the
// batch's level and a window set's span; every rule about a period (where it starts, where
// the next one starts, how it is described) is a method here, so no package switches on the
// names (TestNoSwitchOnPeriodNames).
type Period string

// The calendar periods. A new one is a constant, an entry in Periods and a case in each
// method below.
const (
	Hour  Period = "hour"
	Day   Period = "day"
	Week  Period = "week" // ISO 8601: Monday 00:00 UTC to the next Monday
	Month Period = "month"
)

// Periods are the calendar periods, shortest first.
var Periods = []Period{Hour, Day, Week, Month}

// ParsePeriod returns the period named s ("hour", "day", "week", "month").
func ParsePeriod(s string) (Period, bool) {
	p := Period(s)
	return p, p.Valid()
}

// PeriodNames is the periods' names, shortest first, for a message: "hour, day, week, month".
func PeriodNames() string { return strings.Join(PeriodStrings(Periods), ", ") }

// PeriodStrings returns the names of ps.
func PeriodStrings(ps []Period) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = string(p)
	}
	return names
}

// Valid reports whether p is one of Periods.
func (p Period) Valid() bool { return slices.Contains(Periods, p) }

// String is p's name.
func (p Period) String() string { return string(p) }

// Index is p's position in Periods (shortest first), -1 for no period.
func (p Period) Index() int { return slices.Index(Periods, p) }

// Align returns the start of the period of p holding t.
func (p Period) Align(t time.Time) time.Time {
	t = t.UTC()
	switch p {
	case Hour:
		return t.Truncate(time.Hour)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case Week:
		// ISO 8601: the week starts on Monday (time.Weekday counts from Sunday = 0).
		back := (int(t.Weekday()) + 6) % 7
		return time.Date(t.Year(), t.Month(), t.Day()-back, 0, 0, 0, 0, time.UTC)
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	panic("BUG: Align of unknown calendar period " + string(p))
}

// Aligned reports whether t is the UTC start of a period of p.
func (p Period) Aligned(t time.Time) bool {
	return !t.IsZero() && p.Align(t).Equal(t)
}

// Next returns the start of the period after the one starting at start.
func (p Period) Next(start time.Time) time.Time { return p.Back(start, -1) }

// Back returns the start of the period n periods before the one starting at start (n < 0:
// after it).
func (p Period) Back(start time.Time, n int) time.Time {
	switch p {
	case Hour:
		return start.Add(-time.Duration(n) * time.Hour)
	case Day:
		return start.AddDate(0, 0, -n)
	case Week:
		return start.AddDate(0, 0, -7*n)
	case Month:
		return start.AddDate(0, -n, 0)
	}
	panic("BUG: Back of unknown calendar period " + string(p))
}

// Count returns how many periods start in [from, to), both aligned, without iterating (a
// range may span centuries before it is refused).
func (p Period) Count(from, to time.Time) int {
	if p == Month {
		return (to.Year()-from.Year())*12 + int(to.Month()) - int(from.Month())
	}
	return int(to.Sub(from) / p.Nominal())
}

// Nominal is p's length: exact for the hour, day and week, 30 days for the month (the
// requirements' month; a calendar month is 28 to 31 days).
func (p Period) Nominal() time.Duration {
	switch p {
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	case Week:
		return 7 * 24 * time.Hour
	case Month:
		return 30 * 24 * time.Hour
	}
	panic("BUG: Nominal of unknown calendar period " + string(p))
}

// Starts says in words where the periods start, for a message: "midnight on Monday (ISO
// weeks)".
func (p Period) Starts() string {
	switch p {
	case Hour:
		return "the top of each hour"
	case Day:
		return "midnight"
	case Week:
		return "midnight on Monday (ISO weeks)"
	case Month:
		return "midnight on the 1st"
	}
	panic("BUG: Starts of unknown calendar period " + string(p))
}

// Parts returns the longest shorter period whose periods tile p's exactly: the hours of a
// day, the days of a week or a month (a month is no whole number of weeks); an hour, or no
// period, has none (false).
func (p Period) Parts() (Period, bool) {
	switch p {
	case Day:
		return Hour, true
	case Week, Month:
		return Day, true
	}
	return "", false
}

// Label is the start of a period of p in its shortest form, for logs and messages:
// "2026-11-14T10Z" (an hour), "2026-11-14" (a day or week), "2026-11" (a month).
func (p Period) Label(start time.Time) string {
	start = start.UTC()
	switch p {
	case Hour:
		return start.Format("2006-01-02T15Z")
	case Day, Week:
		return start.Format(time.DateOnly)
	case Month:
		return start.Format("2006-01")
	}
	panic("BUG: Label of unknown calendar period " + string(p))
}

// StartMinute is Align in minutes since the Unix epoch: the first minute of the period
// holding minute m (the speed layer's clock, without a time.Time where it can).
func (p Period) StartMinute(m int64) int64 {
	switch p {
	case Hour:
		return floorTo(m, 60)
	case Day:
		return floorTo(m, 1440)
	case Week:
		// Minute 0 (1970-01-01) is a Thursday: the Monday before it is 3 days (4,320
		// minutes) earlier, and every Monday a whole number of weeks from it.
		return floorTo(m+3*1440, 7*1440) - 3*1440
	}
	return p.Align(time.Unix(m*60, 0)).Unix() / 60
}

// EndMinute is Next in minutes: the first minute after the period starting at minute start.
func (p Period) EndMinute(start int64) int64 {
	switch p {
	case Hour, Day, Week:
		return start + int64(p.Nominal()/time.Minute)
	}
	return p.Next(time.Unix(start*60, 0).UTC()).Unix() / 60
}

// floorTo rounds a down to a multiple of b > 0 (toward minus infinity).
func floorTo(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q * b
}
