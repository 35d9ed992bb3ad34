package topk

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Scored is an item and a real-valued score: a decayed window's entry (speed/window, the
// partials, the merger), where each view weighs less the older it is, so a score is a sum of
// fractions rather than a count.
type Scored struct {
	Item  string  `json:"item"`
	Score float64 `json:"score"`
}

// CompareScored is the order of scored entries, as Compare is of counted ones: score
// descending, then item ascending. Scores are finite and not negative.
func CompareScored(a, b Scored) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return strings.Compare(a.Item, b.Item)
}

// SortScored sorts entries best first.
func SortScored(es []Scored) { slices.SortFunc(es, CompareScored) }

// MergeScored returns the global top k, best first, of per-partition lists of scored
// entries: Merge for scores, exact under the same condition (each item's score lives in one
// list). An item in two lists keeps the larger score, as Merge keeps the larger count.
// Returns nil when k <= 0.
func MergeScored(k int, lists ...[]Scored) []Scored {
	if k <= 0 {
		return nil
	}
	best := map[string]float64{}
	for _, l := range lists {
		for _, e := range l {
			if s, ok := best[e.Item]; !ok || e.Score > s {
				best[e.Item] = e.Score
			}
		}
	}
	out := make([]Scored, 0, len(best))
	for it, s := range best {
		out = append(out, Scored{it, s})
	}
	SortScored(out)
	if len(out) > k {
		out = out[:k:k]
	}
	return out
}

// ScoreKey maps a score that is finite and not negative to a uint64 with the same order
// (the IEEE-754 bits of such a float sort as unsigned integers), so a Heap of counts ranks
// scores as CompareScored does: Offer(item, ScoreKey(s)), then ScoreOf(entry.Count).
func ScoreKey(s float64) uint64 { return math.Float64bits(s) }

// ScoreOf is the score ScoreKey mapped to k.
func ScoreOf(k uint64) float64 { return math.Float64frombits(k) }
