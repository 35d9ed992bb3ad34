package merge

import (
	"trending/model"
	"trending/speed/frequent"
)

// Frequent windows (model/windowset.Frequent, issue 32): each partition reports its top
// m*K by lower bound, its summary's offset (MaxError) and the most views an item it left
// out can have (Cutoff). Items are partitioned by id, so an item's bounds are those of the
// one partition that counted it, and the merge is frequent.MergeLists: the top K by lower
// bound, each with its partition's upper bound, and the list's guarantee, no item left out
// has more than Cutoff views. Salted items' shares are not summed in this mode: each share
// ranks as its partition reported it (a limitation, docs/accuracy.md).

// isFrequent reports whether the lists merged are a frequent window's.
func isFrequent(ins []model.Partial) bool {
	for _, p := range ins {
		if p.Frequent {
			return true
		}
	}
	return false
}

// mergeFrequent merges the partials' lists into the best n, with the list's Cutoff and the
// largest partition offset.
func mergeFrequent(n int, ins []model.Partial) frequent.Merged {
	parts := make([]frequent.PartList, 0, len(ins))
	for _, p := range ins {
		if p.LateOnly {
			continue
		}
		pl := frequent.PartList{MaxError: p.MaxError, Missing: max(p.Cutoff, p.MaxError)}
		for _, e := range p.Items {
			pl.Entries = append(pl.Entries, frequent.Entry{Item: e.Item, Lower: e.Count, Upper: e.Count + p.MaxError})
		}
		parts = append(parts, pl)
	}
	return frequent.MergeLists(n, parts...)
}

// frequentItems are the served items of a merged frequent list.
func frequentItems(m frequent.Merged) []model.Item {
	out := make([]model.Item, len(m.Entries))
	for i, e := range m.Entries {
		out[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: e.Lower, ViewsUpper: e.Upper}
	}
	return out
}
