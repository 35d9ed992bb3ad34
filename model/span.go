package model

import "time"

// Spans are the calendar spans a calendar window can have, shortest first: UTC hours, days,
// ISO weeks (starting Monday 00:00 UTC) and months. A calendar list's window is its span.
var Spans = []string{"hour", "day", "week", "month"}

// Aligned reports whether t is the UTC start of a calendar window of the given kind.
func Aligned(window string, t time.Time) bool {
	return !t.IsZero() && Align(window, t).Equal(t)
}

// Align returns the start of the calendar window holding t.
func Align(window string, t time.Time) time.Time {
	t = t.UTC()
	switch window {
	case "hour":
		return t.Truncate(time.Hour)
	case "day":
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case "week":
		// ISO 8601: the week starts on Monday (time.Weekday counts from Sunday = 0).
		back := (int(t.Weekday()) + 6) % 7
		return time.Date(t.Year(), t.Month(), t.Day()-back, 0, 0, 0, 0, time.UTC)
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	panic("BUG: Align of unknown calendar window " + window)
}

// Next returns the start of the calendar window after the one starting at start.
func Next(window string, start time.Time) time.Time {
	switch window {
	case "hour":
		return start.Add(time.Hour)
	case "day":
		return start.AddDate(0, 0, 1)
	case "week":
		return start.AddDate(0, 0, 7)
	case "month":
		return start.AddDate(0, 1, 0)
	}
	panic("BUG: Next of unknown calendar window " + window)
}

// Back returns the start of the calendar window n windows before start.
func Back(window string, start time.Time, n int) time.Time {
	switch window {
	case "hour":
		return start.Add(-time.Duration(n) * time.Hour)
	case "day":
		return start.AddDate(0, 0, -n)
	case "week":
		return start.AddDate(0, 0, -7*n)
	case "month":
		return start.AddDate(0, -n, 0)
	}
	panic("BUG: Back of unknown calendar window " + window)
}
