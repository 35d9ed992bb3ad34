// Package store is the serving store: the finished, precomputed top-K lists that the serving
// API reads, one key per window. The speed layer's merger and the batch layer write it; the
// API only reads it (through its cache).
//
// Every implementation keeps the same rules (Admit):
//   - versions only move forward: a write older than the stored list is refused
//     (ErrStaleVersion), so a paused or standby merger cannot regress a list;
//   - an exact list from the batch layer is never replaced by the speed layer's approximate
//     one for the same calendar window (ErrSuperseded);
//   - a reader sees a whole list or the previous one, never a mix.
//
// Two implementations: Bolt (a single file, the embedded default) and ClickHouse (production).
package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Windows the store knows. Live lists are sliding ("the last hour up to now"); calendar lists
// are aligned UTC hours, days and months. "all" is all time, live only. Trending-topics
// lists (seed 001) are live, one per region and score (TopicsWindow), and calendar hours
// too: the batch layer's exact list of a closed hour is {TopicsWindow, the hour's start}.
var (
	LiveWindows     = []string{"hour", "day", "month", "all"}
	CalendarWindows = []string{"hour", "day", "month"}
	// TopicsScores are the score names a topics window may carry (speed/topics.Score).
	TopicsScores = []string{"volume", "surge", "decayed"}
)

// BaseWindow is the batch layer's exact all-time base: every view through the boundary B (a
// UTC day start, the list's Boundary) summed from the rollups, the top c*K items with the
// Cutoff no other item exceeds. It is a live key of its own, written by the batch layer only,
// so it never competes with the served live "all" list; the speed layer's merger adds its
// exact counts since B to it (the all-time time boundary). The API does not serve it.
const BaseWindow = "all-base"

// topicsPrefix starts every trending-topics window name.
const topicsPrefix = "topics/"

// MaxTopicsRegionBytes bounds the region (or "world") in a topics window name, as
// speed/topics does.
const MaxTopicsRegionBytes = 64

// TopicsWindow names the live list of trending topics of one region ("world" for the
// worldwide list) under one score: "topics/eu/surge". The region is in the window name so
// that Key, the stores and the cache need no new field.
func TopicsWindow(region, score string) string { return topicsPrefix + region + "/" + score }

// ParseTopicsWindow splits a topics window name; ok is false for any other window or a
// malformed name (an empty region, one with '/' or a control character, or an unknown score).
func ParseTopicsWindow(window string) (region, score string, ok bool) {
	rest, found := strings.CutPrefix(window, topicsPrefix)
	if !found {
		return "", "", false
	}
	region, score, found = strings.Cut(rest, "/")
	if !found || region == "" || len(region) > MaxTopicsRegionBytes || !slices.Contains(TopicsScores, score) ||
		strings.ContainsFunc(region, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '/' }) {
		return "", "", false
	}
	return region, score, true
}

// IsTopicsWindow reports whether window names a trending-topics list.
func IsTopicsWindow(window string) bool {
	_, _, ok := ParseTopicsWindow(window)
	return ok
}

// Source says which layer computed a list.
type Source string

const (
	SourceSpeed Source = "speed" // approximate while a window is open (or by sketch)
	SourceBatch Source = "batch" // exact, recomputed from the archive after the window closed
)

// Key names one list: a live window (Start zero) or one calendar window.
type Key struct {
	Window string
	Start  time.Time // zero for the live list; the aligned UTC start for a calendar window
}

// Live reports whether the key names a live (sliding) list.
func (k Key) Live() bool { return k.Start.IsZero() }

func (k Key) String() string {
	if k.Live() {
		return "live/" + k.Window
	}
	return k.Window + "/" + k.Start.UTC().Format(time.RFC3339)
}

// Item is one ranked entry.
type Item struct {
	Rank   int    `json:"rank"`
	ItemID string `json:"item_id"`
	Title  string `json:"title,omitempty"`
	Views  uint64 `json:"views"`
	// Exact is false when Views is a sketch estimate (never low, high by at most the bound).
	Exact bool `json:"exact"`

	// The rest is set on trending-topics lists only (TopicsWindow), where ItemID is the
	// topic and Views its mentions in the window (an estimate, rounded to whole mentions;
	// an account under the new-account age counts 3 tenths).
	//
	// Score is what the list is ranked by: the mentions (volume), the smoothed ratio
	// (current + c) / (expected + c) (surge) or the decayed count, after any review cut.
	Score float64 `json:"score,omitempty"`
	// Expected is the baseline scaled to the window; absent (0) when the topic has none.
	Expected float64 `json:"expected,omitempty"`
	// NewShare is the share of the topic's weight from new accounts.
	NewShare float64 `json:"new_share,omitempty"`
	// NoHistory: the baseline never saw the topic (it was approved by review to be listed).
	NoHistory bool `json:"no_history,omitempty"`
	// Review: most of its weight came from new accounts; its score was cut and it is queued
	// for review.
	Review bool `json:"review,omitempty"`
}

// Bound is a sketch's error bound: an estimate exceeds the truth by at most MaxOvercount with
// probability Probability.
type Bound struct {
	MaxOvercount float64 `json:"max_overcount"`
	Probability  float64 `json:"probability"`
}

// Reconciliation compares the batch layer's exact list with the speed layer's list for the
// same calendar window: how far the speed layer was off.
type Reconciliation struct {
	SpeedVersion int64   `json:"speed_version"`
	RecallAtK    float64 `json:"recall_at_k"`
	MaxAbsError  uint64  `json:"max_abs_error"`
	MeanAbsError float64 `json:"mean_abs_error"`
	MaxRelError  float64 `json:"max_rel_error"`
}

// List is one finished top-K list.
type List struct {
	Window string    `json:"window"`
	Start  time.Time `json:"start,omitzero"` // calendar windows only
	End    time.Time `json:"end,omitzero"`   // calendar windows only (exclusive)
	AsOf   time.Time `json:"as_of"`          // event time the list is complete up to
	// Version orders writes of the same key; larger is newer. The speed layer uses the as-of
	// minute in Unix milliseconds; the batch layer its run time.
	Version         int64           `json:"version"`
	Source          Source          `json:"source"`
	Exact           bool            `json:"exact"`
	Partial         bool            `json:"partial"`
	StalePartitions []int           `json:"stale_partitions,omitempty"`
	ErrorBound      *Bound          `json:"error_bound,omitempty"`
	Items           []Item          `json:"items"`
	ComputedAt      time.Time       `json:"computed_at"`
	Fingerprint     string          `json:"input_fingerprint,omitempty"` // batch: fingerprint of the archived inputs
	Reconciliation  *Reconciliation `json:"reconciliation,omitempty"`

	// All-time lists only (BaseWindow and the live "all" list built on it).
	//
	// Boundary is the time boundary B: the batch's exact totals cover every view before it,
	// the speed layer's exact counts the views from it up to AsOf.
	Boundary time.Time `json:"boundary,omitzero"`
	// Cutoff is the most views an item not in the list can have (the base: through Boundary;
	// the live "all" list: in total, when no partition is stale). 0 means no other item has
	// any views.
	Cutoff uint64 `json:"cutoff,omitempty"`
}

// Key returns the list's key.
func (l List) Key() Key { return Key{Window: l.Window, Start: l.Start} }

// Validate checks the invariants every writer must keep.
func (l List) Validate() error {
	live := l.Start.IsZero()
	topics := IsTopicsWindow(l.Window)
	switch {
	case live && l.Window == BaseWindow && (l.Source != SourceBatch || !Aligned("day", l.Boundary)):
		return fmt.Errorf("%w: %s list: source %q boundary %s: want the batch layer's list through a UTC day start", ErrInvalid, BaseWindow, l.Source, l.Boundary.Format(time.RFC3339))
	case live && l.Window != BaseWindow && !slices.Contains(LiveWindows, l.Window) && !topics:
		return fmt.Errorf("%w: live window %q: want one of %v or topics/<region>/<%s>", ErrInvalid, l.Window, LiveWindows, strings.Join(TopicsScores, "|"))
	case !live && topics && !Aligned("hour", l.Start):
		return fmt.Errorf("%w: topics window %s start %s is not a UTC hour", ErrInvalid, l.Window, l.Start.Format(time.RFC3339))
	case !live && !topics && !slices.Contains(CalendarWindows, l.Window):
		return fmt.Errorf("%w: calendar window %q: want one of %v or topics/<region>/<%s>", ErrInvalid, l.Window, CalendarWindows, strings.Join(TopicsScores, "|"))
	case !live && !topics && !Aligned(l.Window, l.Start):
		return fmt.Errorf("%w: %s window start %s is not aligned", ErrInvalid, l.Window, l.Start.Format(time.RFC3339))
	case l.Source != SourceSpeed && l.Source != SourceBatch:
		return fmt.Errorf("%w: source %q", ErrInvalid, l.Source)
	case l.Version <= 0:
		return fmt.Errorf("%w: version %d must be positive", ErrInvalid, l.Version)
	}
	for i, it := range l.Items {
		if it.Rank != i+1 {
			return fmt.Errorf("%w: item %d has rank %d", ErrInvalid, i, it.Rank)
		}
		switch {
		case topics && i > 0 && it.Score > l.Items[i-1].Score:
			return fmt.Errorf("%w: items not sorted by score at rank %d", ErrInvalid, it.Rank)
		case !topics && i > 0 && it.Views > l.Items[i-1].Views:
			return fmt.Errorf("%w: items not sorted by views at rank %d", ErrInvalid, it.Rank)
		}
	}
	return nil
}

// Admit decides whether next may replace cur (nil when the key is empty). Both
// implementations call it inside their atomic update, so the rules live in one place.
func Admit(cur *List, next List) error {
	if err := next.Validate(); err != nil {
		return err
	}
	if cur == nil {
		return nil
	}
	if !next.Start.IsZero() && cur.Source == SourceBatch && next.Source == SourceSpeed {
		return fmt.Errorf("%s: %w (batch version %d)", next.Key(), ErrSuperseded, cur.Version)
	}
	if !next.Start.IsZero() && next.Source == SourceBatch && cur.Source == SourceSpeed {
		return nil // a calendar window's exact list always supersedes the approximate one
	}
	// Live lists (including the batch's all-time list) are ordered by version alone: the
	// newest as-of wins, exact or not.
	if next.Version < cur.Version {
		return fmt.Errorf("%s: version %d older than stored %d: %w", next.Key(), next.Version, cur.Version, ErrStaleVersion)
	}
	return nil
}

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
	case "month":
		return start.AddDate(0, 1, 0)
	}
	panic("BUG: Next of unknown calendar window " + window)
}

// Store holds the served lists. Implementations are safe for concurrent use.
type Store interface {
	// Put writes a list if Admit allows it, atomically.
	Put(ctx context.Context, l List) error
	// Get returns the list under key, or ErrNotFound.
	Get(ctx context.Context, k Key) (List, error)
	// Range returns the calendar lists of one window kind whose start is in [from, to), in
	// start order.
	Range(ctx context.Context, window string, from, to time.Time) ([]List, error)
	// Since returns every live list and every calendar list whose start is at or after
	// since: what the serving cache loads.
	Since(ctx context.Context, since time.Time) ([]List, error)
	Close() error
}
