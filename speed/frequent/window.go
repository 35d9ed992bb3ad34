package frequent

import (
	"fmt"
	"math"
)

// Window is a sliding window of bucket summaries (one per closed minute,
// hour or day) that answers "the summary of the buckets in the window"
// without re-merging them all on every query. A Misra-Gries summary cannot
// subtract an expired bucket, as a count-min sketch does, so the window uses
// the two-stacks sliding-window aggregation (Tangwongsan, Hirzel, Schneider,
// "General Incremental Sliding-Window Aggregation", VLDB 2015): new buckets
// go on a back list whose merge is kept running; the oldest leave from a
// front stack that holds, for every bucket, the merge of it and all newer
// front buckets. When the front runs empty, the back is flipped into it.
// A query merges two summaries: the front's top and the back's running one.
// Each bucket takes part in O(1) merges over its life, so a slide costs an
// amortised constant number of merges of m-counter summaries.
//
// The bound is the merged summary's own: a merge of summaries keeps
// lower <= true <= upper and D*(m+1) <= N-C whatever the order and grouping
// (docs/format/frequent.md, "The bound"), so the window's summary states D
// exactly, at most N/(m+1) of the window's views N. The price is memory: the
// front's suffix merges double the buckets' summaries at worst (2 x L x m
// counters for L buckets).
//
// A Window is not safe for concurrent use.
type Window struct {
	m     int
	front []frontEntry // oldest last: front[len-1] is the oldest bucket
	back  []bucket     // oldest first
	agg   *Summary     // merge of back
}

type bucket struct {
	start int64
	s     *Summary
}

type frontEntry struct {
	bucket
	suffix *Summary // merge of this bucket and every newer front bucket
}

// NewWindow returns an empty window of buckets of capacity m.
func NewWindow(cfg Config) (*Window, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Window{m: cfg.Capacity, agg: newSummary(cfg.Capacity)}, nil
}

// Push adds the newest closed bucket, which starts at start (any unit, the
// window core's minute numbers), after every bucket already in. The window
// keeps s; the caller must not change it afterwards. A start at or before
// the newest bucket's, or a summary of another capacity, is refused.
func (w *Window) Push(start int64, s *Summary) error {
	if s == nil || s.m != w.m {
		return fmt.Errorf("%w: push into a window of capacity %d", ErrIncompatible, w.m)
	}
	if n, ok := w.newest(); ok && start <= n {
		return fmt.Errorf("%w: bucket %d pushed after bucket %d", ErrIncompatible, start, n)
	}
	if err := w.agg.Merge(s); err != nil {
		return err
	}
	w.agg.Compact()
	w.back = append(w.back, bucket{start, s})
	return nil
}

func (w *Window) newest() (int64, bool) {
	switch {
	case len(w.back) > 0:
		return w.back[len(w.back)-1].start, true
	case len(w.front) > 0:
		return w.front[0].start, true
	}
	return 0, false
}

// Expire drops every bucket that starts before from.
func (w *Window) Expire(from int64) {
	for {
		if len(w.front) == 0 {
			if len(w.back) == 0 || w.back[0].start >= from {
				return
			}
			w.flip()
		}
		if w.front[len(w.front)-1].start >= from {
			return
		}
		w.front[len(w.front)-1] = frontEntry{}
		w.front = w.front[:len(w.front)-1]
	}
}

// flip moves the back list into the front stack, computing the suffix
// merges from the newest bucket to the oldest.
func (w *Window) flip() {
	w.front = w.front[:0]
	var run *Summary
	for i := len(w.back) - 1; i >= 0; i-- {
		b := w.back[i]
		if run == nil {
			run = b.s.Clone()
		} else {
			run = run.Clone()
			if err := run.Merge(b.s); err != nil {
				panic("BUG: frequent: merge of equal capacities failed: " + err.Error())
			}
			run.Compact()
		}
		w.front = append(w.front, frontEntry{bucket: b, suffix: run})
	}
	clear(w.back)
	w.back = w.back[:0]
	w.agg.Reset()
}

// Len returns the number of buckets in the window.
func (w *Window) Len() int { return len(w.front) + len(w.back) }

// Summary returns a new summary of every bucket in the window, compacted to
// m counters. Its MaxError is the window's bound.
func (w *Window) Summary() *Summary {
	out := w.agg.Clone()
	if len(w.front) > 0 {
		if err := out.Merge(w.front[len(w.front)-1].suffix); err != nil {
			panic("BUG: frequent: merge of equal capacities failed: " + err.Error())
		}
	}
	out.Compact()
	return out
}

// Buckets returns the window's buckets, oldest first, and how many of the oldest sit in
// the front stack: with RestoreWindow, what a snapshot keeps. The summaries are the
// window's own; the caller must not change them.
func (w *Window) Buckets() (starts []int64, sums []*Summary, nFront int) {
	for i := len(w.front) - 1; i >= 0; i-- {
		starts, sums = append(starts, w.front[i].start), append(sums, w.front[i].s)
	}
	for _, b := range w.back {
		starts, sums = append(starts, b.start), append(sums, b.s)
	}
	return starts, sums, len(w.front)
}

// RestoreWindow rebuilds a window from Buckets' answer. The front's suffix merges and the
// back's running merge are recomputed in the order the window computed them, so the
// restored window answers exactly as the one saved (a merge of compacted summaries is a
// function of their contents, not of their tables' order). Starts must increase and every
// summary have cfg's capacity (ErrIncompatible).
func RestoreWindow(cfg Config, starts []int64, sums []*Summary, nFront int) (*Window, error) {
	w, err := NewWindow(cfg)
	if err != nil {
		return nil, err
	}
	if len(starts) != len(sums) || nFront < 0 || nFront > len(sums) {
		return nil, fmt.Errorf("%w: %d starts, %d summaries, %d in front", ErrIncompatible, len(starts), len(sums), nFront)
	}
	for i, s := range sums {
		if s == nil || s.m != w.m || (i > 0 && starts[i] <= starts[i-1]) {
			return nil, fmt.Errorf("%w: bucket %d of a window of capacity %d", ErrIncompatible, i, w.m)
		}
	}
	for i := range nFront {
		w.back = append(w.back, bucket{starts[i], sums[i]})
	}
	if nFront > 0 {
		w.flip()
	}
	for i := nFront; i < len(sums); i++ {
		if err := w.Push(starts[i], sums[i]); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// AddCounts adds exact counts, each item once (a closed minute), as one step: every count
// is added, then the table compacted if it passed 2m counters. Unlike Adds one by one, the
// result does not depend on the order of items.
func (s *Summary) AddCounts(items []string, counts []uint64) {
	for i, item := range items {
		n := counts[i]
		if n == 0 {
			continue
		}
		if s.total+n < s.total {
			n = math.MaxUint64 - s.total
		}
		s.total += n
		if j, ok := s.idx[item]; ok {
			s.vals[j] += n
			continue
		}
		s.push(item, n)
	}
	if len(s.vals) > 2*s.m {
		s.compact()
	}
}

// SummaryFrom returns a new summary of the buckets starting at from or later, compacted to
// m counters, without expiring the others: what the window would answer after
// Expire(from), for a list that looks ahead (a live list whose open minutes would expire
// the oldest buckets). While the buckets left out are all in the front stack it costs one
// merge, as Summary does; otherwise it merges the back's kept buckets one by one.
func (w *Window) SummaryFrom(from int64) *Summary {
	i := len(w.front) - 1 // the oldest front bucket at or after from
	for i >= 0 && w.front[i].start < from {
		i--
	}
	if i == len(w.front)-1 && (len(w.back) == 0 || len(w.front) > 0 || w.back[0].start >= from) {
		return w.Summary() // nothing left out
	}
	out := newSummary(w.m)
	if i >= 0 {
		out = w.front[i].suffix.Clone()
	}
	if len(w.back) == 0 || w.back[0].start >= from {
		mustMerge(out, w.agg)
		return out
	}
	for _, b := range w.back {
		if b.start >= from {
			mustMerge(out, b.s)
		}
	}
	return out
}

func mustMerge(s, o *Summary) {
	if err := s.Merge(o); err != nil {
		panic("BUG: frequent: merge of equal capacities failed: " + err.Error())
	}
	s.Compact()
}
