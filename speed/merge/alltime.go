package merge

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sort"
	"time"

	"trending/model"
	"trending/model/moderation"
	"trending/model/topk"
	"trending/serving/store"
)

// refreshBase re-reads the batch layer's all-time base when BaseRefresh has passed; a newer
// one marks the live "all" list dirty. A failed read keeps the base held.
func (m *Merger) refreshBase(ctx context.Context, now time.Time) {
	m.mu.Lock()
	due := m.baseAt.IsZero() || now.Sub(m.baseAt) >= m.cfg.BaseRefresh
	m.mu.Unlock()
	if !due {
		return
	}
	l, err := m.cfg.Store.Get(ctx, model.Key{Window: model.BaseWindow})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.baseAt = now
	switch {
	case errors.Is(err, store.ErrNotFound):
		return
	case err != nil:
		m.cfg.Log.Warn("reading the all-time base failed; keeping the one held", "err", err)
		return
	}
	if m.base != nil && m.base.Version >= l.Version {
		return
	}
	if m.base != nil && !m.base.Boundary.Equal(l.Boundary) {
		m.prevBase = m.base
	}
	m.base = &l
	m.dirty[allKey] = true
}

// buildHybrid builds the live all-time list from the batch's exact base through the boundary
// B and the partitions' exact counts since B (model.SinceWindow partials), merged per item for the
// items of both: Pinot's time boundary. ok is false when there is no base or no partition
// counts since its B yet (the "all" partials then serve, as before).
//
// An item in the base has both sides exactly: its base views, plus its count since B from
// the one partition that holds it (each partition reports the base items it holds), or 0
// when no partition reports it. An item outside the base has at most the base's cutoff Cb
// before B; it is listed at Cb plus its count since B, never low and at most Cb high. An item
// no partition reports and the base does not list has at most Cb + max over partitions of
// their cutoffs: the unseen bound. The list's Cutoff is the most any unlisted item can have:
// the unseen bound, or the next candidate's total when that is higher.
//
// The list is as of the newest minute the partitions' counts reach (AsOf; its version is the
// newest partial's, a partition's newest event time as its live lists' versions are).
//
// The list is exact when every partition reported against this base (same B, From not after
// B, the base's version) and is fresh, all counts reach the same minute, every listed item is exact, and the K-th total is above
// the unseen bound, or the unseen bound is 0: no item can be missing or off. (Above, not at
// least: an unseen item tied with the K-th could rank before it by item id.) Otherwise Exact is false, the error bound says how far a listed count
// may be high (Cb when an item outside the base is listed, else 0), Cutoff how high an
// unlisted item could be (when no partition is stale), and stale or mismatched partitions make it partial.
func (m *Merger) buildHybrid(base *model.List) (model.List, []int, bool) {
	byPart := m.lists[model.Key{Window: model.SinceWindow}]
	if base == nil || len(byPart) == 0 {
		return model.List{}, nil, false
	}
	var newest int64
	parts := make([]int, 0, len(byPart))
	for part, p := range byPart {
		parts = append(parts, part)
		if p.Boundary.Equal(base.Boundary) {
			newest = max(newest, p.Version)
		}
	}
	if newest == 0 {
		return model.List{}, nil, false
	}
	sort.Ints(parts)
	type sides struct {
		base, since uint64
		inBase      bool
	}
	cands := make(map[string]*sides, len(base.Items))
	for _, it := range base.Items {
		cands[it.ItemID] = &sides{base: it.Views, inBase: true}
	}
	cutoff := newest - m.cfg.Staleness.Milliseconds()
	var stale []int
	var sinceMax uint64
	var asOf, firstAsOf time.Time // the newest and oldest minute the counts since B reach
	seenPart := map[int]bool{}
	for _, part := range parts {
		p := byPart[part]
		// A shard partial (two-level merge) stands for its members, each with its version.
		members := p.Members
		if len(members) == 0 {
			members = []model.Member{{Partition: p.Partition, Version: p.Version}}
		}
		for _, mb := range members {
			seenPart[mb.Partition] = true
		}
		if !p.Boundary.Equal(base.Boundary) {
			for _, mb := range members {
				stale = append(stale, mb.Partition) // counts from another boundary cannot be added
			}
			continue
		}
		for _, mb := range members {
			at := p.AsOf // a shard partial says each member's minute
			if !mb.AsOf.IsZero() {
				at = mb.AsOf
			}
			if at.After(asOf) {
				asOf = at
			}
			if firstAsOf.IsZero() || at.Before(firstAsOf) {
				firstAsOf = at
			}
		}
		for _, mb := range members {
			if p.From.After(base.Boundary) || p.BaseVersion != base.Version || mb.Version < cutoff {
				stale = append(stale, mb.Partition) // lower bounds: incomplete, unchecked or old
			}
		}
		// Each list's count of an item is taken once (an item may be in Items, Base and
		// Salted), and summed over the lists: a salted item's counts are on several
		// partitions, every other item's on one.
		seen := make(map[string]bool, len(p.Items)+len(p.Base)+len(p.Salted))
		add := func(item string, n uint64) {
			if seen[item] {
				return
			}
			seen[item] = true
			c := cands[item]
			if c == nil {
				c = &sides{}
				cands[item] = c
			}
			c.since += n
		}
		for _, es := range [][]topk.Entry{p.Items, p.Base} {
			for _, e := range es {
				add(e.Item, e.Count)
			}
		}
		for _, sc := range p.Salted {
			add(sc.Item, sc.Count)
		}
		sinceMax = max(sinceMax, p.Cutoff)
	}
	for part := 0; part < m.cfg.Partitions; part++ {
		if !seenPart[part] {
			stale = append(stale, part)
		}
	}
	sort.Ints(stale)
	stale = slices.Compact(stale)
	items := make([]model.Item, 0, len(cands))
	for id, c := range cands {
		it := model.Item{ItemID: id, Views: c.base + c.since, Exact: true}
		if !c.inBase {
			it.Views, it.Exact = base.Cutoff+c.since, base.Cutoff == 0
		}
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b model.Item) int {
		return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.ItemID, b.ItemID))
	})
	if removed := m.removed(); removed.Len() > 0 {
		items = moderation.Top(items, removed, len(items), func(it model.Item) string { return it.ItemID })
	}
	unseen := base.Cutoff + sinceMax
	most := unseen // the most an unlisted item can have
	if len(items) > m.cfg.K {
		most = max(unseen, items[m.cfg.K].Views) // an unlisted candidate has at most its total
		items = items[:m.cfg.K]
	}
	// Counts of partitions as of different minutes are each exact, but not of one span
	// together: the list is exact only when they reach the same minute (up to a second
	// a minute while the partitions close it one after another).
	exact, over := len(stale) == 0 && asOf.Equal(firstAsOf), uint64(0)
	for i := range items {
		items[i].Rank = i + 1
		if !items[i].Exact {
			exact, over = false, base.Cutoff
		}
	}
	// The K-th total must beat the unseen bound (a tie could hide an unseen item that ranks
	// before it by id), unless nothing is unseen.
	if n := len(items); unseen > 0 && (n < m.cfg.K || items[n-1].Views <= unseen) {
		exact = false
	}
	l := model.List{Kind: model.ListSince, Window: allKey.Window, Source: model.SourceSpeed, Status: model.StatusLive, Version: newest, AsOf: asOf.UTC(),
		Exact: exact, Items: items, Boundary: base.Boundary, Cutoff: most}
	if len(stale) > 0 {
		l.Incomplete, l.StalePartitions = true, stale
	}
	if !exact {
		l.ErrorBound = &model.Bound{MaxOvercount: float64(over), Probability: 1}
		// An item says exact only on a list that does (model.List.Validate): a count known
		// on both sides is exact, but the list as a whole is not proven.
		for i := range l.Items {
			l.Items[i].Exact = false
		}
	}
	return l, stale, true
}
