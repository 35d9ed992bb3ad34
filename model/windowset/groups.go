package windowset

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"trending/model"
)

// Group dimensions: the event fields whose value can name a group. The event carries one, its
// region; a category would be another (seed 003's variants), added here and in the event.
const (
	// ByRegion groups by the event's region field.
	ByRegion = "region"
)

// Dimensions lists the group dimensions an event carries.
var Dimensions = []string{ByRegion}

// Limits of a Groups.
const (
	// MaxGroups bounds the group values with lists: each is one more window state in every
	// speed partition that sees it, and one more list per window in the store.
	MaxGroups = 1024
	// DefaultMaxGroups is the cap of "every value seen" (Every) when none is given.
	DefaultMaxGroups = 64
)

// Groups says which group values get lists of their own beside each window's list of all
// items (seed 000: "make the bucket key (country, video)... one key per country and window"):
// one list per configured window and group value, keyed model.Key{Window, Group}. The zero
// value keeps none.
type Groups struct {
	// By is the group dimension, the event field whose value names a group: ByRegion, or ""
	// for none (then no group lists whatever Values says).
	By string
	// Values are the group values that get lists, in the order the dashboard offers them;
	// events of any other value count in the lists of all items only. Each is 1 to
	// model.MaxGroupBytes bytes without '/' or control characters, at most MaxGroups of them.
	// Empty with Every.
	Values []string
	// Every gives lists to every value seen instead of a fixed list, up to Max: each speed
	// partition keeps the first Max values it sees (then counts and drops the events of
	// others: trending_speed_group_events_dropped_total, and marks its lists partial), and the
	// batch publishes a closed window's Max values with the most views.
	Every bool
	// Max caps the group values with lists when Every is set: 1..MaxGroups. Ignored without
	// Every (a list of values is its own bound).
	Max int
}

// On reports whether any group gets lists.
func (g Groups) On() bool { return g.By != "" && (g.Every || len(g.Values) > 0) }

// Accepts reports whether value v gets lists (by the configuration alone: with Every, a speed
// partition that has filled its Max refuses new values).
func (g Groups) Accepts(v string) bool {
	if !g.On() || !model.ValidGroup(v) {
		return false
	}
	return g.Every || slices.Contains(g.Values, v)
}

// Limit is the most group values that get lists: Max with Every, else the number of Values.
func (g Groups) Limit() int {
	switch {
	case !g.On():
		return 0
	case g.Every:
		return g.Max
	}
	return len(g.Values)
}

// String is the groups as their flags say them: "" when off, "region=eu,us,apac", or
// "region=*" with Every ("region=*/32" with its Max). It names the groups' meaning in a
// speed checkpoint and in the batch's rollup fingerprints, so two configurations that keep the
// same lists have the same string.
func (g Groups) String() string {
	if !g.On() {
		return ""
	}
	if g.Every {
		return g.By + "=*/" + strconv.Itoa(g.Max)
	}
	return g.By + "=" + strings.Join(g.Values, ",")
}

// Kept is String without Every's Max: what the values that have lists depend on, so a state
// counted under one cap restores under another (the partition keeps the groups it has).
func (g Groups) Kept() string {
	if g.On() && g.Every {
		return g.By + "=*"
	}
	return g.String()
}

// ParseGroupValues reads the --groups flag: group values separated by commas ("eu,us,apac"),
// or "*" for every value seen; empty for none. by and max complete the Groups, which is
// validated.
func ParseGroupValues(by, values string, max int) (Groups, error) {
	g := Groups{By: strings.TrimSpace(by), Max: max}
	switch v := strings.TrimSpace(values); v {
	case "":
	case "*":
		g.Every = true
	default:
		for _, p := range strings.Split(v, ",") {
			g.Values = append(g.Values, strings.TrimSpace(p))
		}
	}
	if !g.Every {
		g.Max = 0 // a list of values is its own bound
	}
	return g, g.Validate()
}

// Validate reports every setting that cannot work, joined, each saying what to change.
func (g Groups) Validate() error {
	if g.By == "" {
		if g.Every || len(g.Values) > 0 {
			return fmt.Errorf("group values without a dimension: set the dimension (%s) they are values of", strings.Join(Dimensions, ", "))
		}
		return nil
	}
	var errs []error
	if !slices.Contains(Dimensions, g.By) {
		errs = append(errs, fmt.Errorf("group dimension %q: use %s (the event fields a group can be)", g.By, strings.Join(Dimensions, ", ")))
	}
	switch {
	case g.Every && len(g.Values) > 0:
		errs = append(errs, fmt.Errorf("groups: give a list of %s values or * for every value seen, not both", g.By))
	case g.Every && (g.Max < 1 || g.Max > MaxGroups):
		errs = append(errs, fmt.Errorf("groups: a cap of %d %s values: use 1..%d (default %d)", g.Max, g.By, MaxGroups, DefaultMaxGroups))
	case len(g.Values) > MaxGroups:
		errs = append(errs, fmt.Errorf("groups: %d %s values: at most %d; use * for every value seen with a cap", len(g.Values), g.By, MaxGroups))
	}
	seen := map[string]bool{}
	for _, v := range g.Values {
		switch {
		case !model.ValidGroup(v):
			errs = append(errs, fmt.Errorf("%s value %q: use 1 to %d bytes without '/' or control characters", g.By, v, model.MaxGroupBytes))
		case v == "*":
			errs = append(errs, fmt.Errorf("%s value *: give * alone for every value seen", g.By))
		case seen[v]:
			errs = append(errs, fmt.Errorf("%s value %q is given twice", g.By, v))
		}
		seen[v] = true
	}
	return errors.Join(errs...)
}

// Describe says which group values get lists, for a 400 or the help: "region eu, us, apac",
// "every region value seen (up to 64)", or "none".
func (g Groups) Describe() string {
	switch {
	case !g.On():
		return "none"
	case g.Every:
		return fmt.Sprintf("every %s value seen (up to %d)", g.By, g.Max)
	}
	return g.By + " " + strings.Join(g.Values, ", ")
}
