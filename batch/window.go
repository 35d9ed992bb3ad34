package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"trending/model"
	"trending/model/windowset"
)

// Levels of rollup and of calendar window, smallest first. "all" is all time: the sum over
// every month rolled up, published as the live list "all". A week (ISO, from Monday) has no
// rollup of its own: its list is summed from its seven day rollups when it is published,
// so a closed week is exact as soon as its days are.
const (
	Hour  = string(model.Hour)
	Day   = string(model.Day)
	Week  = string(model.Week)
	Month = string(model.Month)
	All   = "all"
)

// Levels lists the window kinds the batch computes, smallest first: the names of levels'
// rows (level.go). Which of them a run
// publishes is the configured window set's (Config.Windows): the calendar spans it serves,
// and all time when it serves "all".
var Levels = levelNames()

// Window is one calendar window (or all time, Start zero).
type Window struct {
	Level string
	Start time.Time
}

// End returns the exclusive end of the window; zero for all time.
func (w Window) End() time.Time {
	if w.Level == All {
		return time.Time{}
	}
	return model.Period(w.Level).Next(w.Start)
}

// Key is the serving store key the window's list is written under.
func (w Window) Key() model.Key {
	if w.Level == All {
		return model.Key{Window: All}
	}
	// A topics list's level is its key's name ("topics/eu/surge").
	k, ok := model.ParseName(w.Level)
	if !ok {
		k = model.Key{Window: w.Level}
	}
	k.Start = w.Start
	return k
}

func (w Window) String() string {
	if w.Level == All {
		return All
	}
	if p, ok := model.ParsePeriod(w.Level); ok {
		return w.Level + " " + p.Label(w.Start)
	}
	// topics: the hour rollup "topics_hour" or a list "topics/eu/surge"
	return w.Level + " " + model.Hour.Label(w.Start)
}

// Children returns the windows of the level below that make up w (hours of a day, days of
// a week or a month), up to but excluding until when until is before w's end.
func (w Window) Children(until time.Time) []Window {
	lv, ok := model.Period(w.Level).Parts()
	if !ok {
		panic("BUG: Children of " + w.Level)
	}
	end := w.End()
	if !until.IsZero() && until.Before(end) {
		end = until
	}
	var out []Window
	for t := w.Start; t.Before(end); t = lv.Next(t) {
		out = append(out, Window{string(lv), t})
	}
	return out
}

// Hours returns every hour of w, up to until when that is earlier.
func (w Window) Hours(until time.Time) []Window {
	if w.Level == Hour {
		return []Window{w}
	}
	var out []Window
	for _, c := range w.Children(until) {
		out = append(out, c.Hours(until)...)
	}
	return out
}

// ServedLevels returns the levels of ws the batch publishes, smallest first: its calendar
// spans, and all time when it serves "all".
func ServedLevels(ws windowset.Set) []string {
	out := model.PeriodStrings(ws.Calendar())
	if ws.HasLive(All) {
		out = append(out, All)
	}
	return out
}

// ParseLevels reads a comma-separated list of levels ("hour,day"), each one the window set
// serves (ServedLevels).
func ParseLevels(s string, ws windowset.Set) ([]string, error) {
	served := ServedLevels(ws)
	use := "use " + strings.Join(served, ", ") + " (the configured calendar windows and all time)"
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(served, p) {
			return nil, fmt.Errorf("window %q is not served here: %s", p, use)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no windows given: %s", use)
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(Levels, a) - slices.Index(Levels, b) })
	return out, nil
}

// Span returns the windows of level whose start lies in [from, to), aligning from down to
// its window. All time is the single window All.
func Span(level string, from, to time.Time) ([]Window, error) {
	if level == All {
		return []Window{{Level: All}}, nil
	}
	if !model.Period(level).Valid() {
		return nil, fmt.Errorf("%w: window %q", ErrBadRange, level)
	}
	if !to.After(from) {
		return nil, fmt.Errorf("%w: end %s is not after start %s", ErrBadRange, to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	var out []Window
	for t := model.Period(level).Align(from); t.Before(to); t = model.Period(level).Next(t) {
		out = append(out, Window{level, t})
	}
	return out, nil
}

// Combine is the fingerprint of a window above the hour: the SHA-256 of its children's
// starts and fingerprints, so any change below shows up at every level above.
func Combine(children []Window, fps []string) string {
	if len(children) != len(fps) {
		panic("BUG: Combine with mismatched lengths")
	}
	h := sha256.New()
	for i, c := range children {
		fmt.Fprintf(h, "%s %s\n", c.Start.UTC().Format(time.RFC3339), fps[i])
	}
	return hex.EncodeToString(h.Sum(nil))
}
