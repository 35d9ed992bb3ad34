// Partial is what a speed worker publishes for one window of one partition (the topic
// trending.partials): its top m*K, the merger's input. It lives in the model because both
// sides of the wire, the workers and the merger, read and write it.

package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	gojson "github.com/goccy/go-json"

	"trending/model/topk"
)

// SinceWindow is the window of the partials that carry a partition's exact counts since the
// all-time time boundary B (speed/window Partition.Since). The merger never serves them as a
// list of their own: it adds them to the batch layer's exact base through B
// (BaseWindow) to build the live "all" list (buildHybrid).
const SinceWindow = "all-since"

// PartialKind says which list a partial carries, so a reader dispatches on it rather than on
// window names or on which fields are set.
type PartialKind string

const (
	// PartialItems: counts in Items (sliding, calendar and all-time windows; a late-only
	// update of a calendar window carries none).
	PartialItems PartialKind = "items"
	// PartialScored: a decayed window's scores in Scored (and SaltedScored), HalfLifeSeconds set.
	PartialScored PartialKind = "scored"
	// PartialTopics: a trending-topics list in Topics, Window its TopicsKey name.
	PartialTopics PartialKind = "topics"
	// PartialSince: the exact counts since the all-time boundary (Window SinceWindow): Items,
	// Base, Boundary, From, BaseVersion and Cutoff.
	PartialSince PartialKind = "since"
)

// PartialKinds are the kinds a partial can have.
var PartialKinds = []PartialKind{PartialItems, PartialScored, PartialTopics, PartialSince}

// Partial is one partition's top list for one window, as published on trending.partials.
type Partial struct {
	// Kind is the list it carries. Producers set it; absent (a producer from before it
	// existed) it is inferred as those readers did (KindOf).
	Kind   PartialKind `json:"kind,omitempty"`
	Window string      `json:"window"`
	// Start and End name a calendar window (zero for a live, sliding one).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Final marks the last list of a calendar window that closed.
	Final bool `json:"final,omitempty"`
	// DroppedLate is how many events of this calendar window the partition could not count
	// because they arrived after the window had closed there (window.List.DroppedLate): a
	// running total, so the newest message of a partition holds its whole count.
	DroppedLate uint64 `json:"dropped_late,omitempty"`
	// LateOnly marks an update of DroppedLate alone, sent after the window's final list
	// (which it does not replace: its Items are empty). It travels under its own message key.
	LateOnly  bool `json:"late_only,omitempty"`
	Partition int  `json:"partition"`
	// AsOf is the newest event time the list counts: the open minutes are in live lists.
	AsOf time.Time `json:"as_of"`
	// WindowStart is where a sliding or all-time list's counts start (its end is AsOf,
	// included; a function of AsOf's minute, so partitions at one minute state one start);
	// zero on calendar lists, whose Start is their period's.
	WindowStart time.Time `json:"window_start,omitzero"`
	// Version orders a partition's lists for one window: AsOf in Unix ms (a shard partial:
	// its members' newest, AsOf the newest of the lists it merged, which may be earlier).
	Version int64        `json:"version"`
	Exact   bool         `json:"exact"`
	Bound   *Bound       `json:"bound,omitempty"`
	Total   uint64       `json:"total"`
	Items   []topk.Entry `json:"items"`
	// Topics is a trending-topics list (Window is its name, TopicsKey(...).Name()):
	// the partition's public list, ranked by score, instead of Items. Scores are ratios,
	// not counts, so the merger sorts them as floats rather than through topk.Merge; every
	// topic is counted on one partition, so joining the lists double-counts nothing.
	Topics []Item `json:"topics,omitempty"`
	// Baseline is what a topics list's expected counts are made of (the partition's).
	Baseline *Baseline `json:"baseline,omitempty"`
	// Limit caps the served list's length (the topics list size); 0 means the merger's K.
	Limit int `json:"limit,omitempty"`
	// GroupsFull: the partition keeps no lists for some group value it saw events of (every
	// value seen gets lists, up to a cap it reached: model/windowset.Groups.Every), so a
	// group value's list it sends nothing for may miss its counts (the merger marks such a
	// list incomplete, naming the partition). Set on every partial of the partition.
	GroupsFull bool `json:"groups_full,omitempty"`

	// Salted are the counts of every salted item (docs/scale-out.md, "Hot keys") this
	// partition holds in the window, however they rank: a salted item's events are spread over
	// several partitions, so the merger sums its counts from every partition before ranking
	// (the one place partial counts are summed). An item may be in Items too, with the same
	// count. On a SinceWindow partial they are counts since Boundary, like Items.
	Salted []SaltedCount `json:"salted,omitempty"`
	// Members is set by a shard merger (a two-level merge, docs/scale-out.md): the partitions
	// whose lists this partial merges, each with the version of its list, so the merger above
	// applies the staleness rule to partitions, not to groups. Partition is then the group's
	// index, and Version the newest member's.
	Members []Member `json:"members,omitempty"`
	// HalfLifeSeconds marks a decayed window's partial: Scored holds the partition's top
	// m*K by decayed score as of AsOf instead of Items (Total is the window's decayed views,
	// rounded). The merger brings every partition's scores to the list's AsOf (a score
	// decays by 2^(-dt/half-life) with no new views) and ranks them; each item is counted on
	// one partition, so the merge is exact as for counts.
	HalfLifeSeconds int64         `json:"half_life_s,omitempty"`
	Scored          []topk.Scored `json:"scored,omitempty"`
	// SaltedScored is Salted for a decayed window: every salted item's score as of AsOf.
	SaltedScored []SaltedScore `json:"salted_scored,omitempty"`

	// Frequent marks a frequent window's partial (model/windowset.Frequent): each item's
	// Count is a lower bound on its views in the partition, Count+MaxError an upper bound,
	// and no item the partition left out has more than Cutoff views (speed/frequent.PartList).
	Frequent bool   `json:"frequent,omitempty"`
	MaxError uint64 `json:"max_error,omitempty"`

	// The rest is set on SinceWindow partials only: Items are the partition's top m*K counts
	// since Boundary, exact.
	//
	// Boundary is B, where the counts start: the boundary of the base list the partition
	// last read.
	Boundary time.Time `json:"boundary,omitzero"`
	// From: the counts are complete for events at or after From; exact since B only when
	// From is not after Boundary.
	From time.Time `json:"from,omitzero"`
	// BaseVersion is the version of the base list whose items Base answers for.
	BaseVersion int64 `json:"base_version,omitempty"`
	// Base are the counts since B of every base list item this partition holds (nonzero
	// only), whether or not it is in Items too: a base item reported by no partition has no
	// views since B, and a shard merger keeps every base item when it cuts its Items to m*K.
	Base []topk.Entry `json:"base,omitempty"`
	// Cutoff is the most views since B an item this partition reports in neither Items nor
	// Base can have. On a Frequent partial: the most views an item not in Items can have.
	Cutoff uint64 `json:"cutoff,omitempty"`
}

// SaltedCount is a salted item's count in one partial.
type SaltedCount struct {
	Item  string `json:"item"`
	Count uint64 `json:"count"`
	// Over and Sketches are set by a shard merger on a sketch window: the sum of the error
	// bounds of the Sketches partition lists whose counts Count sums (each partition's count
	// is an estimate with its own bound, so the sum's bound is the sum of the bounds). Zero on
	// a partition's partial, whose bound is its list's (Partial.Bound), one sketch.
	Over     float64 `json:"over,omitempty"`
	Sketches int     `json:"sketches,omitempty"`
}

// SaltedScore is a salted item's decayed score in one partial; Over and Sketches as in
// SaltedCount.
type SaltedScore struct {
	Item     string  `json:"item"`
	Score    float64 `json:"score"`
	Over     float64 `json:"over,omitempty"`
	Sketches int     `json:"sketches,omitempty"`
}

// Member is one partition merged into a shard partial, with the version of its list.
type Member struct {
	Partition int   `json:"partition"`
	Version   int64 `json:"version"`
	// GroupsFull is the member's Partial.GroupsFull, so the merger above knows which
	// partitions' lists per group value may miss counts.
	GroupsFull bool `json:"groups_full,omitempty"`
	// AsOf is the member's Partial.AsOf on a group's counts since the all-time boundary
	// (model.SinceWindow), so the merger above knows whether every partition's counts reach
	// the same minute; zero elsewhere.
	AsOf time.Time `json:"as_of,omitzero"`
}

// KindOf returns p's kind: Kind, or when absent what the fields say, as readers inferred it
// before the field existed: the window SinceWindow, a topics list's name, a half-life, else
// counts.
func (p Partial) KindOf() PartialKind {
	if p.Kind != "" {
		return p.Kind
	}
	return p.inferKind()
}

func (p Partial) inferKind() PartialKind {
	switch {
	case p.Window == SinceWindow:
		return PartialSince
	case p.Key().IsTopics():
		return PartialTopics
	case p.HalfLifeSeconds != 0:
		return PartialScored
	}
	return PartialItems
}

// Validate checks what every reader relies on: a window, a partition, a version, a known kind
// that agrees with the window and fields, and no list of another kind.
func (p Partial) Validate() error {
	if p.Window == "" || p.Partition < 0 || p.Version <= 0 {
		return fmt.Errorf("window %q partition %d version %d: incomplete", p.Window, p.Partition, p.Version)
	}
	if p.Kind != "" && !slices.Contains(PartialKinds, p.Kind) {
		return fmt.Errorf("window %q: kind %q: want one of %v", p.Window, p.Kind, PartialKinds)
	}
	kind := p.KindOf()
	if inferred := p.inferKind(); kind != inferred {
		return fmt.Errorf("window %q: kind %s, but its window and fields are those of a %s partial", p.Window, kind, inferred)
	}
	items := fieldSet{len(p.Items) > 0 || len(p.Salted) > 0, "counts"}
	scored := fieldSet{len(p.Scored) > 0 || len(p.SaltedScored) > 0, "scored entries"}
	topics := fieldSet{len(p.Topics) > 0, "topics"}
	// A frequent partial's Cutoff is its guarantee, not a since partial's.
	since := fieldSet{!p.Boundary.IsZero() || !p.From.IsZero() || p.BaseVersion != 0 || len(p.Base) > 0 || (p.Cutoff != 0 && !p.Frequent), "counts since a boundary"}
	if (p.Frequent || p.MaxError != 0) && kind != PartialItems {
		return fmt.Errorf("window %q: a %s partial with a frequent window's bounds", p.Window, kind)
	}
	var other string
	switch kind {
	case PartialItems:
		other = firstSet(scored, topics, since)
	case PartialScored:
		other = firstSet(items, topics, since)
	case PartialTopics:
		other = firstSet(items, scored, since)
	case PartialSince:
		other = firstSet(scored, topics, fieldSet{p.LateOnly, "a late-only update"})
	}
	if other != "" {
		return fmt.Errorf("window %q: a %s partial with %s", p.Window, kind, other)
	}
	return nil
}

// fieldSet is whether a partial has a kind of content, and its name for a message.
type fieldSet struct {
	set  bool
	what string
}

// firstSet returns the name of the first content that is set, "" when none is.
func firstSet(fs ...fieldSet) string {
	for _, f := range fs {
		if f.set {
			return f.what
		}
	}
	return ""
}

// Key is the served list this partial contributes to.
// Window holds the list's name (Key.Name: "topics/eu/surge" for a topics list).
func (p Partial) Key() Key {
	k, ok := ParseName(p.Window)
	if !ok {
		k = Key{Window: p.Window}
	}
	k.Start = p.Start
	return k
}

// MessageKey is the Kafka key: one per (window, partition), so a compacted topic keeps the
// newest list of each; a late-only update has a key of its own, so compaction never lets it
// replace the final list it amends.
func (p Partial) MessageKey() []byte {
	if p.LateOnly {
		return []byte(fmt.Sprintf("%s|p%d|late", p.Key(), p.Partition))
	}
	return []byte(fmt.Sprintf("%s|p%d", p.Key(), p.Partition))
}

// Encode is the wire form (JSON).
func (p Partial) Encode() ([]byte, error) { return json.Marshal(p) }

// DecodePartial parses and checks a partial. It decodes with goccy/go-json, which reads the
// same JSON as encoding/json about 4x faster: decoding is most of a merger's work
// (BenchmarkMergeInterval, docs/scale-out.md), and encoding stays with encoding/json.
func DecodePartial(b []byte) (Partial, error) {
	var p Partial
	if err := gojson.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("decode partial: %w", err)
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("decode partial: %w", err)
	}
	return p, nil
}
