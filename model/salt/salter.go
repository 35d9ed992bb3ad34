package salt

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"trending/internal/setting"
)

// Set is a hot set: the salted items and their ways. Entries from configuration are kept for
// good; detected ones until their Until. Safe for concurrent use.
type Set struct {
	mu sync.RWMutex
	m  map[string]Entry
}

// NewSet returns a set holding entries (configured ones, usually).
func NewSet(entries ...Entry) *Set {
	s := &Set{m: map[string]Entry{}}
	for _, e := range entries {
		s.Put(e)
	}
	return s
}

// Put adds or updates an entry and reports whether the set changed. A configured entry (no
// Until) is never replaced by a detected one; between detected ones the later Until wins.
func (s *Set) Put(e Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[e.Item]
	switch {
	case !ok, e.Until.IsZero() && cur != e:
	case cur.Until.IsZero(), !e.Until.After(cur.Until):
		return false
	}
	s.m[e.Item] = e
	return true
}

// Ways returns how many sub-keys item is spread over at now: 0 when it is not salted (or its
// entry expired).
func (s *Set) Ways(item string, now time.Time) int {
	s.mu.RLock()
	e, ok := s.m[item]
	s.mu.RUnlock()
	if !ok || (!e.Until.IsZero() && !now.Before(e.Until)) {
		return 0
	}
	return e.Ways
}

// Entries returns the entries in force at now, by item.
func (s *Set) Entries(now time.Time) []Entry {
	s.mu.RLock()
	out := make([]Entry, 0, len(s.m))
	for _, e := range s.m {
		if e.Until.IsZero() || now.Before(e.Until) {
			out = append(out, e)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Item, b.Item) })
	return out
}

// Config configures a Salter's detection. Start from DefaultConfig: a zero Threshold means
// no detection; NewSalter refuses Ways and Hold that cannot work, by the field's name.
type Config struct {
	// Threshold: an item whose messages through this producer reach Threshold within one
	// wall-clock second is detected hot and salted. Producers pre-sum (per server and second,
	// or per second at ingest), so this counts messages after pre-summing: what a partition's
	// speed worker pays for. 0 (the default) detects nothing: only the items of the set
	// (configured, or detected by another producer) are salted. Negative is refused.
	Threshold int
	// Ways a detected item is spread over, MinWays..MaxWays; default DefaultWays.
	Ways int
	// Hold: a detected item stays salted for this long after it last reached Threshold.
	// Positive; default 10m.
	Hold time.Duration
	// By names this producer in the entries it detects ("ingest", "loadgen").
	By string
}

// DefaultConfig returns the defaults: no detection, DefaultWays, a 10-minute hold.
func DefaultConfig() Config { return Config{Ways: DefaultWays, Hold: 10 * time.Minute} }

// Validate reports every setting that cannot work, each naming its field.
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.Threshold < 0 {
		errs = append(errs, setting.Invalid("Threshold", "%d: must not be negative (0: no detection)", c.Threshold))
	}
	if c.Ways < MinWays || c.Ways > MaxWays {
		errs = append(errs, setting.Invalid("Ways", "%d: must be %d to %d (default %d)", c.Ways, MinWays, MaxWays, d.Ways))
	}
	if c.Hold <= 0 {
		errs = append(errs, setting.Invalid("Hold", "%s: must be positive (default %s)", c.Hold, d.Hold))
	}
	return errors.Join(errs...)
}

// Salter keys one producer's messages. A salted item's messages take its sub-keys in turn
// (round robin from a random first one, so producers do not all start on sub-key 0): N
// messages a second spread evenly over N partitions whatever their order. With a Threshold it
// also detects hot items: it counts each item's messages per wall-clock second, and an item
// that reaches the threshold is put in the set and handed to the hot callback (which shares
// it with the other producers) at once, then again whenever its entry is about to lapse
// while it stays hot. Safe for concurrent use.
type Salter struct {
	cfg   Config
	set   *Set
	onHot func(Entry)

	mu     sync.Mutex
	next   map[string]uint32    // each salted item's next sub-key
	sec    int64                // the wall-clock second counts is for
	counts map[string]int       // messages per item in that second
	shared map[string]time.Time // the Until last handed to onHot, per item
}

// NewSalter returns a Salter over set; onHot (nil: none) receives every entry it detects or
// renews and must not block.
func NewSalter(cfg Config, set *Set, onHot func(Entry)) (*Salter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if onHot == nil {
		onHot = func(Entry) {}
	}
	return &Salter{cfg: cfg, set: set, onHot: onHot, next: map[string]uint32{}, counts: map[string]int{}, shared: map[string]time.Time{}}, nil
}

// Set is the hot set the Salter keys by.
func (s *Salter) Set() *Set { return s.set }

// Key returns the Kafka key of one message of item sent at now and, when the item is
// salted, the value of Header to send with it (nil when not).
func (s *Salter) Key(item string, now time.Time) (key string, header []byte) {
	if s.cfg.Threshold > 0 {
		s.detect(item, now)
	}
	ways := s.set.Ways(item, now)
	if ways == 0 {
		return item, nil
	}
	s.mu.Lock()
	i, ok := s.next[item]
	if !ok {
		i = rand.Uint32N(uint32(ways))
	}
	i %= uint32(ways)
	s.next[item] = i + 1
	s.mu.Unlock()
	return Key(item, int(i)), HeaderValue(int(i), ways)
}

// detect counts one message of item in now's second.
func (s *Salter) detect(item string, now time.Time) {
	s.mu.Lock()
	if sec := now.Unix(); sec != s.sec {
		s.sec = sec
		clear(s.counts)
	}
	s.counts[item]++
	if s.counts[item] < s.cfg.Threshold {
		s.mu.Unlock()
		return
	}
	// Hot: renew the entry once half its hold has passed, not every message.
	e := Entry{Item: item, Ways: s.cfg.Ways, Until: now.Add(s.cfg.Hold), By: s.cfg.By}
	last := s.shared[item]
	due := last.Sub(now) < s.cfg.Hold/2
	if due {
		s.shared[item] = e.Until
	}
	s.mu.Unlock()
	if due {
		s.set.Put(e)
		s.onHot(e)
	}
}
