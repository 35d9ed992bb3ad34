package topk

// Merge returns the global top k, best first, of per-partition top lists. The lists need not
// be sorted. It is exact when items are partitioned (see the package comment) and each list
// is its partition's top k or longer. Returns nil when k <= 0.
//
// An item in two lists should not happen: it means a bug, or two reports of the same
// partition during a rebalance (the old owner's last list and the new owner's first). Merge
// keeps the larger count rather than the sum: both reports describe the same views, so a sum
// would double-count, and the maximum never overstates an item. Duplicates finds such items
// for a metric or a log line.
//
// Cost: one comparison for an entry that cannot enter the result, O(log k) and two map
// operations for one that can, and O(k) for a duplicate that raises a kept count.
func Merge(k int, lists ...[]Entry) []Entry {
	if k <= 0 {
		return nil
	}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	m := merger{k: min(k, n)}
	m.e = make([]Entry, 0, m.k)
	m.kept = make(map[string]struct{}, m.k)
	for _, l := range lists {
		for _, e := range l {
			m.offer(e)
		}
	}
	Sort(m.e)
	return m.e
}

// Duplicates returns the items that appear in more than one entry of the lists, each once,
// in first-seen order; nil when the lists are properly partitioned.
func Duplicates(lists ...[]Entry) []string {
	seen := make(map[string]int)
	var dups []string
	for _, l := range lists {
		for _, e := range l {
			seen[e.Item]++
			if seen[e.Item] == 2 {
				dups = append(dups, e.Item)
			}
		}
	}
	return dups
}

// merger is a Heap that also knows which items it keeps, so that a second entry for an item
// raises the kept count to the maximum instead of taking a second slot. It keeps a set, not
// an index: maintaining positions costs map writes on every swap, and duplicates, the only
// users of a position, are rare enough for a linear search.
type merger struct {
	k    int
	e    []Entry
	kept map[string]struct{}
}

func (m *merger) offer(x Entry) {
	if len(m.e) == m.k {
		// Not better than the worst kept: reject. If x.Item is kept, its kept entry ranks at
		// or above the root, so its count is already at least x.Count: max is unchanged.
		if !Less(x, m.e[0]) {
			return
		}
	}
	if _, ok := m.kept[x.Item]; ok {
		for i := range m.e {
			if m.e[i].Item == x.Item {
				if x.Count > m.e[i].Count {
					m.e[i].Count = x.Count
					m.down(i) // better now: away from the root
				}
				return
			}
		}
		panic("BUG: topk: merger set and heap disagree on " + x.Item)
	}
	m.kept[x.Item] = struct{}{}
	if len(m.e) < m.k {
		m.e = append(m.e, x)
		m.up(len(m.e) - 1)
		return
	}
	delete(m.kept, m.e[0].Item)
	m.e[0] = x
	m.down(0)
}

func (m *merger) worse(i, j int) bool { return Less(m.e[j], m.e[i]) }

func (m *merger) swap(i, j int) { m.e[i], m.e[j] = m.e[j], m.e[i] }

func (m *merger) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !m.worse(i, p) {
			return
		}
		m.swap(i, p)
		i = p
	}
}

func (m *merger) down(i int) {
	n := len(m.e)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && m.worse(c+1, c) {
			c++
		}
		if !m.worse(c, i) {
			return
		}
		m.swap(i, c)
		i = c
	}
}
