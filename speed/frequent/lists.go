package frequent

import "trending/model/topk"

// PartList is one partition's report of a summary: its top entries with
// their bounds, the summary's offset, and the most views an item it did not
// report can have. It is what a speed worker would publish for a
// frequent-items window (issue 32: the window mode is not built yet).
type PartList struct {
	Entries  []Entry
	MaxError uint64
	// Missing bounds every item of the partition that is not in Entries:
	// MaxError when the partition reported every counter it holds, else the
	// lowest reported counter plus MaxError (an unreported counter is at
	// most that).
	Missing uint64
}

// List returns s's top n entries (n <= 0: all) as a PartList.
func (s *Summary) List(n int) PartList {
	es := s.Top(n)
	pl := PartList{Entries: es, MaxError: s.offset, Missing: s.offset}
	if len(es) < s.Len() && len(es) > 0 {
		pl.Missing = es[len(es)-1].Lower + s.offset
	}
	return pl
}

// Merged is the served list of partition lists: the top K by lower bound,
// each entry with its lower and upper bound, and the guarantee Cutoff: no
// item left out of Entries has more than Cutoff views.
type Merged struct {
	Entries  []Entry
	MaxError uint64 // the largest partition offset
	Cutoff   uint64
}

// MergeLists merges partition lists into the top k, as the merger merges
// per-partition top lists. Items are partitioned by key: each item is
// counted in one partition only, so an item's bounds are those of the one
// partition that reported it and no sum of partial counts is needed
// (salted items, whose shares several partitions report, are not handled
// here). An item left out has at most the K-th lower bound plus that
// partition's offset if some partition reported it, else at most its
// partition's Missing: Cutoff is the larger of the K-th lower bound plus the
// largest offset and the largest Missing, so "no item with more than Cutoff
// views is missing" holds after the merge.
func MergeLists(k int, parts ...PartList) Merged {
	var m Merged
	lists := make([][]topk.Entry, len(parts))
	upper := map[string]uint64{}
	for i, p := range parts {
		m.MaxError = max(m.MaxError, p.MaxError)
		m.Cutoff = max(m.Cutoff, p.Missing)
		for _, e := range p.Entries {
			lists[i] = append(lists[i], topk.Entry{Item: e.Item, Count: e.Lower})
			upper[e.Item] = e.Upper
		}
	}
	for _, e := range topk.Merge(k, lists...) {
		m.Entries = append(m.Entries, Entry{Item: e.Item, Lower: e.Count, Upper: upper[e.Item]})
	}
	if len(m.Entries) == k {
		m.Cutoff = max(m.Cutoff, m.Entries[k-1].Lower+m.MaxError)
	}
	return m
}
