package batch

import (
	"context"
	"time"

	"trending/model"
)

// level is one row of levels: everything the batch knows about a level, in one place, so a
// calendar period is added as a row here (and its model.Period), not as a case in several
// switches (TestNoSwitchOnPeriodNames).
type level struct {
	name string
	// period is the level's calendar period; "" for all time.
	period model.Period
	// own is true when the level has a rollup of its own, keyed by a window's start. A level
	// without one sums the rollups of sums: a week its seven days (a range on the day key),
	// all time every month.
	own  bool
	sums string
	// table and column are the ClickHouse rollup table of a level with one, and its key
	// column; date is true when the column is a Date (a day number), false for a DateTime.
	table, column string
	date          bool
	// buildIn is the period whose rollups of this level are built in one engine call (a
	// ClickHouse partition, a bbolt transaction): "day" for hours, "month" for days, "year"
	// for months; build is that call for a level summed from the one below (the hours'
	// BuildHours reads the archive instead).
	buildIn string
	build   func(ctx context.Context, e Engine, first time.Time, bs []Built) error
	// schedulePrevious makes the scheduler look back to the start of the last closed window
	// when that is before its lookback: a week is longer than the default lookback, so it
	// turns exact within a tick of closing (up to 216 hour fingerprints a tick instead of 48).
	schedulePrevious bool
}

// year is the buildIn of the month rollups: a ClickHouse partition of rollup_month.
const year = "year"

// levels are the rows of Levels, smallest first.
var levels = []level{
	{name: Hour, period: model.Hour, own: true, sums: Hour, table: "rollup_hour", column: "hour", buildIn: Day},
	{name: Day, period: model.Day, own: true, sums: Day, table: "rollup_day", column: "day", date: true, buildIn: Month,
		build: func(ctx context.Context, e Engine, first time.Time, bs []Built) error {
			return e.BuildDays(ctx, model.Month.Align(first), bs)
		}},
	{name: Week, period: model.Week, sums: Day, schedulePrevious: true},
	{name: Month, period: model.Month, own: true, sums: Month, table: "rollup_month", column: "month", date: true, buildIn: year,
		build: func(ctx context.Context, e Engine, first time.Time, bs []Built) error {
			return e.BuildMonths(ctx, first, bs)
		}},
	{name: All, sums: Month},
}

// levelNames are the names of levels, smallest first.
func levelNames() []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = l.name
	}
	return out
}

// levelOf returns the row of the level named name; a name that is none is a bug.
func levelOf(name string) level {
	l, ok := lookupLevel(name)
	if !ok {
		panic("BUG: batch level " + name)
	}
	return l
}

// lookupLevel returns the row of the level named name, if it is one (the topics' rollup,
// TopicsRollup, shares Meta with the levels but is none).
func lookupLevel(name string) (level, bool) {
	for _, l := range levels {
		if l.name == name {
			return l, true
		}
	}
	return level{}, false
}

// rollupLevels are the names of the levels with a rollup of their own, smallest first.
func rollupLevels() []string {
	var out []string
	for _, l := range levels {
		if l.own {
			out = append(out, l.name)
		}
	}
	return out
}

// fromArchive reports whether l's rollups are built from the archive's events (the hour,
// which has no shorter period), not from the rollups of a shorter level.
func (l level) fromArchive() bool {
	_, ok := l.period.Parts()
	return l.own && !ok
}

// key renders a window's start as a SQL literal of l's key column.
func (l level) key(start time.Time) string {
	if l.date {
		return "toDate('" + start.UTC().Format(time.DateOnly) + "')"
	}
	return dt(start)
}

// keySeconds is what one unit of toUInt32(column) is in seconds: a Date counts days.
func (l level) keySeconds() int64 {
	if l.date {
		return 86400
	}
	return 1
}

// span returns the level whose rollups a window of l starting at start sums, and the range
// of their starts [from, to).
func (l level) span(start time.Time) (string, time.Time, time.Time) {
	switch {
	case l.own:
		return l.name, start, start.Add(time.Second)
	case l.period != "":
		return l.sums, start, l.period.Next(start)
	}
	return l.sums, time.Unix(0, 0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
}

// sameParent reports whether a and b lie in one period named parent (a model.Period's name
// or year).
func sameParent(a, b time.Time, parent string) bool {
	if parent == year {
		return a.UTC().Year() == b.UTC().Year()
	}
	return model.Period(parent).Align(a).Equal(model.Period(parent).Align(b))
}
