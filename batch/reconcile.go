package batch

import (
	"math"
	"trending/model"
	"trending/model/topk"
)

// Reconcile compares the speed layer's list with the exact top list of the same window.
// exactOf gives the exact count of every item on the speed list (items beyond the exact
// top K included), so the errors are per item, not per rank.
//
// Recall@K is the share of the exact top K the speed list also holds, K being the shorter
// of the two lists; errors are over the speed list's items: |speed - exact|, mean, and the
// largest relative error |speed - exact| / exact (1 for an item with no exact views). The
// speed list's error bound is kept with them, so the errors can be read against it.
func Reconcile(speed model.List, exact []topk.Entry, exactOf map[string]uint64) model.Reconciliation {
	r := model.Reconciliation{SpeedVersion: speed.Version, SpeedDroppedLate: speed.DroppedLate}
	if b := speed.ErrorBound; b != nil {
		bound := *b
		r.SpeedErrorBound = &bound
	} else if speed.KindOf() == model.ListFrequent {
		// A frequent list's items each carry proven bounds: the widest is the most any of its
		// counts is off (low), with certainty.
		bound := model.Bound{Probability: 1}
		for _, it := range speed.Items {
			bound.MaxOvercount = math.Max(bound.MaxOvercount, float64(it.ViewsUpper-it.Views))
		}
		r.SpeedErrorBound = &bound
	}
	k := min(len(speed.Items), len(exact))
	if k > 0 {
		in := make(map[string]bool, k)
		for _, it := range speed.Items[:k] {
			in[it.ItemID] = true
		}
		hit := 0
		for _, e := range exact[:k] {
			if in[e.Item] {
				hit++
			}
		}
		r.RecallAtK = float64(hit) / float64(k)
	} else if len(exact) == 0 && len(speed.Items) == 0 {
		r.RecallAtK = 1
	}
	var sum float64
	for _, it := range speed.Items {
		ex := exactOf[it.ItemID]
		d := absDiff(it.Views, ex)
		r.MaxAbsError = max(r.MaxAbsError, d)
		sum += float64(d)
		rel := 1.0
		if ex > 0 {
			rel = float64(d) / float64(ex)
		} else if d == 0 {
			rel = 0
		}
		r.MaxRelError = math.Max(r.MaxRelError, rel)
	}
	if n := len(speed.Items); n > 0 {
		r.MeanAbsError = sum / float64(n)
	}
	return r
}

// speedItems keeps a replaced speed list's items (List.SpeedItems).
func speedItems(speed model.List) []model.ReconciledItem {
	out := make([]model.ReconciledItem, len(speed.Items))
	for i, it := range speed.Items {
		out[i] = model.ReconciledItem{ItemID: it.ItemID, Views: it.Views}
	}
	return out
}

// replacedSpeed rebuilds, from a batch list, the speed list its first exact run replaced.
func replacedSpeed(batch model.List) model.List {
	l := model.List{Version: batch.Reconciliation.SpeedVersion, ErrorBound: batch.Reconciliation.SpeedErrorBound,
		Items: make([]model.Item, len(batch.SpeedItems))}
	for i, it := range batch.SpeedItems {
		l.Items[i] = model.Item{Rank: i + 1, ItemID: it.ItemID, Views: it.Views}
	}
	return l
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
