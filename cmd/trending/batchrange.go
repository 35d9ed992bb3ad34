package main

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"trending/internal/stream"
	"trending/model"
)

// rangeFlags are the range every batch subcommand that takes one reads the same way:
// --windows (the kinds), --from and --to (inclusive, at the precision they are written in).
type rangeFlags struct {
	windows, from, to string
	// end is the deprecated --end of `batch run`: an exclusive end.
	end string
}

// rangeHelp says how --from and --to read, once for every subcommand.
const rangeHelp = `a UTC day (2026-11-14), an hour (2026-11-14T10), a month (2026-11), an
instant (2026-11-14T10:30:00Z), now, today, yesterday, or an offset: -2d is the whole UTC day
two days ago, -3h the hour three hours ago`

// addRangeFlags adds --windows, --from and --to; fromUsage says what an empty --from means.
func addRangeFlags(fs *pflag.FlagSet, r *rangeFlags, defWindows, windowsUsage, fromUsage string) {
	fs.StringVar(&r.windows, "windows", defWindows, windowsUsage)
	fs.StringVar(&r.from, "from", "", "start of the range: "+fromUsage+"; "+rangeHelp)
	fs.StringVar(&r.to, "to", "", "end of the range, included to the end of the day, hour or month it names (default: --from); the same forms as --from")
}

// addDeprecatedRunFlags keeps `batch run`'s old --window, --start and --end working, each
// saying what to use instead.
func addDeprecatedRunFlags(fs *pflag.FlagSet, r *rangeFlags) {
	fs.StringVar(&r.windows, "window", r.windows, "")
	addStartFlag(fs, &r.from, "", "")
	fs.StringVar(&r.end, "end", "", "")
	_ = fs.MarkDeprecated("window", "use --windows")
	_ = fs.MarkDeprecated("start", "use --from")
	_ = fs.MarkDeprecated("end", "use --to (which includes the day, hour or month it names; --end excluded its instant)")
}

// unit is the precision a time was written in: a range's --to includes the whole of it.
type unit int

const (
	instant unit = iota
	hourUnit
	dayUnit
	monthUnit
)

// parseRangeTime reads one end of a range and the precision it was written in; its start is
// aligned to that precision.
func parseRangeTime(flag, v string, now time.Time) (time.Time, unit, error) {
	now = now.UTC()
	switch v {
	case "now":
		return now, instant, nil
	case "today":
		return model.Day.Align(now), dayUnit, nil
	case "yesterday":
		return model.Day.Align(now).AddDate(0, 0, -1), dayUnit, nil
	}
	if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
		d, err := stream.ParseSpan(v[1:])
		if err != nil {
			return time.Time{}, 0, usagef("--%s %q: %v; %s", flag, v, err, rangeHelp)
		}
		if v[0] == '-' {
			d = -d
		}
		t := now.Add(d)
		switch {
		case strings.HasSuffix(v, "d"):
			return model.Day.Align(t), dayUnit, nil
		case strings.HasSuffix(v, "h"):
			return t.Truncate(time.Hour), hourUnit, nil
		}
		return t, instant, nil
	}
	for _, l := range []struct {
		layout string
		u      unit
	}{{time.RFC3339, instant}, {"2006-01-02T15:04", instant}, {"2006-01-02T15", hourUnit}, {time.DateOnly, dayUnit}, {"2006-01", monthUnit}} {
		if t, err := time.Parse(l.layout, v); err == nil {
			return t.UTC(), l.u, nil
		}
	}
	return time.Time{}, 0, usagef("--%s %q: %s", flag, v, rangeHelp)
}

// endOf is the end of the unit that starts at t.
func endOf(t time.Time, u unit) time.Time {
	switch u {
	case hourUnit:
		return t.Add(time.Hour)
	case dayUnit:
		return t.AddDate(0, 0, 1)
	case monthUnit:
		return t.AddDate(0, 1, 0)
	}
	return t
}

// span is the range [lo, hi) the flags name at now: from --from's start to the end of what
// --to names (--to defaults to --from, so --from 2026-11-14 is that whole day and --from
// 2026-11-14T10 that hour; --to now ends now). defFrom is --from when it is empty ("" makes
// it required).
func (r rangeFlags) span(now time.Time, defFrom string) (lo, hi time.Time, err error) {
	from := r.from
	if from == "" {
		from = defFrom
	}
	if from == "" {
		return lo, hi, usagef("--from is required: %s", rangeHelp)
	}
	lo, lu, err := parseRangeTime("from", from, now)
	if err != nil {
		return lo, hi, err
	}
	switch {
	case r.end != "" && r.to != "":
		return lo, hi, usagef("--end and --to name the same end: give --to")
	case r.end != "":
		if hi, _, err = parseRangeTime("end", r.end, now); err != nil {
			return lo, hi, err
		}
	case r.to != "":
		t, u, err := parseRangeTime("to", r.to, now)
		if err != nil {
			return lo, hi, err
		}
		hi = endOf(t, u)
	default:
		hi = endOf(lo, lu)
	}
	if lu == instant && r.to == "" && r.end == "" {
		// An instant alone names the window that holds it.
		hi = lo.Add(time.Nanosecond)
	}
	if !hi.After(lo) {
		return lo, hi, usagef("--to %s ends at %s, not after --from %s (%s)", r.to+r.end, hi.Format(time.RFC3339), from, lo.Format(time.RFC3339))
	}
	return lo, hi, nil
}
