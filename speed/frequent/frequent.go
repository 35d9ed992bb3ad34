// Package frequent owns the speed layer's guaranteed heavy-hitter summary: a
// Misra-Gries summary (the counter-based family of Space-Saving, Metwally,
// Agrawal and El Abbadi 2005) that keeps at most Capacity counters and proves,
// for every item, lower <= true count <= upper, whatever the stream.
//
// The guarantee (docs/format/frequent.md, "The bound"): the summary holds an
// offset D, the total ever subtracted from any one counter, and
//
//	Lower(x) = c(x)            (0 for an item without a counter)
//	Upper(x) = c(x) + D
//	D <= (N - C) / (Capacity+1) <= N / (Capacity+1)
//
// where N is Total() and C the sum of the counters kept. So every item with
// more than D views has a counter ("no item with more than D views is
// missing"), and D is known exactly, not only its a-priori limit. A count-min
// sketch's bound holds per item with probability 1-e^-d; this one holds for
// every item always.
//
// Merge is Agarwal et al.'s mergeable summary (PODS 2012): add the counters,
// add the offsets, and if more than Capacity counters remain subtract the
// (Capacity+1)-th largest from all and drop those at or below zero. The
// invariant D*(Capacity+1) <= N-C survives every Add and every Merge, so the
// bound holds after any number of merges in any order: minute buckets into a
// window, partitions into a list. ClickHouse's topK merges Filtered
// Space-Saving states with no such bound (their issue #73507).
//
// Determinism: the result depends only on the sequence of Adds and Merges,
// never on map iteration order: a compaction keeps exactly the counters above
// the (Capacity+1)-th largest value, a set that ties cannot change, and every
// listing is ordered by count descending, then item ascending.
//
// A Summary is not safe for concurrent use; concurrent reads with no writer
// are.
package frequent

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"trending/internal/setting"
)

const (
	// DefaultCapacity is 4,096 counters: a bound of N/4,097 on every item,
	// 0.024% of the window's views.
	DefaultCapacity = 4096
	// MaxCapacity bounds Capacity at 2^24 counters, so a corrupt header
	// cannot ask for gigabytes of table.
	MaxCapacity = 1 << 24
)

// Config is the size of a summary. Summaries merge only when their Capacity
// is equal. Start from DefaultConfig: a zero Capacity is refused.
type Config struct {
	// Capacity is m, the counters a summary keeps at rest, 1..MaxCapacity.
	// Between compactions Add lets the table grow to 2m entries, so a
	// compaction (O(m)) runs at most once per m new items. The bound is
	// N/(m+1). DefaultConfig has DefaultCapacity.
	Capacity int
}

// DefaultConfig returns Capacity DefaultCapacity.
func DefaultConfig() Config { return Config{Capacity: DefaultCapacity} }

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c can build a summary; an error wraps ErrConfig
// and setting.ErrConfig and names the field.
func (c Config) Validate() error {
	switch {
	case c.Capacity == 0:
		return invalid("Capacity", "must be positive (default %d)", DefaultCapacity)
	case c.Capacity < 0 || c.Capacity > MaxCapacity:
		return invalid("Capacity", "%d is out of range: use 1..%d (default %d)", c.Capacity, MaxCapacity, DefaultCapacity)
	}
	return nil
}

// CapacityFor returns the smallest capacity whose a-priori bound N/(m+1) is
// at most maxError views for a window of total views: what `plan` sizes a
// window from. maxError 0 is refused by returning 0.
func CapacityFor(total, maxError uint64) int {
	if maxError == 0 {
		return 0
	}
	m := total / maxError // N/(m+1) <= e  <=>  m+1 >= N/e
	if m > MaxCapacity {
		return MaxCapacity + 1
	}
	return max(int(m), 1)
}

// AprioriBound returns N/(capacity+1), rounded down: the most the offset of
// any summary of capacity with total N can be, whatever was merged into it.
func AprioriBound(capacity int, total uint64) uint64 {
	return total / uint64(capacity+1)
}

// Summary is a Misra-Gries summary of capacity m: item -> counter, the total
// N of every count added or merged, and the offset D. The counters live in
// two parallel slices indexed from a map, so a hit costs one map lookup and
// the order of the slices (the order items arrived, compactions keeping it)
// is deterministic, unlike a map's.
type Summary struct {
	m       int
	idx     map[string]int32
	items   []string
	vals    []uint64
	total   uint64
	offset  uint64
	scratch []uint64
}

// New returns an empty summary.
func New(cfg Config) (*Summary, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newSummary(cfg.Capacity), nil
}

func newSummary(m int) *Summary {
	return &Summary{m: m, idx: make(map[string]int32)}
}

// Capacity returns m.
func (s *Summary) Capacity() int { return s.m }

// Total returns N, the sum of every count added or merged in.
func (s *Summary) Total() uint64 { return s.total }

// MaxError returns D: every item's true count is at most its Lower plus D,
// and every item with more than D views has a counter.
func (s *Summary) MaxError() uint64 { return s.offset }

// Len returns the number of counters held (at most 2m; m after Compact).
func (s *Summary) Len() int { return len(s.vals) }

// Bytes estimates the memory of the table: per counter the item's bytes, a
// 16-byte string header, an 8-byte count and its map entry (taken as 32
// bytes: the key's header, the index and the map's overhead).
func (s *Summary) Bytes() int {
	n := 0
	for _, k := range s.items {
		n += len(k)
	}
	return n + 56*len(s.items)
}

// Add counts n more views of item. Counts saturate like the count-min
// sketch's: a total that would pass 2^64-1 cuts n.
func (s *Summary) Add(item []byte, n uint64) {
	if n == 0 {
		return
	}
	if i, ok := s.idx[string(item)]; ok {
		s.inc(i, n)
		return
	}
	s.insert(string(item), n)
}

// AddString is Add for a string item.
func (s *Summary) AddString(item string, n uint64) {
	if n == 0 {
		return
	}
	if i, ok := s.idx[item]; ok {
		s.inc(i, n)
		return
	}
	s.insert(strings.Clone(item), n)
}

func (s *Summary) inc(i int32, n uint64) {
	if s.total+n < s.total {
		n = math.MaxUint64 - s.total
	}
	s.total += n
	s.vals[i] += n
}

func (s *Summary) insert(item string, n uint64) {
	if s.total+n < s.total {
		n = math.MaxUint64 - s.total
		if n == 0 {
			return
		}
	}
	s.total += n
	s.push(item, n)
	if len(s.vals) > 2*s.m {
		s.compact()
	}
}

func (s *Summary) push(item string, n uint64) {
	s.idx[item] = int32(len(s.vals))
	s.items = append(s.items, item)
	s.vals = append(s.vals, n)
}

// Compact brings the summary down to at most m counters: it subtracts the
// (m+1)-th largest counter from every counter, drops those left at zero and
// adds the subtracted value to the offset. The top m+1 counters each lose
// exactly that value, so at least (m+1) times it leaves C, which is what
// keeps D*(m+1) <= N-C. A summary at or under m counters is unchanged.
func (s *Summary) Compact() {
	if len(s.vals) > s.m {
		s.compact()
	}
}

func (s *Summary) compact() {
	cut := kthLargest(append(s.scratch[:0], s.vals...), s.m+1)
	j := 0
	for i, c := range s.vals {
		k := s.items[i]
		if c <= cut {
			delete(s.idx, k)
			continue
		}
		s.items[j], s.vals[j] = k, c-cut
		s.idx[k] = int32(j)
		j++
	}
	clear(s.items[j:])
	s.items, s.vals = s.items[:j], s.vals[:j]
	s.offset += cut
}

// kthLargest returns the k-th largest of vals (1-based), reordering vals.
// Deterministic: the pivot is the median of three fixed positions.
func kthLargest(vals []uint64, k int) uint64 {
	lo, hi, want := 0, len(vals)-1, k-1 // index in descending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		a, b, c := vals[lo], vals[mid], vals[hi]
		p := max(min(a, b), min(max(a, b), c))
		// three-way partition, descending: > p, == p, < p
		i, lt, gt := lo, lo, hi
		for i <= gt {
			switch v := vals[i]; {
			case v > p:
				vals[lt], vals[i] = vals[i], vals[lt]
				lt++
				i++
			case v < p:
				vals[gt], vals[i] = vals[i], vals[gt]
				gt--
			default:
				i++
			}
		}
		switch {
		case want < lt:
			hi = lt - 1
		case want > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return vals[want]
}

// Merge adds o into s (Agarwal et al.): counters summed per item, offsets
// and totals added, then compacted if the table passed 2m counters. Call
// Compact after the last merge for the m-counter form. Both must have the
// same capacity (ErrIncompatible); a total past 2^64-1 is ErrOverflow. On
// error s is unchanged.
func (s *Summary) Merge(o *Summary) error {
	if o == nil || s.m != o.m {
		return fmt.Errorf("%w: merge", ErrIncompatible)
	}
	if s.total+o.total < s.total || s.offset+o.offset < s.offset {
		return fmt.Errorf("%w: merge", ErrOverflow)
	}
	s.total += o.total
	s.offset += o.offset
	n := len(o.vals) // o may be s
	for i := 0; i < n; i++ {
		k, c := o.items[i], o.vals[i]
		if j, ok := s.idx[k]; ok {
			s.vals[j] += c
			continue
		}
		s.push(k, c)
		if len(s.vals) > 2*s.m {
			s.compact()
		}
	}
	return nil
}

// counter returns item's counter and whether it has one.
func (s *Summary) counter(item string) (uint64, bool) {
	if i, ok := s.idx[item]; ok {
		return s.vals[i], true
	}
	return 0, false
}

// Lower returns the least item's true count can be: its counter, or 0.
func (s *Summary) Lower(item string) uint64 {
	c, _ := s.counter(item)
	return c
}

// Upper returns the most item's true count can be: its counter plus D.
func (s *Summary) Upper(item string) uint64 { return s.Lower(item) + s.offset }

// Reset empties s, keeping its capacity and table memory.
func (s *Summary) Reset() {
	clear(s.idx)
	clear(s.items)
	s.items, s.vals = s.items[:0], s.vals[:0]
	s.total, s.offset = 0, 0
}

// Clone returns a deep copy.
func (s *Summary) Clone() *Summary {
	c := &Summary{m: s.m, idx: make(map[string]int32, len(s.idx)), total: s.total, offset: s.offset,
		items: slices.Clone(s.items), vals: slices.Clone(s.vals)}
	for k, v := range s.idx {
		c.idx[k] = v
	}
	return c
}

// Equal reports whether s and o hold the same capacity, totals, offset and
// counters (in any order).
func (s *Summary) Equal(o *Summary) bool {
	if s.m != o.m || s.total != o.total || s.offset != o.offset || len(s.vals) != len(o.vals) {
		return false
	}
	for i, k := range s.items {
		if w, ok := o.counter(k); !ok || w != s.vals[i] {
			return false
		}
	}
	return true
}

// Entry is one counted item with the bounds on its true count.
type Entry struct {
	Item  string
	Lower uint64 // the counter: never above the truth
	Upper uint64 // Lower + MaxError: never below the truth
}

// Top returns the k entries with the largest lower bounds, count descending
// then item ascending (k <= 0: all of them). Ranking by the lower bound
// ranks by the counter, the same order as by the upper bound.
func (s *Summary) Top(k int) []Entry {
	out := make([]Entry, 0, len(s.vals))
	for i, item := range s.items {
		out = append(out, Entry{Item: item, Lower: s.vals[i], Upper: s.vals[i] + s.offset})
	}
	slices.SortFunc(out, compareEntries)
	if k > 0 && len(out) > k {
		out = out[:k:k]
	}
	return out
}

func compareEntries(a, b Entry) int {
	switch {
	case a.Lower > b.Lower:
		return -1
	case a.Lower < b.Lower:
		return 1
	}
	return strings.Compare(a.Item, b.Item)
}

// ErrorType selects which side a heavy-hitter query errs on, as in
// DataSketches' Frequent Items sketch.
type ErrorType int

const (
	// NoFalsePositives returns only items whose Lower is above the
	// threshold: each surely has more views than it, some with more may be
	// left out (those whose Lower is at or under it).
	NoFalsePositives ErrorType = iota
	// NoFalseNegatives returns every item whose Upper is above the
	// threshold: every item with more views than it is there, and some
	// listed may have fewer.
	NoFalseNegatives
)

// Frequent returns the entries qualifying above threshold views under et,
// in Top's order. With NoFalseNegatives and a threshold of at least
// MaxError, no item with more views than the threshold is missing, the
// guarantee the serving layer states.
func (s *Summary) Frequent(threshold uint64, et ErrorType) []Entry {
	var out []Entry
	for _, e := range s.Top(0) {
		v := e.Lower
		if et == NoFalseNegatives {
			v = e.Upper
		}
		if v > threshold {
			out = append(out, e)
		}
	}
	return out
}
