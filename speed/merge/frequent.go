package merge

import (
	"slices"
	"strings"

	"trending/model"
	"trending/model/moderation"
	"trending/speed/frequent"
)

// Frequent windows (model/windowset.Frequent, issue 32): each partition reports its top
// m*K by lower bound, its summary's offset (MaxError) and the most views an item it left
// out can have (Cutoff). Items are partitioned by id, so an item's bounds are those of the
// one partition that counted it, and the merge is frequent.MergeLists: the top K by lower
// bound, each with its partition's upper bound, and the list's guarantee, no item left out
// has more than Cutoff views. A salted item's shares are summed (mergeFrequent).

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
//
// A salted item (one any partial reports in Salted) is counted on several partitions, so its
// bounds are summed: its lower bound is the sum of the shares reported (a partition's Items
// count, else its Salted count, else 0), its upper bound the sum over every partition of the
// most its share can be (its Items count plus the partition's offset when listed, else the
// partition's Cutoff: an item a partition left out has at most that). It ranks with the
// others by its lower bound, and when it is left out the list's Cutoff covers its upper bound.
//
// It also returns the salted items' summed lower bounds, which a shard merger passes on.
func mergeFrequent(n int, ins []model.Partial) (frequent.Merged, []model.SaltedCount) {
	salted := map[string]bool{}
	for _, p := range ins {
		for _, sc := range p.Salted {
			salted[sc.Item] = true
		}
	}
	var sum frequent.PartList
	lower, upper := map[string]uint64{}, map[string]uint64{}
	parts := make([]frequent.PartList, 0, len(ins)+1)
	for _, p := range ins {
		if p.LateOnly {
			continue
		}
		missing := max(p.Cutoff, p.MaxError)
		pl := frequent.PartList{MaxError: p.MaxError, Missing: missing}
		listed := map[string]bool{}
		for _, e := range p.Items {
			if salted[e.Item] {
				listed[e.Item] = true
				lower[e.Item] += e.Count
				upper[e.Item] += e.Count + p.MaxError
				continue
			}
			pl.Entries = append(pl.Entries, frequent.Entry{Item: e.Item, Lower: e.Count, Upper: e.Count + p.MaxError})
		}
		for item := range salted {
			if listed[item] {
				continue
			}
			upper[item] += missing
			for _, sc := range p.Salted {
				if sc.Item == item {
					lower[item] += sc.Count
				}
			}
		}
		parts = append(parts, pl)
	}
	for item := range salted {
		sum.Entries = append(sum.Entries, frequent.Entry{Item: item, Lower: lower[item], Upper: max(upper[item], lower[item])})
	}
	m := frequent.MergeLists(n, append(parts, sum)...)
	in := map[string]bool{}
	for _, e := range m.Entries {
		in[e.Item] = true
	}
	var sums []model.SaltedCount
	for item := range salted {
		if !in[item] {
			m.Cutoff = max(m.Cutoff, upper[item])
		}
		if lower[item] > 0 {
			sums = append(sums, model.SaltedCount{Item: item, Count: lower[item]})
		}
	}
	slices.SortFunc(sums, func(a, b model.SaltedCount) int { return strings.Compare(a.Item, b.Item) })
	return m, sums
}

// frequentItems are the served items of a merged frequent list.
func frequentItems(m frequent.Merged) []model.Item {
	out := make([]model.Item, len(m.Entries))
	for i, e := range m.Entries {
		out[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: e.Lower, ViewsUpper: e.Upper}
	}
	return out
}

// moderateFrequent drops the items moderation removed (model/moderation) from a merged
// frequent list of removed.Want(k) entries and cuts it to k. An item cut for rank keeps the
// guarantee: the Cutoff rises to its upper bound. A removed item is left out on purpose, so
// the guarantee is of the items not removed.
func moderateFrequent(m frequent.Merged, removed *moderation.Set, k int) frequent.Merged {
	kept := moderation.Top(m.Entries, removed, k, func(e frequent.Entry) string { return e.Item })
	in := make(map[string]bool, len(kept))
	for _, e := range kept {
		in[e.Item] = true
	}
	for _, e := range m.Entries {
		if !in[e.Item] && !removed.Has(e.Item) {
			m.Cutoff = max(m.Cutoff, e.Upper)
		}
	}
	m.Entries = kept
	return m
}
