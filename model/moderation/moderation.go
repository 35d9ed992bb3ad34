package moderation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrInvalid means a decision was refused: an empty or oversized item, no reason or no
	// author. The message says which.
	ErrInvalid = errors.New("moderation: invalid decision")
	// ErrNotRemoved means Restore named an item that is not removed.
	ErrNotRemoved = errors.New("moderation: item is not removed")
	// ErrCorrupt means the list's bytes are not an encoding this build reads.
	ErrCorrupt = errors.New("moderation: corrupt list")
)

// Limits of a decision's fields, in bytes of UTF-8.
const (
	MaxItemBytes   = 256 // as an event's item_id
	MaxReasonBytes = 512
	MaxByBytes     = 128
)

// formatVersion is the version of the JSON encoding (MarshalJSON).
const formatVersion = 1

// Decision is the latest decision about one item: removed (Removed true) or restored, by
// whom, when and why.
type Decision struct {
	Item    string    `json:"item"`
	Removed bool      `json:"removed"`
	Reason  string    `json:"reason"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
}

// newer reports whether d wins over o for the same item: the later decision, and at the same
// instant the larger by a fixed order of the other fields, so that every replica merging the
// same decisions in any order keeps the same one.
func (d Decision) newer(o Decision) bool {
	if !d.At.Equal(o.At) {
		return d.At.After(o.At)
	}
	if d.Removed != o.Removed {
		return d.Removed // at one instant, removal wins: the safe side
	}
	if d.By != o.By {
		return d.By > o.By
	}
	return d.Reason > o.Reason
}

// List is the shared moderation list: every item's latest decision. Restored items are kept
// (with who restored them and why), so a merge with an older copy that still says removed
// cannot bring the removal back. Safe for concurrent use.
type List struct {
	mu     sync.Mutex
	byItem map[string]Decision
}

// NewList returns an empty list.
func NewList() *List { return &List{byItem: map[string]Decision{}} }

func check(item, reason, by string) error {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"item", item, MaxItemBytes}, {"reason", reason, MaxReasonBytes}, {"by", by, MaxByBytes}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			return fmt.Errorf("%w: %s must not be empty (say which item, why, and who decides)", ErrInvalid, f.name)
		case len(f.v) > f.max:
			return fmt.Errorf("%w: %s must be at most %d bytes, got %d", ErrInvalid, f.name, f.max, len(f.v))
		case !utf8.ValidString(f.v):
			return fmt.Errorf("%w: %s must be valid UTF-8", ErrInvalid, f.name)
		}
	}
	return nil
}

// Remove records that by removed item at at, for reason. Removing a removed item again
// replaces the reason (a newer decision).
func (l *List) Remove(item, reason, by string, at time.Time) error {
	if err := check(item, reason, by); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.put(Decision{Item: item, Removed: true, Reason: reason, By: by, At: at.UTC()})
	return nil
}

// Restore records that by brought a removed item back at at, for reason; ErrNotRemoved when
// it is not removed.
func (l *List) Restore(item, reason, by string, at time.Time) error {
	if err := check(item, reason, by); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := l.byItem[item]; !ok || !d.Removed {
		return fmt.Errorf("%w: %q", ErrNotRemoved, item)
	}
	l.put(Decision{Item: item, Removed: false, Reason: reason, By: by, At: at.UTC()})
	return nil
}

// put keeps d unless the list holds a newer decision about its item; l.mu is held.
func (l *List) put(d Decision) {
	if cur, ok := l.byItem[d.Item]; ok && !d.newer(cur) {
		return
	}
	l.byItem[d.Item] = d
}

// Merge takes o's decisions that are newer than l's. It is commutative, associative and
// idempotent, so replicas that merge each other's copies in any order agree.
func (l *List) Merge(o *List) {
	if o == l {
		return
	}
	ds := o.Decisions()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range ds {
		l.put(d)
	}
}

// Decisions returns every decision, removed and restored, by item.
func (l *List) Decisions() []Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Decision, 0, len(l.byItem))
	for _, d := range l.byItem {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Decision) int { return strings.Compare(a.Item, b.Item) })
	return out
}

// Get returns the latest decision about item.
func (l *List) Get(item string) (Decision, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d, ok := l.byItem[item]
	return d, ok
}

// Removed returns the set of the items removed now.
func (l *List) Removed() *Set {
	var items []string
	for _, d := range l.Decisions() {
		if d.Removed {
			items = append(items, d.Item)
		}
	}
	return NewSet(items...)
}

type wire struct {
	Version   int        `json:"version"`
	Decisions []Decision `json:"decisions"`
}

// MarshalJSON encodes the list as {"version": 1, "decisions": [...]}, decisions by item, so
// equal lists encode to equal bytes (the shared copy is rewritten only when it changes).
func (l *List) MarshalJSON() ([]byte, error) {
	ds := l.Decisions()
	if ds == nil {
		ds = []Decision{}
	}
	return json.Marshal(wire{Version: formatVersion, Decisions: ds})
}

// UnmarshalJSON replaces l's decisions with the encoded ones; an unknown version, a field
// this build does not know, or a decision that Remove or Restore would refuse is ErrCorrupt.
func (l *List) UnmarshalJSON(b []byte) error {
	var w wire
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if w.Version != formatVersion {
		return fmt.Errorf("%w: version %d, this build reads %d", ErrCorrupt, w.Version, formatVersion)
	}
	m := make(map[string]Decision, len(w.Decisions))
	for _, d := range w.Decisions {
		if err := check(d.Item, d.Reason, d.By); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if cur, ok := m[d.Item]; ok && !d.newer(cur) {
			continue
		}
		d.At = d.At.UTC()
		m[d.Item] = d
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byItem = m
	return nil
}

// Set is an immutable set of removed items: what a writer of served lists filters by. The
// nil *Set is the empty set.
type Set struct {
	items  map[string]struct{}
	digest string
}

// NewSet returns the set of items.
func NewSet(items ...string) *Set {
	s := &Set{items: make(map[string]struct{}, len(items))}
	for _, it := range items {
		s.items[it] = struct{}{}
	}
	sorted := make([]string, 0, len(s.items))
	for it := range s.items {
		sorted = append(sorted, it)
	}
	slices.Sort(sorted)
	h := sha256.New()
	for _, it := range sorted {
		h.Write([]byte(it))
		h.Write([]byte{0})
	}
	s.digest = hex.EncodeToString(h.Sum(nil)[:8])
	return s
}

// Has reports whether item is removed.
func (s *Set) Has(item string) bool {
	if s == nil {
		return false
	}
	_, ok := s.items[item]
	return ok
}

// Len is how many items are removed.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.items)
}

// Digest names the set's contents in 16 hex digits ("" for the empty set): two sets with the
// same items have the same digest. The batch puts it in a list's fingerprint, so a change of
// the set makes the next run publish the list again.
func (s *Set) Digest() string {
	if s.Len() == 0 {
		return ""
	}
	return s.digest
}

// Equal reports whether two sets hold the same items.
func (s *Set) Equal(o *Set) bool { return s.Digest() == o.Digest() && s.Len() == o.Len() }

// Items returns the removed items, sorted.
func (s *Set) Items() []string {
	out := make([]string, 0, s.Len())
	if s != nil {
		for it := range s.items {
			out = append(out, it)
		}
	}
	slices.Sort(out)
	return out
}

// Want is how many ranked candidates a writer must take to still fill a list of k after
// removing s's items: k plus every removed item (any of which may rank among them).
func (s *Set) Want(k int) int { return k + s.Len() }

// Top returns the first k of items (already in rank order) whose id is not in s, keeping
// their order; id gives an item's id. items is not changed.
func Top[T any](items []T, s *Set, k int, id func(T) string) []T {
	out := make([]T, 0, min(k, len(items)))
	for _, it := range items {
		if len(out) == k {
			break
		}
		if !s.Has(id(it)) {
			out = append(out, it)
		}
	}
	return out
}
