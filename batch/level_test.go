package batch

import (
	"slices"
	"testing"
	"time"

	"trending/model"
)

// TestLevelsTable: every calendar period has a row of levels, in model.Periods' order, then
// all time; a row without a rollup of its own sums one with, and a calendar one sums its
// period's parts (what Window.Children walks); a row with one names its table, its key
// column and how it is built.
func TestLevelsTable(t *testing.T) {
	var periods []model.Period
	for _, l := range levels {
		if l.period != "" {
			periods = append(periods, l.period)
			if l.name != string(l.period) {
				t.Errorf("level %q: period %q: a calendar level is named as its period", l.name, l.period)
			}
		}
	}
	if !slices.Equal(periods, model.Periods) {
		t.Errorf("the levels' periods are %v, want model.Periods %v", periods, model.Periods)
	}
	if last := levels[len(levels)-1]; last.name != All || last.period != "" {
		t.Errorf("the last level is %q, want all time", last.name)
	}
	for _, l := range levels {
		s := levelOf(l.sums)
		switch {
		case l.own:
			if l.sums != l.name || l.table == "" || l.column == "" || l.buildIn == "" {
				t.Errorf("level %q has a rollup of its own: it sums itself and names its table, key column and buildIn: %+v", l.name, l)
			}
			if !l.fromArchive() && l.build == nil {
				t.Errorf("level %q is summed from the level below: it needs build", l.name)
			}
		case !s.own:
			t.Errorf("level %q sums %q, which has no rollup of its own", l.name, l.sums)
		case l.period != "":
			if p, ok := l.period.Parts(); !ok || string(p) != l.sums {
				t.Errorf("level %q sums %q, but its period's parts are %q", l.name, l.sums, p)
			}
		}
	}
	if got := rollupLevels(); !slices.Equal(got, []string{Hour, Day, Month}) {
		t.Errorf("rollupLevels() = %v, want hour, day, month", got)
	}
}

// TestRollupWhere: the filter of each level's rows, the week's a range over its days and all
// time every month.
func TestRollupWhere(t *testing.T) {
	e := &ClickHouse{}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC) // a Monday
	for _, tc := range []struct{ level, table, where string }{
		{Hour, "rollup_hour", "hour = toDateTime(1772409600)"},
		{Day, "rollup_day", "day = toDate('2026-03-02')"},
		{Week, "rollup_day", "day >= toDate('2026-03-02') AND day < toDate('2026-03-09')"},
		{Month, "rollup_month", "month = toDate('2026-03-02')"},
		{All, "rollup_month", "1"},
	} {
		table, where := e.rollupWhere(tc.level, start)
		if table != e.t(tc.table) || where != tc.where {
			t.Errorf("rollupWhere(%s) = %q, %q; want %q, %q", tc.level, table, where, e.t(tc.table), tc.where)
		}
	}
}

// TestSpan: the rollups and starts a window of each level sums in the Go-native engine.
func TestSpan(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		level, sums string
		from, to    time.Time
	}{
		{Hour, Hour, start, start.Add(time.Second)},
		{Day, Day, start, start.Add(time.Second)},
		{Week, Day, start, start.AddDate(0, 0, 7)},
		{Month, Month, start, start.Add(time.Second)},
		{All, Month, time.Unix(0, 0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		lv, from, to := span(tc.level, start)
		if lv != tc.sums || !from.Equal(tc.from) || !to.Equal(tc.to) {
			t.Errorf("span(%s) = %s [%s, %s), want %s [%s, %s)", tc.level, lv, from, to, tc.sums, tc.from, tc.to)
		}
	}
}
