package stream

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"trending/model/event"
)

// Viral is an item that takes a share of all views for a while: the "clearly
// top video" of seed 000 that must never go missing, and the skew that loads
// one partition (seed 004).
type Viral struct {
	// Item is the item id. It may be a catalog item (V42, which then gets
	// its Zipf share plus the viral share) or a new one.
	Item string
	// At is when the item starts rising, as an offset from the stream's
	// Start.
	At time.Duration
	// Share is the fraction of all views the item gets at its peak, in
	// (0, 1].
	Share float64
	// For is how long it lasts, from At; positive.
	For time.Duration
	// Ramp is how long the share takes to rise linearly from 0 to Share,
	// from At; 0 (the default) is a step. At most For.
	Ramp time.Duration
}

// ShareAt returns the item's share of views at offset t from the stream's
// start.
func (v Viral) ShareAt(t time.Duration) float64 {
	if t < v.At || t >= v.At+v.For {
		return 0
	}
	if v.Ramp > 0 && t < v.At+v.Ramp {
		return v.Share * float64(t-v.At) / float64(v.Ramp)
	}
	return v.Share
}

// String returns the schedule syntax ParseViral reads.
func (v Viral) String() string {
	s := fmt.Sprintf("%s@+%s:%s%%:%s", v.Item, FormatSpan(v.At), strconv.FormatFloat(v.Share*100, 'g', -1, 64), FormatSpan(v.For))
	if v.Ramp > 0 {
		s += ":" + FormatSpan(v.Ramp)
	}
	return s
}

// ParseViral reads a viral schedule: one or more comma-separated entries
//
//	ITEM@+AT:SHARE:FOR[:RAMP]
//
// where ITEM is the item id, AT the offset from the stream's start when it
// begins (the + is optional), SHARE its peak share of all views as a
// percentage ("30%") or a fraction ("0.3"), FOR how long it lasts and RAMP
// (optional) how long it takes to rise linearly to SHARE. Durations are Go
// durations with an optional leading whole number of days: 90s, 2m, 1h30m,
// 3d, 1d12h. Example: "V42@+2m:30%:10m,Vnew@+1h:5%:2h:30m".
func ParseViral(s string) ([]Viral, error) {
	var out []Viral
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := parseOneViral(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func parseOneViral(s string) (Viral, error) {
	bad := func(format string, args ...any) (Viral, error) {
		return Viral{}, fmt.Errorf("%w: viral %q: %s (syntax ITEM@+AT:SHARE:FOR[:RAMP], e.g. V42@+2m:30%%:10m)", ErrConfig, s, fmt.Sprintf(format, args...))
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return bad("no '@' after the item")
	}
	v := Viral{Item: s[:at]}
	fields := strings.Split(s[at+1:], ":")
	if len(fields) < 3 || len(fields) > 4 {
		return bad("want 3 or 4 ':'-separated fields after '@', got %d", len(fields))
	}
	var err error
	if v.At, err = ParseSpan(strings.TrimPrefix(fields[0], "+")); err != nil {
		return bad("start: %v", err)
	}
	if v.Share, err = parseShare(fields[1]); err != nil {
		return bad("share: %v", err)
	}
	if v.For, err = ParseSpan(fields[2]); err != nil {
		return bad("duration: %v", err)
	}
	if len(fields) == 4 {
		if v.Ramp, err = ParseSpan(fields[3]); err != nil {
			return bad("ramp: %v", err)
		}
	}
	if err := v.validate(); err != nil {
		return bad("%v", err)
	}
	return v, nil
}

func (v Viral) validate() error {
	ev := event.Event{ItemID: v.Item, Count: 1, TS: DefaultStart}
	if err := ev.Validate(); err != nil {
		return fmt.Errorf("item: %v", err)
	}
	switch {
	case v.At < 0:
		return fmt.Errorf("start %s is before the stream's start", v.At)
	case !(v.Share > 0 && v.Share <= 1):
		return fmt.Errorf("share %g is not in (0%%, 100%%]", v.Share*100)
	case v.For <= 0:
		return fmt.Errorf("duration %s is not positive", v.For)
	case v.Ramp < 0 || v.Ramp > v.For:
		return fmt.Errorf("ramp %s is not within [0, duration %s]", v.Ramp, v.For)
	}
	return nil
}

func parseShare(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a number such as 30%% or 0.3", s)
	}
	if pct {
		f /= 100
	}
	return f, nil
}

// ParseSpan reads a Go duration with an optional leading whole number of
// days: "90s", "3d", "1d12h", "35d".
func ParseSpan(s string) (time.Duration, error) {
	var days int64
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("%q: days must be a whole number from 0 to 36500, as in 3d or 1d12h", s)
		}
		days, s = n, s[i+1:]
		if s == "" {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90s, 10m, 2h or 3d", s)
	}
	return time.Duration(days)*24*time.Hour + d, nil
}

// FormatSpan prints a duration the way ParseSpan reads it, with whole days
// as "Nd" and no zero units: 35d, 1d6h, 2m30s.
func FormatSpan(d time.Duration) string {
	const day = 24 * time.Hour
	short := func(d time.Duration) string {
		s := d.String()
		if strings.HasSuffix(s, "m0s") {
			s = s[:len(s)-2]
		}
		if strings.HasSuffix(s, "h0m") {
			s = s[:len(s)-2]
		}
		return s
	}
	if d >= day {
		days := d / day
		if rest := d % day; rest != 0 {
			return fmt.Sprintf("%dd%s", days, short(rest))
		}
		return fmt.Sprintf("%dd", days)
	}
	return short(d)
}

// checkOverlap reports a moment when the virals' shares add up to more than
// all views. Shares only rise until each peak, so checking every start with
// full shares is enough (and conservative during ramps).
func checkOverlap(vs []Viral) error {
	for _, a := range vs {
		sum := 0.0
		var names []string
		for _, b := range vs {
			if a.At >= b.At && a.At < b.At+b.For {
				sum += b.Share
				names = append(names, b.Item)
			}
		}
		if sum > 1+1e-9 {
			return fmt.Errorf("%w: viral items %s together take %g%% of views at +%s: keep overlapping shares at or under 100%%",
				ErrConfig, strings.Join(names, ", "), sum*100, FormatSpan(a.At))
		}
	}
	return nil
}
