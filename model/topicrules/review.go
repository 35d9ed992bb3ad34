package topicrules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Reasons a topic is held.
const (
	// ReasonNewTopic: never seen in the baseline and rising fast. It is kept off public lists
	// until approved: a new topic can be a breaking story or an attack.
	ReasonNewTopic = "new-topic"
	// ReasonNewAccounts: over the review share of its weight came from new accounts. Its
	// score is cut; review decides whether that was right.
	ReasonNewAccounts = "new-accounts"
)

// Status is where a held topic stands.
type Status string

const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Rejected Status = "rejected"
)

// DefaultReviewMax bounds the queue; DefaultDecisionTTL is how long a decision is kept: a
// topic approved today has no same-hour history until tomorrow and must not be held again,
// and after 8 days the baseline knows it.
const (
	DefaultReviewMax   = 10_000
	DefaultDecisionTTL = 8 * 24 * time.Hour
)

// Held is one topic in the review queue.
type Held struct {
	Topic     string    `json:"topic"`
	Regions   []string  `json:"regions"` // the lists it was held from ("world" for worldwide)
	Reasons   []string  `json:"reasons"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	Mentions  float64   `json:"mentions"` // the window count when last seen
	Score     float64   `json:"score"`    // the score when last seen, before any cut
	Status    Status    `json:"status"`
	Decided   time.Time `json:"decided,omitzero"`
	By        string    `json:"by,omitempty"`
}

// Review is the queue of held topics. Decisions are per topic, for every region. It is
// bounded: past Max entries the oldest decided ones go first, then the oldest pending.
// Review is safe for concurrent use: the worker holds topics while an operator decides.
type Review struct {
	mu   sync.Mutex
	max  int
	held map[string]*Held
}

// NewReview returns an empty queue of at most max entries (DefaultReviewMax when <= 0).
func NewReview(max int) *Review {
	if max <= 0 {
		max = DefaultReviewMax
	}
	return &Review{max: max, held: map[string]*Held{}}
}

// Hold records that topic was held from region's list for reason at now, and returns its
// status: a new entry is Pending; an existing one keeps its decision.
func (r *Review) Hold(topic, region, reason string, now time.Time, mentions, score float64) Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[topic]
	if h == nil {
		h = &Held{Topic: topic, FirstSeen: now, Status: Pending}
		r.held[topic] = h
		r.trim()
	}
	if !slices.Contains(h.Regions, region) {
		h.Regions = append(h.Regions, region)
		slices.Sort(h.Regions)
	}
	if !slices.Contains(h.Reasons, reason) {
		h.Reasons = append(h.Reasons, reason)
		slices.Sort(h.Reasons)
	}
	h.LastSeen, h.Mentions, h.Score = now, mentions, score
	return h.Status
}

// Status returns a topic's status and whether it is in the queue.
func (r *Review) Status(topic string) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.held[topic]; h != nil {
		return h.Status, true
	}
	return "", false
}

// Blocks reports whether a topic must stay off public lists: rejected, or pending as a
// never-seen topic. A topic pending only for its new-account share is listed (its score is
// already cut) while it waits.
func (r *Review) Blocks(topic string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[topic]
	return h != nil && (h.Status == Rejected || h.Status == Pending && slices.Contains(h.Reasons, ReasonNewTopic))
}

// Approve lets a held topic onto public lists.
func (r *Review) Approve(topic, by string, now time.Time) error {
	return r.decide(topic, by, now, Approved)
}

// Reject keeps a held topic off public lists until its decision expires.
func (r *Review) Reject(topic, by string, now time.Time) error {
	return r.decide(topic, by, now, Rejected)
}

func (r *Review) decide(topic, by string, now time.Time, s Status) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.held[topic]
	if h == nil {
		return fmt.Errorf("%s %q: %w", s, topic, ErrNotHeld)
	}
	h.Status, h.Decided, h.By = s, now, by
	return nil
}

// Prune drops decisions older than ttl (DefaultDecisionTTL when <= 0) and pending entries
// not seen for as long, and returns how many it dropped.
func (r *Review) Prune(now time.Time, ttl time.Duration) int {
	if ttl <= 0 {
		ttl = DefaultDecisionTTL
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, h := range r.held {
		last := h.LastSeen
		if h.Status != Pending {
			last = h.Decided
		}
		if now.Sub(last) > ttl {
			delete(r.held, k)
			n++
		}
	}
	return n
}

// trim enforces max; r.mu is held.
func (r *Review) trim() {
	for len(r.held) > r.max {
		var victim *Held
		for _, h := range r.held {
			if victim == nil || older(h, victim) {
				victim = h
			}
		}
		delete(r.held, victim.Topic)
	}
}

// older orders eviction: decided before pending, then by last activity, then by topic.
func older(a, b *Held) bool {
	if (a.Status == Pending) != (b.Status == Pending) {
		return a.Status != Pending
	}
	if !a.LastSeen.Equal(b.LastSeen) {
		return a.LastSeen.Before(b.LastSeen)
	}
	return a.Topic < b.Topic
}

// List returns the entries with the given status ("" for all), oldest first.
func (r *Review) List(status Status) []Held {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Held{}
	for _, h := range r.held {
		if status == "" || h.Status == status {
			c := *h
			c.Regions, c.Reasons = slices.Clone(h.Regions), slices.Clone(h.Reasons)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Held) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

// reviewFile is the persisted form: versioned JSON, small enough to checkpoint with the
// state or keep as one S3 object for `trending topics review`.
type reviewFile struct {
	Version int    `json:"version"`
	Max     int    `json:"max"`
	Held    []Held `json:"held"`
}

const reviewVersion = 1

// MarshalJSON encodes the queue, oldest first, so equal queues encode to equal bytes.
func (r *Review) MarshalJSON() ([]byte, error) {
	held := r.List("")
	r.mu.Lock()
	m := r.max
	r.mu.Unlock()
	return json.Marshal(reviewFile{Version: reviewVersion, Max: m, Held: held})
}

// UnmarshalJSON replaces the queue with the encoded one; the error wraps ErrCorrupt.
func (r *Review) UnmarshalJSON(b []byte) error {
	var f reviewFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: review queue: %v", ErrCorrupt, err)
	}
	if f.Version != reviewVersion {
		return fmt.Errorf("%w: review queue version %d, this build reads %d", ErrCorrupt, f.Version, reviewVersion)
	}
	if f.Max <= 0 || len(f.Held) > f.Max {
		return fmt.Errorf("%w: review queue of %d entries with max %d", ErrCorrupt, len(f.Held), f.Max)
	}
	held := make(map[string]*Held, len(f.Held))
	for i := range f.Held {
		h := &f.Held[i]
		switch h.Status {
		case Pending, Approved, Rejected:
		default:
			return fmt.Errorf("%w: review entry %q has status %q", ErrCorrupt, h.Topic, h.Status)
		}
		if h.Topic == "" || held[h.Topic] != nil {
			return fmt.Errorf("%w: review entry topic %q empty or repeated", ErrCorrupt, h.Topic)
		}
		held[h.Topic] = h
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max, r.held = f.Max, held
	return nil
}

// ReplaceWith makes r hold o's entries, so that callers holding r (an operator endpoint)
// see a restored queue.
func (r *Review) ReplaceWith(o *Review) {
	o.mu.Lock()
	m, held := o.max, o.held
	o.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.max, r.held = m, held
}

// Absorb adds o's entries for topics r does not hold, keeping r's own entries and decisions:
// a worker's one shared queue takes in each restored partition's queue this way, so a
// decision made since that partition's checkpoint is not undone. The bound still applies.
func (r *Review) Absorb(o *Review) {
	if o == r {
		return
	}
	held := o.List("")
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range held {
		if r.held[held[i].Topic] == nil {
			r.held[held[i].Topic] = &held[i]
		}
	}
	r.trim()
}

// Merge folds o's entries into r so that replicas of one queue converge whatever order they
// merge in (the shared queue in S3, SyncReview): holds are a union; per topic the later
// decision wins (any decision beats pending; at an equal time rejected beats approved, then
// the greater By), lists and reasons are unions, FirstSeen the earliest and the last
// sighting the latest. A restored partition's queue merged this way cannot undo a newer
// decision, as with Absorb. The bound still applies.
func (r *Review) Merge(o *Review) {
	if o == r {
		return
	}
	held := o.List("")
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range held {
		b := &held[i]
		a := r.held[b.Topic]
		if a == nil {
			r.held[b.Topic] = b
			continue
		}
		mergeHeld(a, b)
	}
	r.trim()
}

// mergeHeld folds b into a; see Merge.
func mergeHeld(a, b *Held) {
	if laterDecision(b, a) {
		a.Status, a.Decided, a.By = b.Status, b.Decided, b.By
	}
	a.Regions = union(a.Regions, b.Regions)
	a.Reasons = union(a.Reasons, b.Reasons)
	if !b.FirstSeen.IsZero() && (a.FirstSeen.IsZero() || b.FirstSeen.Before(a.FirstSeen)) {
		a.FirstSeen = b.FirstSeen
	}
	switch c := b.LastSeen.Compare(a.LastSeen); {
	case c > 0:
		a.LastSeen, a.Mentions, a.Score = b.LastSeen, b.Mentions, b.Score
	case c == 0:
		// Two workers saw it at the same instant: keep the larger figures, so the order of
		// merging does not matter.
		a.Mentions, a.Score = max(a.Mentions, b.Mentions), max(a.Score, b.Score)
	}
}

// laterDecision reports whether b's decision supersedes a's.
func laterDecision(b, a *Held) bool {
	if c := b.Decided.Compare(a.Decided); c != 0 {
		return c > 0
	}
	rank := map[Status]int{Pending: 0, Approved: 1, Rejected: 2}
	if rb, ra := rank[b.Status], rank[a.Status]; rb != ra {
		return rb > ra
	}
	return b.By > a.By
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}
