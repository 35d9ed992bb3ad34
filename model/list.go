package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

var (
	// ErrInvalid: a list is malformed (a bug in its writer); List.Validate wraps it.
	ErrInvalid = errors.New("invalid list")
	// ErrNotFound: nobody computed the requested list (what a store's Get says).
	ErrNotFound = errors.New("list not found")
)

// Windows a list may name. Live lists are sliding ("the last hour up to now") or all time
// ("all"), each under its configured name (ValidWindowName); calendar lists are aligned UTC
// periods named by their Period. Which names a deployment serves is configuration
// (model/windowset: the default is the live hour, day, month and all, and the calendar hour,
// day and month); the store accepts any well-formed name, its writers and the API only the
// configured ones. Trending-topics lists are live, one per region and score (TopicsKey),
// and calendar hours too: the batch layer's exact list of a closed hour is the topics key
// with the hour's start.
var (
	// TopicsScores are the score names a topics window may carry (speed/topics.Score).
	TopicsScores = []string{"volume", "surge", "decayed"}
)

// MaxWindowName bounds a window's name.
const MaxWindowName = 64

// ValidWindowName reports whether name can name a live window: 1 to MaxWindowName lowercase
// ASCII letters, digits, '-' or '_' ("hour", "7d", "calendar-week").
func ValidWindowName(name string) bool {
	if name == "" || len(name) > MaxWindowName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// BaseWindow is the batch layer's exact all-time base: every view through the boundary B (a
// UTC day start, the list's Boundary) summed from the rollups, the top c*K items with the
// Cutoff no other item exceeds. It is a live key of its own, written by the batch layer only,
// so it never competes with the served live "all" list; the speed layer's merger adds its
// exact counts since B to it (the all-time time boundary). The API does not serve it.
const BaseWindow = "all-base"

// TopicsList is the window of every trending-topics list; the key's Group is the region
// ("world" for the worldwide list) and its Score the score the list is ranked by.
const TopicsList = "topics"

// MaxGroupBytes bounds a key's group value (a region), as the event's region field is.
const MaxGroupBytes = 64

// ValidGroup reports whether g can be a key's group value: 1 to MaxGroupBytes bytes without
// '/' or control characters (the event decoder refuses control characters in a region; '/'
// separates a key name's parts).
func ValidGroup(g string) bool {
	return g != "" && len(g) <= MaxGroupBytes &&
		!strings.ContainsFunc(g, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '/' })
}

// TopicsKey names the live list of trending topics of one region ("world" for the worldwide
// list) under one score (volume, surge or decayed).
func TopicsKey(region, score string) Key { return Key{Window: TopicsList, Group: region, Score: score} }

// Name is the key's stored and served name without its start: the window alone, window/group
// for one group value's list of views ("hour/eu"), or window/group/score ("topics/eu/surge")
// for a scored list. Stores index lists by it and the API shows a topics list's as its
// "window", so the typed key keeps the names lists had when the region and score were packed
// into the window.
func (k Key) Name() string {
	switch {
	case k.Group == "" && k.Score == "":
		return k.Window
	case k.Score == "" && !k.IsTopics():
		return k.Window + "/" + k.Group
	}
	return k.Window + "/" + k.Group + "/" + k.Score
}

// ParseName reads a Name back into a key (Start zero); ok is false for a malformed name:
// a grouped name whose group is empty, too long or holds '/' or a control character, or a
// topics name whose score is missing or unknown.
func ParseName(name string) (Key, bool) {
	w, rest, grouped := strings.Cut(name, "/")
	if !grouped {
		return Key{Window: name}, name != ""
	}
	g, sc, scored := strings.Cut(rest, "/")
	k := Key{Window: w, Group: g, Score: sc}
	if !scored && w == TopicsList {
		return k, false // a topics list always has its score
	}
	return k, k.validGroup()
}

// IsTopics reports whether the key names a trending-topics list.
func (k Key) IsTopics() bool { return k.Window == TopicsList }

// validGroup checks a grouped key's group and score.
func (k Key) validGroup() bool {
	switch {
	case !ValidGroup(k.Group) || k.Window == "":
		return false
	case k.IsTopics():
		return slices.Contains(TopicsScores, k.Score)
	}
	return !strings.Contains(k.Score, "/")
}

// Source says which layer computed a list.
type Source string

const (
	SourceSpeed Source = "speed" // live or provisional: late events may be missing (and sketch counts are estimates)
	SourceBatch Source = "batch" // exact, recomputed from the archive after the window closed
)

// Status says what a list is; every list has exactly one.
type Status string

const (
	// StatusLive: the speed layer's list of a window still moving: a live (sliding) list, the
	// all-time list, or a calendar window that has not closed yet.
	StatusLive Status = "live"
	// StatusProvisional: the speed layer's final list of a closed calendar window. Events
	// that arrived after the window closed are missing from it (DroppedLate counts them);
	// it stands until the batch layer's exact list replaces it.
	StatusProvisional Status = "provisional"
	// StatusExact: the batch layer's list, recomputed from the archive: every count equals
	// the archive's truth for the window (a forced run: for what was archived so far).
	StatusExact Status = "exact"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusLive, StatusProvisional, StatusExact}

// Key names one list: a live window (Start zero) or one calendar window, of all items or of
// one group value (a region), ranked by views or by a named score.
type Key struct {
	Window string
	Start  time.Time // zero for the live list; the aligned UTC start for a calendar window
	// Group is the group value the list is of: the region of a topics list, or the value of
	// the configured group dimension (model/windowset.Groups: the event's region) of a list
	// of views; empty for the list of all items.
	Group string
	// Score is what the list is ranked by when it is not views: a topics list's volume,
	// surge or decayed score; empty otherwise.
	Score string
}

// Live reports whether the key names a live (sliding) list.
func (k Key) Live() bool { return k.Start.IsZero() }

func (k Key) String() string {
	if k.Live() {
		return "live/" + k.Name()
	}
	return k.Name() + "/" + k.Start.UTC().Format(time.RFC3339)
}

// Item is one ranked entry.
type Item struct {
	Rank   int    `json:"rank"`
	ItemID string `json:"item_id"`
	Title  string `json:"title,omitempty"`
	// Thumbnail is the item's image URL, absolute or relative to the API (the merger's titles
	// source gives it; empty when unknown).
	Thumbnail string `json:"thumbnail_url,omitempty"`
	Views     uint64 `json:"views"`
	// Exact is true only on an exact list (Status exact): Views is then the archive's truth.
	// On the speed layer's lists it is false: Views may miss late events, and is a sketch
	// estimate (never low, high by at most the bound) when the list has an ErrorBound.
	Exact bool `json:"exact"`
	// DecayedScore is set on a decayed list's items only (List.HalfLifeSeconds): what the
	// list ranks by, the item's views each weighted 2^(-age/half-life), age from the start of
	// the view's minute to the list's AsOf (a view of the current minute counts 1). Views is
	// then the score rounded to whole views: what the item's views are worth at AsOf, not
	// how many there were. Stored as "decayed_score" (a topics item's Topic has a "score");
	// the API serves it as "score".
	DecayedScore float64 `json:"decayed_score,omitempty"`
	// ViewsUpper is set on a frequent list's items only (List.Frequent): the most views the
	// item can have, proven, where Views is the least (speed/frequent: Views + the offset of
	// the partition summary that counted it). The true count lies in [Views, ViewsUpper].
	ViewsUpper uint64 `json:"views_upper,omitempty"`

	// Topic is set on trending-topics lists only (TopicsKey), where ItemID is the topic and
	// Views its mentions in the window (an estimate, rounded to whole mentions; an account
	// under the new-account age counts 3 tenths). Its fields appear inline in JSON.
	*Topic
}

// Topic is what a trending-topics list says of each topic beyond its mentions.
type Topic struct {
	// Score is what the list is ranked by: the mentions (volume), the smoothed ratio
	// (current + c) / (expected + c) (surge) or the decayed count, after any review cut.
	// Always written on a topics list's items (so a decoder finds the Topic), never on others.
	Score float64 `json:"score"`
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

// Baseline says what a trending-topics list's expected counts are made of: the same clock
// hour of the previous days, read from the hourly sketches in the object store. Merged over
// partitions it is the worst partition's.
type Baseline struct {
	// Days is how many of the Wanted previous days' same-hour sketches the expected counts
	// average (the fewest of any partition). A day the store has no sketch of (a young
	// deployment) is left out of the mean.
	Days   int `json:"days"`
	Wanted int `json:"wanted"`
	// Unavailable counts the days left out because the object store could not be read:
	// while it is above 0 the expected counts rest on the days still in memory, and surge
	// scores may read high.
	Unavailable int `json:"unavailable,omitempty"`
	// MaxOvercount bounds how far an expected count may read high, in mentions (the largest
	// of any partition; with the hourly sketches at the minute width, about the list's own
	// error_bound).
	MaxOvercount float64 `json:"max_overcount"`
}

// Reconciliation compares the batch layer's exact list with the speed layer's list for the
// same calendar window: how far the speed layer was off.
type Reconciliation struct {
	SpeedVersion int64   `json:"speed_version"`
	RecallAtK    float64 `json:"recall_at_k"`
	MaxAbsError  uint64  `json:"max_abs_error"`
	MeanAbsError float64 `json:"mean_abs_error"`
	MaxRelError  float64 `json:"max_rel_error"`
	// SpeedErrorBound is the error bound the speed list stated (its ErrorBound), kept here
	// because the exact list that replaces it has none: nil when the speed list claimed
	// exact counts. MaxAbsError over its MaxOvercount says whether the speed layer stayed
	// within what it promised. For a frequent speed list (List.Frequent), whose counts are
	// low rather than high, it is the widest of its items' bounds (ViewsUpper - Views), with
	// probability 1.
	SpeedErrorBound *Bound `json:"speed_error_bound,omitempty"`
	// SpeedDroppedLate is the speed list's DroppedLate: the window's events that came after
	// it had closed (beyond the allowed lateness) and so are missing from the provisional
	// list, the usual cause of the errors above for a level the speed layer counts exactly.
	SpeedDroppedLate uint64 `json:"speed_dropped_late"`
}

// ErrorOverBound returns MaxAbsError / SpeedErrorBound.MaxOvercount (above 1: the speed
// layer was further off than its bound) and whether the speed list stated a bound at all.
// A bound of 0 gives 0 when there was no error and +Inf otherwise.
func (r Reconciliation) ErrorOverBound() (float64, bool) {
	if r.SpeedErrorBound == nil {
		return 0, false
	}
	switch b := r.SpeedErrorBound.MaxOvercount; {
	case b > 0:
		return float64(r.MaxAbsError) / b, true
	case r.MaxAbsError == 0:
		return 0, true
	}
	return math.Inf(1), true
}

// ReconciledItem is one entry of the speed layer's list a batch list replaced
// (List.SpeedItems): the item and its views only, not an Item, so stored rows carry no ranks
// or exact flags the reconciliation never reads (DESIGN.md, Vocabulary: "ranked entry").
type ReconciledItem struct {
	ItemID string `json:"item_id"`
	Views  uint64 `json:"views"`
}

// ListKind says what a served list's items carry, so its readers (the API's field tables,
// serving/api/fields.go) dispatch on it rather than on which fields are set. It mirrors a
// partial's PartialKind, which says which fields carry one partition's list; a frequent
// partial is PartialItems with its bounds, and the list it merges into is ListFrequent.
type ListKind string

const (
	// ListItems: items ranked by views (sliding, calendar and all-time windows).
	ListItems ListKind = "items"
	// ListScored: a decayed window's list (HalfLifeSeconds): items rank by DecayedScore.
	ListScored ListKind = "scored"
	// ListTopics: a trending-topics list (TopicsKey): each item's Topic is set.
	ListTopics ListKind = "topics"
	// ListSince: an all-time list split at the time boundary B (Boundary, with Cutoff): the
	// batch's base through B (BaseWindow) or the live "all" list that adds the counts since
	// B to it (PartialSince partials).
	ListSince ListKind = "since"
	// ListFrequent: a list of a window counted in frequent mode (Frequent): each item's Views
	// and ViewsUpper bound its views, and Cutoff is the list's guarantee.
	ListFrequent ListKind = "frequent"
)

// ListKinds are the kinds a list can have.
var ListKinds = []ListKind{ListItems, ListScored, ListTopics, ListSince, ListFrequent}

// List is one finished top-K list.
type List struct {
	// Kind is what the list's items carry. Every writer sets it; a list stored before it
	// existed has none, and KindOf infers it from the fields as readers did.
	Kind   ListKind  `json:"kind,omitempty"`
	Window string    `json:"window"`
	Start  time.Time `json:"start,omitzero"` // calendar windows only
	// Group and Score complete the list's key (Key): the group value (a region) of a list
	// per group, the region and score of a topics list.
	Group string    `json:"group,omitempty"`
	Score string    `json:"score,omitempty"`
	End   time.Time `json:"end,omitzero"` // calendar windows only (exclusive)
	AsOf  time.Time `json:"as_of"`        // the newest event time the list counts
	// WindowStart and WindowEnd are the span of event time a live sliding or all-time list
	// covers, both ends in (the end is AsOf): its counts are exactly the events in it, every
	// partition's from WindowStart (the hour list: from the start of the minute 59 minutes
	// before AsOf's, open minute included; docs/requirements.md, "The span a live list
	// states"). Zero on calendar lists (Start and End) and on batch lists.
	WindowStart time.Time `json:"window_start,omitzero"`
	WindowEnd   time.Time `json:"window_end,omitzero"`
	// Version orders writes of the same key; larger is newer. The speed layer uses the as-of
	// minute in Unix milliseconds; the batch layer its run time.
	Version int64  `json:"version"`
	Source  Source `json:"source"`
	// Status is live, provisional or exact (see the constants); Exact is true exactly when
	// Status is exact (the one exception: the speed layer's live all-time list may say
	// exact when it is proven so; see Validate).
	Status Status `json:"status"`
	Exact  bool   `json:"exact"`
	// DroppedLate is how many events of this calendar window the speed layer could not
	// count, summed over partitions: they arrived after the window had closed (its end plus
	// the allowed lateness had passed on their partition). The archive has them, so the
	// batch's exact list includes them. Always 0 on live lists.
	DroppedLate uint64 `json:"dropped_late"`
	// Incomplete (JSON "partial", kept for the wire) says some partition's counts may be
	// missing: StalePartitions names them (stale, silent, or out of group values). The Go
	// name is not Partial because model.Partial is one partition's list on the wire.
	Incomplete      bool   `json:"partial"`
	StalePartitions []int  `json:"stale_partitions,omitempty"`
	ErrorBound      *Bound `json:"error_bound,omitempty"`
	// Baseline: trending-topics lists only (speed layer).
	Baseline       *Baseline       `json:"baseline,omitempty"`
	Items          []Item          `json:"items"`
	ComputedAt     time.Time       `json:"computed_at"`
	Fingerprint    string          `json:"input_fingerprint,omitempty"` // batch: fingerprint of the archived inputs
	Reconciliation *Reconciliation `json:"reconciliation,omitempty"`
	// SpeedItems is, on a batch list that replaced a speed list, that speed list as it was
	// (item and views), so a recompute after late data reconciles it again against the new
	// exact counts.
	SpeedItems []ReconciledItem `json:"speed_items,omitempty"`

	// All-time lists only (BaseWindow and the live "all" list built on it).
	//
	// Boundary is the time boundary B: the batch's exact totals cover every view before it,
	// the speed layer's exact counts the views from it up to AsOf.
	Boundary time.Time `json:"boundary,omitzero"`
	// Cutoff is the most views an item not in the list can have (the base: through Boundary;
	// the live "all" list: in total, when no partition is stale). 0 means no other item has
	// any views.
	Cutoff uint64 `json:"cutoff,omitempty"`

	// HalfLifeSeconds marks a decayed list (a live window of kind decayed, model/windowset):
	// its items rank by DecayedScore as of AsOf, each view counting 2^(-age/half-life).
	// Decayed lists are the speed layer's only: always live, never recomputed by the batch.
	HalfLifeSeconds int64 `json:"half_life_seconds,omitempty"`

	// Frequent marks a list of a window counted in frequent mode (model/windowset.Frequent,
	// issue 32): each item's Views is a proven lower bound and ViewsUpper a proven upper
	// bound on its views, and Cutoff the list's guarantee: no item with more than Cutoff
	// views is missing from it. Speed lists only, never exact.
	Frequent bool `json:"frequent,omitempty"`
}

// KindOf returns l's kind: Kind, or when absent what the key and fields say (inferKind).
func (l List) KindOf() ListKind {
	if l.Kind != "" {
		return l.Kind
	}
	return l.inferKind()
}

// inferKind is the kind the key and fields say: a topics key, a half-life, the frequent mark,
// a time boundary, else views.
func (l List) inferKind() ListKind {
	switch {
	case l.Key().IsTopics():
		return ListTopics
	case l.HalfLifeSeconds != 0:
		return ListScored
	case l.Frequent:
		return ListFrequent
	case !l.Boundary.IsZero():
		return ListSince
	}
	return ListItems
}

// DecayedViews is a decayed list's Views for a score: the score rounded to whole views.
func DecayedViews(score float64) uint64 {
	if !(score > 0) {
		return 0
	}
	return uint64(math.Round(min(score, 1<<62)))
}

// Key returns the list's key.
func (l List) Key() Key { return Key{Window: l.Window, Start: l.Start, Group: l.Group, Score: l.Score} }

// SetKey names the list by k (window, start, group and score).
func (l *List) SetKey(k Key) {
	l.Window, l.Start, l.Group, l.Score = k.Window, k.Start, k.Group, k.Score
}

// Validate checks the invariants every writer must keep.
func (l List) Validate() error {
	live := l.Start.IsZero()
	k := l.Key()
	topics := k.IsTopics()
	switch {
	case topics && !k.validGroup():
		return fmt.Errorf("%w: list %q: want %s/<region>/<%s>, a region of 1-%d bytes without '/' or control characters", ErrInvalid, k.Name(), TopicsList, strings.Join(TopicsScores, "|"), MaxGroupBytes)
	case !topics && k.Group != "" && !ValidGroup(k.Group):
		return fmt.Errorf("%w: list %q: group %q: want 1-%d bytes without '/' or control characters", ErrInvalid, k.Name(), k.Group, MaxGroupBytes)
	case !topics && k.Score != "":
		return fmt.Errorf("%w: list %q: only topics lists have a score", ErrInvalid, k.Name())
	case !topics && k.Group != "" && l.Window == BaseWindow:
		return fmt.Errorf("%w: list %q: the all-time base has no group lists", ErrInvalid, k.Name())
	case live && l.Window == BaseWindow && (l.Source != SourceBatch || !Day.Aligned(l.Boundary)):
		return fmt.Errorf("%w: %s list: source %q boundary %s: want the batch layer's list through a UTC day start", ErrInvalid, BaseWindow, l.Source, l.Boundary.Format(time.RFC3339))
	case live && l.Window != BaseWindow && !ValidWindowName(l.Window) && !topics:
		return fmt.Errorf("%w: live window %q: want 1-%d lowercase letters, digits, '-' or '_', or %s/<region>/<%s>", ErrInvalid, l.Window, MaxWindowName, TopicsList, strings.Join(TopicsScores, "|"))
	case !live && topics && !Hour.Aligned(l.Start):
		return fmt.Errorf("%w: topics list %s start %s is not a UTC hour", ErrInvalid, k.Name(), l.Start.Format(time.RFC3339))
	case !live && !topics && !Period(l.Window).Valid():
		return fmt.Errorf("%w: calendar window %q: want one of %v or %s/<region>/<%s>", ErrInvalid, l.Window, Periods, TopicsList, strings.Join(TopicsScores, "|"))
	case !live && !topics && !Period(l.Window).Aligned(l.Start):
		return fmt.Errorf("%w: %s window start %s is not aligned", ErrInvalid, l.Window, l.Start.Format(time.RFC3339))
	case l.Source != SourceSpeed && l.Source != SourceBatch:
		return fmt.Errorf("%w: source %q", ErrInvalid, l.Source)
	case l.Version <= 0:
		return fmt.Errorf("%w: version %d must be positive", ErrInvalid, l.Version)
	}
	if err := l.validateStatus(); err != nil {
		return err
	}
	switch inferred := l.inferKind(); {
	case l.Kind != "" && !slices.Contains(ListKinds, l.Kind):
		return fmt.Errorf("%w: list %s: kind %q: want one of %v", ErrInvalid, k, l.Kind, ListKinds)
	case l.Kind != "" && l.Kind != inferred:
		return fmt.Errorf("%w: list %s: kind %s, but its key and fields are those of a %s list", ErrInvalid, k, l.Kind, inferred)
	case l.Frequent && !l.Boundary.IsZero():
		return fmt.Errorf("%w: frequent list %s has a time boundary: only an all-time list split at B has one", ErrInvalid, k)
	}
	decayed := l.HalfLifeSeconds != 0
	switch {
	case l.HalfLifeSeconds < 0:
		return fmt.Errorf("%w: half-life %d s is negative", ErrInvalid, l.HalfLifeSeconds)
	case decayed && (!live || topics || l.Window == BaseWindow || l.Source != SourceSpeed || l.Status != StatusLive):
		return fmt.Errorf("%w: decayed list %s: only a live list of the speed layer is decayed", ErrInvalid, k)
	}
	if l.Frequent && (l.Source != SourceSpeed || l.Exact || decayed || topics) {
		return fmt.Errorf("%w: frequent list %s: only a speed list of views, never exact, counts in frequent mode", ErrInvalid, k)
	}
	for i, it := range l.Items {
		switch {
		case l.Frequent && it.ViewsUpper < it.Views:
			return fmt.Errorf("%w: frequent list item %d has views %d over its upper bound %d", ErrInvalid, it.Rank, it.Views, it.ViewsUpper)
		case !l.Frequent && it.ViewsUpper != 0:
			return fmt.Errorf("%w: item %d has an upper bound on a list that is not frequent", ErrInvalid, it.Rank)
		case decayed && (!(it.DecayedScore > 0) || math.IsInf(it.DecayedScore, 1)):
			return fmt.Errorf("%w: decayed list item %d has score %v", ErrInvalid, it.Rank, it.DecayedScore)
		case decayed && it.Views != DecayedViews(it.DecayedScore):
			return fmt.Errorf("%w: decayed list item %d has views %d for score %v: want the score rounded", ErrInvalid, it.Rank, it.Views, it.DecayedScore)
		case decayed && i > 0 && it.DecayedScore > l.Items[i-1].DecayedScore:
			return fmt.Errorf("%w: items not sorted by score at rank %d", ErrInvalid, it.Rank)
		case !decayed && it.DecayedScore != 0:
			return fmt.Errorf("%w: item %d has a decayed score on a list that is not decayed", ErrInvalid, it.Rank)
		}
		if it.Rank != i+1 {
			return fmt.Errorf("%w: item %d has rank %d", ErrInvalid, i, it.Rank)
		}
		if it.Exact && !l.Exact {
			return fmt.Errorf("%w: item %d says exact on a list that is not", ErrInvalid, it.Rank)
		}
		switch {
		case topics && it.Topic == nil:
			return fmt.Errorf("%w: topics list item %d has no topic scores", ErrInvalid, it.Rank)
		case !topics && it.Topic != nil:
			return fmt.Errorf("%w: item %d has topic scores on a list of views", ErrInvalid, it.Rank)
		case topics && i > 0 && it.Score > l.Items[i-1].Score:
			return fmt.Errorf("%w: items not sorted by score at rank %d", ErrInvalid, it.Rank)
		case !topics && i > 0 && it.Views > l.Items[i-1].Views:
			return fmt.Errorf("%w: items not sorted by views at rank %d", ErrInvalid, it.Rank)
		}
	}
	return nil
}

// validateStatus checks that the list says what it is:
//   - batch lists are exact; speed lists are live or provisional, provisional only for a
//     calendar window (a live key never closes);
//   - Exact is true exactly when Status is exact, except that the speed layer's live
//     all-time list ("all") may say Exact with status live, for an all-time count proven
//     exact (the window never closes, so it is never "exact" in the batch's sense);
//   - only calendar lists carry DroppedLate.
func (l List) validateStatus() error {
	live := l.Start.IsZero()
	switch {
	case !slices.Contains(Statuses, l.Status):
		return fmt.Errorf("%w: status %q: want one of %v", ErrInvalid, l.Status, Statuses)
	case l.Source == SourceBatch && l.Status != StatusExact:
		return fmt.Errorf("%w: a batch list has status %q, want exact", ErrInvalid, l.Status)
	case l.Source == SourceSpeed && l.Status == StatusExact:
		return fmt.Errorf("%w: a speed list has status exact: it is live or provisional until the batch recomputes it", ErrInvalid)
	case live && l.Status == StatusProvisional:
		return fmt.Errorf("%w: live list %s is provisional: only a closed calendar window is", ErrInvalid, l.Window)
	case l.Status == StatusExact && !l.Exact:
		return fmt.Errorf("%w: status exact but exact is false", ErrInvalid)
	case l.Exact && l.Status != StatusExact && !(live && l.Window == "all" && l.Status == StatusLive):
		return fmt.Errorf("%w: exact is true on a %s list", ErrInvalid, l.Status)
	case live && l.DroppedLate != 0:
		return fmt.Errorf("%w: live list %s has dropped_late %d: only calendar windows count late drops", ErrInvalid, l.Window, l.DroppedLate)
	}
	return nil
}

// Normalize fills in what a list stored before Status existed lacks, so stores can serve
// old rows: a batch list is exact; a speed list is provisional when its calendar window had
// ended by its as-of, live otherwise, and never exact (the old speed lists said exact
// although late events were missing). Lists with a status are returned unchanged.
func (l List) Normalize() List {
	if l.Group == "" && l.Score == "" && strings.Contains(l.Window, "/") {
		// Written when the region and score were packed into the window ("topics/eu/surge").
		if k, ok := ParseName(l.Window); ok {
			k.Start = l.Start
			l.SetKey(k)
		}
	}
	if l.Key().IsTopics() && slices.ContainsFunc(l.Items, func(it Item) bool { return it.Topic == nil }) {
		l.Items = slices.Clone(l.Items)
		for i := range l.Items {
			if l.Items[i].Topic == nil {
				l.Items[i].Topic = &Topic{} // an old row whose zero score was left out
			}
		}
	}
	if l.Status != "" {
		return l
	}
	switch {
	case l.Source == SourceBatch:
		l.Status = StatusExact
	case !l.Start.IsZero() && !l.End.IsZero() && !l.AsOf.Before(l.End):
		l.Status = StatusProvisional
	default:
		l.Status = StatusLive
	}
	if l.Source == SourceSpeed && l.Exact {
		l.Exact = false
		l.Items = slices.Clone(l.Items)
		for i := range l.Items {
			l.Items[i].Exact = false
		}
	}
	return l
}
