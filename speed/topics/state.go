package topics

import (
	"trending/model/topicrules"

	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"trending/internal/setting"
	"trending/speed/sketch"
)

// State defaults.
const (
	// DefaultWidth and DefaultDepth are the minute sketch of docs/requirements.md:
	// 5 x 65,536. The design counts in 4-byte cells (1.31 MB); ours are 8 bytes
	// (speed/sketch), 2.62 MB, so a window of tenths can never overflow.
	DefaultWidth = 1 << 16
	DefaultDepth = 5
	// DefaultBaselineWidth is the hourly sketch's width: the minute sketch's (seed 001), so
	// the expected count's bound equals the window's: e/65,536 x an hour's counts, a quarter
	// of it for 15 minutes, 20 mentions at the peak of 271 events a second. A closed hour
	// leaves memory once it is saved to the object store (Unsaved, Saved); the baseline
	// holds only the BaselineDays same-hour sketches of the current hour (NeedBaseline,
	// SetBaseline), 7 x 2.62 MB.
	DefaultBaselineWidth = DefaultWidth
	// DefaultUnsavedHours bounds the closed hours a State keeps waiting for the object store:
	// a day, 63 MB at the default width, so a store that is down for days cannot grow a
	// partition past it.
	DefaultUnsavedHours = 24
	// DefaultWindow is the list window: the last 15 minutes.
	DefaultWindow = 15 * time.Minute
	// DefaultCandidates is the candidate set per list (200 keys: enough headroom over the 50
	// served that a rising topic is already a candidate when it reaches the list).
	DefaultCandidates = 200
	// DefaultHalfLife is the decayed score's half-life.
	DefaultHalfLife = 5 * time.Minute
)

// keySep separates a list name from a topic in a sketch key. The event decoder rejects
// control characters in both, so "us"+sep+"a" can never equal "usa"+sep+"" or any other
// pair.
const keySep = "\x1f"

// Config is one partition's trending-topics settings. Start from DefaultConfig: a zero field
// means zero, and every size below must be positive (New refuses a zero one by name).
type Config struct {
	// Regions are the regional lists, besides topicrules.World. Each is 1-64 bytes with no control
	// characters, unique, not "world". A mention from a region not listed counts towards
	// topicrules.World only. Default none.
	Regions []string
	// Scores sets each list's score by name (topicrules.World or a region). A list not named uses
	// topicrules.Volume.
	Scores map[string]topicrules.Score
	// Window is the list window, whole minutes from 1 to 60. Default 15 minutes.
	Window time.Duration
	// Width, Depth and Seed shape the minute sketches (and the running window sketch).
	// Defaults 65,536, 5 and 0; a zero Width or Depth is refused, a zero Seed is seed 0.
	// Every mention adds two keys, so the width is twice what the topics alone would need.
	Width, Depth int
	Seed         uint64
	// BaselineWidth is the hourly sketches' width (same depth and seed). Default 65,536,
	// the minute sketches' (DefaultBaselineWidth).
	BaselineWidth int
	// UnsavedHours is the most closed hours kept in memory until the object store has them
	// (Unsaved, Saved), 1 to BaselineDays x 24. Beyond it the oldest is dropped
	// (UnsavedDropped counts them): its presence bitmap stays, so the hold rule still knows
	// what it saw, but the baseline loses that day. Without a store (a demo, a test) the
	// baseline is what this keeps. Default 24.
	UnsavedHours int
	// BaselineDays is the number of past days whose same clock hour averages into the
	// expected count, 1 to 28. Default 7.
	BaselineDays int
	// Candidates is the candidate set per list, >= ListSize. Default 200.
	Candidates int
	// ListSize is the length of a public list, 1 to 1,000. Default 50.
	ListSize int
	// Surge is the surge score's settings (c, floor, hysteresis). Default
	// topicrules.DefaultSurgeConfig(); its Floor 0 means no floor.
	Surge topicrules.SurgeConfig
	// HalfLife is the decayed score's half-life, 1 minute or more. Default 5 minutes.
	HalfLife time.Duration
	// Dedupe sizes the user-per-topic table. Default DefaultDedupeConfig().
	Dedupe DedupeConfig
	// Weight is the account-age weighting and review cut. Default
	// topicrules.DefaultWeightConfig(); its NewAccountAge 0 makes no account new.
	Weight topicrules.WeightConfig
	// ReviewMax bounds the review queue, at least 1. Default 10,000.
	ReviewMax int
}

// DefaultConfig returns the default settings (docs/requirements.md, "Trending topics") with no
// regions. It is the one place the defaults live.
func DefaultConfig() Config {
	return Config{
		Window:        DefaultWindow,
		Width:         DefaultWidth,
		Depth:         DefaultDepth,
		BaselineWidth: DefaultBaselineWidth,
		BaselineDays:  topicrules.DefaultBaselineDays,
		UnsavedHours:  DefaultUnsavedHours,
		Candidates:    DefaultCandidates,
		ListSize:      topicrules.DefaultListSize,
		Surge:         topicrules.DefaultSurgeConfig(),
		HalfLife:      DefaultHalfLife,
		Dedupe:        DefaultDedupeConfig(),
		Weight:        topicrules.DefaultWeightConfig(),
		ReviewMax:     topicrules.DefaultReviewMax,
	}
}

// invalid is a setting error for field (internal/setting) that also wraps topicrules.ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", topicrules.ErrConfig, setting.Invalid(field, format, args...))
}

// nest names every setting error in err (from a nested config's Validate) as a field of
// parent, "Surge.Floor" for parent "Surge" and field "Floor" (parent "" keeps the field's
// name), wrapping topicrules.ErrConfig. An err without setting errors is returned as it is.
func nest(parent string, err error) error {
	es := setting.Errors(err)
	if len(es) == 0 {
		return err
	}
	out := make([]error, len(es))
	for i, e := range es {
		field := e.Field
		if parent != "" {
			field = parent + "." + field
		}
		out[i] = invalid(field, "%s", e.Problem)
	}
	return errors.Join(out...)
}

// Validate reports whether c can build a State; every error wraps topicrules.ErrConfig, each
// setting that cannot work also setting.ErrConfig with its field's name ("Window",
// "Surge.Floor"), and says what to change.
func (c Config) Validate() error {
	if err := topicrules.ValidateLists(c.Regions, c.Scores); err != nil {
		return err
	}
	var errs []error
	if c.Window < time.Minute || c.Window > time.Hour || c.Window%time.Minute != 0 {
		errs = append(errs, invalid("Window", "%v must be whole minutes from 1m to 60m (default %v)", c.Window, DefaultWindow))
	}
	if c.BaselineDays < 1 || c.BaselineDays > 28 {
		errs = append(errs, invalid("BaselineDays", "%d must be 1..28 (default %d)", c.BaselineDays, topicrules.DefaultBaselineDays))
	}
	if c.UnsavedHours < 1 || c.BaselineDays >= 1 && c.UnsavedHours > c.BaselineDays*24 {
		errs = append(errs, invalid("UnsavedHours", "%d must be 1..%d, the baseline's hours (default %d)", c.UnsavedHours, c.BaselineDays*24, DefaultUnsavedHours))
	}
	switch {
	case c.ListSize < 1 || c.ListSize > 1000:
		errs = append(errs, invalid("ListSize", "%d must be 1..1000 (default %d)", c.ListSize, topicrules.DefaultListSize))
	case c.Candidates < c.ListSize || c.Candidates > 10_000:
		errs = append(errs, invalid("Candidates", "%d must be from the list size %d to 10000 (default %d)", c.Candidates, c.ListSize, DefaultCandidates))
	}
	if c.HalfLife < time.Minute {
		errs = append(errs, invalid("HalfLife", "%v must be at least 1m (default %v)", c.HalfLife, DefaultHalfLife))
	}
	if c.ReviewMax < 1 {
		errs = append(errs, invalid("ReviewMax", "%d must be positive (default %d)", c.ReviewMax, topicrules.DefaultReviewMax))
	}
	minute := sketch.Config{Width: c.Width, Depth: c.Depth, Seed: c.Seed}
	if err := minute.Validate(); err != nil {
		errs = append(errs, nest("", err))
	}
	baseline := sketch.Config{Width: c.BaselineWidth, Depth: c.Depth, Seed: c.Seed}
	if err := baseline.Validate(); err != nil {
		// Depth is the minute sketches' too: report it once.
		for _, e := range setting.Errors(err) {
			if e.Field == "Width" {
				errs = append(errs, invalid("BaselineWidth", "%s", e.Problem))
			}
		}
	}
	if err := c.Surge.Validate(); err != nil {
		errs = append(errs, nest("Surge", err))
	}
	if err := c.Dedupe.Validate(); err != nil {
		errs = append(errs, nest("Dedupe", err))
	}
	if err := c.Weight.Validate(); err != nil {
		errs = append(errs, nest("Weight", err))
	}
	return errors.Join(errs...)
}

// Mention is one mention of a topic: what the event decoder hands the State.
type Mention struct {
	Topic  string
	Region string // "" or a region; an unconfigured region counts towards topicrules.World only
	// UserID, when set, deduplicates: a user counts once per topic per Dedupe.TTL.
	UserID string
	// NewAccount weighs the mention 3 tenths instead of 10 (topicrules.WeightConfig.IsNew turns the
	// event's account-age hint into it).
	NewAccount bool
	// TS is the event time: it picks the minute, so a replay lands where the first run did.
	TS time.Time
	// Count is how many mentions this is, for pre-summed anonymous events; 0 means 1. A
	// mention with a UserID always counts once: the user counts once per topic anyway.
	Count uint32
}

// Stats counts what Add decided.
type Stats struct {
	Counted       uint64 // mentions counted
	Blocked       uint64 // dropped by the blocklist
	Duplicates    uint64 // dropped by the user-per-topic dedupe
	Late          uint64 // older than the window
	UnknownRegion uint64 // counted towards topicrules.World only
}

// list is one served list's state.
type list struct {
	name   string
	score  topicrules.Score
	seed   uint64 // key hash seed: KeyHash(cfg.Seed, name+sep), so a key never allocates
	cands  *candidates
	hyst   *topicrules.Hysteresis
	public []Ranked
}

// State is one partition's trending-topics state. It is not safe for concurrent use; its
// topicrules.Review is.
type State struct {
	cfg    Config
	lists  []*list // lists[0] is topicrules.World
	byName map[string]*list

	minute  int64 // the newest minute seen (Unix minutes); -1 before the first mention
	ring    []*sketch.Sketch
	ringMin []int64
	window  *sketch.Sketch
	hours   map[int64]*sketch.Sketch // open hours (Unix hour): still taking mentions, at most 2
	// closed are the closed hours not yet saved to the object store (Saved drops them),
	// within the baseline depth: without a store they are the whole baseline.
	closed map[int64]*sketch.Sketch
	// seen is, per closed hour of the baseline depth, the cells above that hour's error
	// bound: the hold rule's "seen before", kept after the hour's sketch has left memory.
	seen map[int64]*sketch.Presence
	// dropped counts the closed hours dropped unsaved (UnsavedHours).
	dropped uint64
	// base holds the loaded same-hour sketches of baseHour's baseline by Unix hour, and
	// baseWant the state of each of its BaselineDays days.
	base     map[int64]*sketch.Sketch
	baseHour int64
	baseWant map[int64]dayState

	dedupe    *Dedupe
	blocklist *topicrules.Blocklist
	review    *topicrules.Review
	stats     Stats
}

// New returns an empty State, or an error wrapping topicrules.ErrConfig. blocklist may be nil (nothing
// is blocked); it is shared, so one reload serves every partition.
func New(cfg Config, blocklist *topicrules.Blocklist) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, err := NewDedupe(cfg.Dedupe)
	if err != nil {
		return nil, err
	}
	if blocklist == nil {
		blocklist = topicrules.NewBlocklist()
	}
	n := int(cfg.Window / time.Minute)
	s := &State{
		cfg:       cfg,
		byName:    map[string]*list{},
		minute:    -1,
		ring:      make([]*sketch.Sketch, n),
		ringMin:   make([]int64, n),
		hours:     map[int64]*sketch.Sketch{},
		closed:    map[int64]*sketch.Sketch{},
		seen:      map[int64]*sketch.Presence{},
		base:      map[int64]*sketch.Sketch{},
		baseHour:  -1,
		dedupe:    d,
		blocklist: blocklist,
		review:    topicrules.NewReview(cfg.ReviewMax),
	}
	mcfg := sketch.Config{Width: cfg.Width, Depth: cfg.Depth, Seed: cfg.Seed}
	for i := range s.ring {
		s.ring[i] = mustSketch(mcfg)
		s.ringMin[i] = -1
	}
	s.window = mustSketch(mcfg)
	for _, name := range append([]string{topicrules.World}, cfg.Regions...) {
		sc, _ := topicrules.ParseScore(string(cfg.Scores[name]))
		l := &list{
			name:  name,
			score: sc,
			seed:  sketch.KeyHashString(cfg.Seed, name+keySep),
			cands: newCandidates(cfg.Candidates, n),
			hyst:  topicrules.NewHysteresis(cfg.Surge.Enter, cfg.Surge.Stay),
		}
		s.lists = append(s.lists, l)
		s.byName[name] = l
	}
	return s, nil
}

func mustSketch(c sketch.Config) *sketch.Sketch {
	sk, err := sketch.New(c)
	if err != nil {
		panic("BUG: validated sketch config rejected: " + err.Error())
	}
	return sk
}

// Config returns the configuration with defaults filled in.
func (s *State) Config() Config { return s.cfg }

// topicrules.Review returns the review queue, safe for concurrent use.
func (s *State) Review() *topicrules.Review { return s.review }

// ShareReview makes the State hold and decide against r instead of its own queue, so one
// queue (and one operator endpoint) serves every partition of a process. Call it after New
// and after each Restore, having r.Absorb the restored queue (Restore replaces the State's
// queue, not r). Snapshots then carry the shared queue.
func (s *State) ShareReview(r *topicrules.Review) {
	if r == nil {
		panic("BUG: ShareReview(nil)")
	}
	s.review = r
}

// Stats returns what Add decided so far.
func (s *State) Stats() Stats { return s.stats }

// Dedupe returns the dedupe table's statistics.
func (s *State) DedupeStats() DedupeStats { return s.dedupe.Stats() }

// Minute returns the newest minute seen (Unix minutes), -1 before any mention.
func (s *State) Minute() int64 { return s.minute }

// Bytes returns the memory of the counting state: sketches, the dedupe table and the
// candidate sets at capacity. It depends on the configuration and on how many hourly
// sketches are in memory (the open hours, the closed ones not saved yet, the loaded baseline
// and one presence bitmap per closed hour), never on how many topics were seen.
func (s *State) Bytes() int {
	b := (len(s.ring)+1)*s.window.Config().Bytes() + s.dedupe.Bytes()
	for _, m := range []map[int64]*sketch.Sketch{s.hours, s.closed, s.base} {
		for _, h := range m {
			b += h.Config().Bytes()
		}
	}
	for _, p := range s.seen {
		b += p.Bytes()
	}
	// A candidate: the struct, a share ring of 24 bytes a minute, a map entry, and a topic
	// of at most 256 bytes (event.MaxItemIDBytes).
	per := 64 + 24*len(s.ring) + 48 + 256
	return b + len(s.lists)*s.cfg.Candidates*per
}

// Add counts one mention. It returns false when the mention was dropped (blocked,
// duplicate or late).
func (s *State) Add(m Mention) bool {
	if s.blocklist.Blocked(m.Topic) {
		s.stats.Blocked++
		return false
	}
	minute := m.TS.Unix() / 60
	if m.TS.Unix() < 0 && m.TS.Unix()%60 != 0 {
		minute-- // floor, not truncation
	}
	n := int64(len(s.ring))
	if s.minute >= 0 && minute <= s.minute-n {
		s.stats.Late++
		return false
	}
	if m.UserID != "" && !s.dedupe.First(PairHash(m.UserID, m.Topic), minute) {
		s.stats.Duplicates++
		return false
	}
	if minute > s.minute {
		s.advance(minute)
	}
	w := topicrules.Tenths(m.NewAccount)
	if m.Count > 1 && m.UserID == "" {
		w *= uint64(m.Count)
	}
	i := mod(minute, n)
	switch s.ringMin[i] {
	case minute:
	case -1:
		// A late mention for a minute that had none: claim the empty slot, or its counts
		// would never be subtracted when the minute expires.
		s.ringMin[i] = minute
	default:
		panic(fmt.Sprintf("BUG: ring slot %d holds minute %d, mention is for %d (newest %d)", i, s.ringMin[i], minute, s.minute))
	}
	slot := s.ring[i]
	hour := s.hourSketch(minute / 60)
	s.count(s.lists[0], m, slot, hour, minute, w)
	if m.Region != "" {
		if l := s.byName[m.Region]; l != nil && l != s.lists[0] {
			s.count(l, m, slot, hour, minute, w)
		} else {
			s.stats.UnknownRegion++
		}
	}
	s.stats.Counted++
	return true
}

func (s *State) count(l *list, m Mention, slot, hour *sketch.Sketch, minute int64, w uint64) {
	h := sketch.KeyHashString(l.seed, m.Topic)
	slot.AddHash(h, w)
	s.window.AddHash(h, w)
	hour.AddHash(h, w)
	l.cands.offer(m.Topic, h, s.window.EstimateHash(h), minute, w, m.NewAccount)
}

func mod(a, n int64) int64 {
	r := a % n
	if r < 0 {
		r += n
	}
	return r
}

// hourSketch returns the baseline sketch of a Unix hour, creating it.
func (s *State) hourSketch(hour int64) *sketch.Sketch {
	if h := s.hours[hour]; h != nil {
		return h
	}
	h := mustSketch(sketch.Config{Width: s.cfg.BaselineWidth, Depth: s.cfg.Depth, Seed: s.cfg.Seed})
	s.hours[hour] = h
	return h
}

// advance moves the newest minute to m: minutes that leave the window are subtracted from
// it and their slots reset, hours older than the baseline are dropped, and every
// candidate is re-estimated because its window moved.
func (s *State) advance(m int64) {
	n := int64(len(s.ring))
	for i := range s.ring {
		if s.ringMin[i] >= 0 && s.ringMin[i] <= m-n {
			if err := s.window.Subtract(s.ring[i]); err != nil {
				panic("BUG: window lost a minute it had merged: " + err.Error())
			}
			s.ring[i].Reset()
			s.ringMin[i] = -1
		}
	}
	s.ringMin[mod(m, n)] = m
	s.minute = m
	s.closeHours()
	s.moveBaseline()
	for _, l := range s.lists {
		l.cands.reestimate(s.window.EstimateHash)
	}
}

// Ranked is one topic of a list with its numbers and flags.
type Ranked struct {
	Topic    string  `json:"topic"`
	Mentions float64 `json:"mentions"` // the window count (an estimate: never low)
	Expected float64 `json:"expected"` // the baseline scaled to the window; 0 with no history
	Score    float64 `json:"score"`    // by the list's score, after any review cut
	NewShare float64 `json:"new_share"`
	// NoHistory: no hour of the baseline before the last two saw the topic beyond that
	// hour's sketch error: a never-seen topic.
	NoHistory bool `json:"no_history,omitempty"`
	// Review: over the review share of its weight came from new accounts; topicrules.Score was cut.
	Review bool `json:"review,omitempty"`
	// Held: a never-seen topic rising fast (no history, at least the surge floor of
	// mentions, and on its way onto the list) that is not approved yet, or a rejected one
	// (topicrules.Review.Blocks): kept off the public list.
	Held bool `json:"held,omitempty"`
	// Listed: on the public list after the last Refresh.
	Listed bool `json:"listed,omitempty"`
	// scored is false when the topic is below the floor.
	scored bool
}

// Rank scores every candidate of the named list (topicrules.World or a region) at the newest minute,
// best first. It changes nothing: Listed and topicrules.Held reflect the last Refresh.
func (s *State) Rank(name string) ([]Ranked, error) {
	l := s.byName[name]
	if l == nil {
		return nil, fmt.Errorf("list %q: %w", name, topicrules.ErrUnknownRegion)
	}
	return s.rank(l), nil
}

func (s *State) rank(l *list) []Ranked {
	out := make([]Ranked, 0, len(l.cands.e))
	cur := s.minute / 60
	for _, c := range l.cands.e {
		r := Ranked{Topic: c.topic, Mentions: float64(s.window.EstimateHash(c.hash)) / 10, scored: true}
		var same []float64
		for _, sk := range s.baseline(cur) {
			same = append(same, float64(sk.EstimateHash(c.hash))/10)
		}
		r.NoHistory = !s.seenBefore(c.hash, cur)
		r.Expected = topicrules.Expected(same, s.cfg.Window)
		// The floor applies to every list before any score: only a topic with at least
		// Surge.Floor mentions in the window can be listed (300 by default, far above the
		// sketch's overcount of about 20), which is what keeps
		// a flood of junk tags, each a few mentions plus sketch noise, off volume lists too.
		r.scored = r.Mentions >= s.cfg.Surge.Floor
		switch l.score {
		case topicrules.Surge:
			r.Score, r.scored = s.cfg.Surge.Score(r.Mentions, r.Expected)
		case topicrules.Decayed:
			counts := make([]float64, len(s.ring))
			for i, m := range s.ringMin {
				if m >= 0 {
					counts[s.minute-m] = float64(s.ring[i].EstimateHash(c.hash)) / 10
				}
			}
			r.Score = topicrules.DecayedSum(counts, s.cfg.HalfLife)
		default:
			r.Score = r.Mentions
		}
		if share, _ := c.share.Value(s.minute); share > s.cfg.Weight.ReviewShare {
			r.NewShare, r.Review = share, true
			r.Score *= s.cfg.Weight.ReviewCut
		} else {
			r.NewShare = share
		}
		r.Listed = slices.ContainsFunc(l.public, func(p Ranked) bool { return p.Topic == c.topic })
		r.Held = s.review.Blocks(c.topic)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

// Refresh recomputes every public list at now (the time recorded on review entries) and
// returns them by list name. Call it once a minute: it advances the hysteresis, and it
// holds never-seen topics that would enter a list until topicrules.Review approves them, and sends
// topics whose weight is mostly from new accounts to review.
//
// Every list needs the floor (topicrules.Surge.Floor, 300 mentions in the window); surge lists add the
// hysteresis (enter at 3, stay until below 2); volume and decayed lists are the top ListSize
// by score.
func (s *State) Refresh(now time.Time) map[string][]Ranked {
	out := make(map[string][]Ranked, len(s.lists))
	for _, l := range s.lists {
		ranked := s.rank(l)
		scored := make(map[string]bool, len(ranked))
		public := make([]Ranked, 0, s.cfg.ListSize)
		for i := range ranked {
			r := &ranked[i]
			if !r.scored {
				continue
			}
			scored[r.Topic] = true
			listed := true
			if l.score == topicrules.Surge {
				listed = l.hyst.Update(r.Topic, r.Score)
			}
			if !listed || len(public) == s.cfg.ListSize {
				r.Listed = false
				continue
			}
			if r.Review {
				s.review.Hold(r.Topic, l.name, topicrules.ReasonNewAccounts, now, r.Mentions, r.Score/s.cfg.Weight.ReviewCut)
			}
			// Never seen and rising fast: no history, and at least the floor in the window
			// (a handful of mentions of a new tag is not an event worth a person's look).
			if r.NoHistory && r.Mentions >= s.cfg.Surge.Floor {
				if st, known := s.review.Status(r.Topic); !known || st != topicrules.Approved {
					s.review.Hold(r.Topic, l.name, topicrules.ReasonNewTopic, now, r.Mentions, r.Score)
				}
			}
			if s.review.Blocks(r.Topic) {
				r.Held, r.Listed = true, false
				continue
			}
			r.Listed = true
			public = append(public, *r)
		}
		l.hyst.Retain(func(t string) bool { return scored[t] })
		l.public = public
		out[l.name] = public
	}
	return out
}

// List returns the named list (topicrules.World or a region) as of the last Refresh, or an error
// wrapping ErrUnknownRegion: the API's region= validation.
func (s *State) List(name string) ([]Ranked, error) {
	l := s.byName[name]
	if l == nil {
		return nil, fmt.Errorf("list %q: %w", name, topicrules.ErrUnknownRegion)
	}
	return slices.Clone(l.public), nil
}

// Lists returns the list names, topicrules.World first.
func (s *State) Lists() []string {
	out := make([]string, len(s.lists))
	for i, l := range s.lists {
		out[i] = l.name
	}
	return out
}

// ErrorBound returns the window sketch's overcount bound in mentions: how far any
// Mentions figure may read high (with probability 1 - e^-Depth).
func (s *State) ErrorBound() float64 {
	b := s.window.ErrorBound().MaxOvercount / 10
	if math.IsInf(b, 0) {
		return 0
	}
	return b
}
