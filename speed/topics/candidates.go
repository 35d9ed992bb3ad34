package topics

// candidates is one list's bounded candidate set: the K keys with the highest estimated
// window count, as an indexed min-heap so that an event updates a member in O(log K) and
// a newcomer is compared with the smallest member in O(1). A sketch answers "how many"
// but cannot list keys; this names them (200 keys per list: enough headroom over the 50
// served that a rising topic is already a candidate when it reaches the list). Its memory is
// fixed at K entries whatever the number of distinct topics.
type candidates struct {
	k     int
	share int // minutes of each member's share ring
	e     []*cand
	index map[string]int
}

// cand is one member. est is the window estimate in tenths when last offered or
// re-estimated.
type cand struct {
	topic string
	hash  uint64
	est   uint64
	share *Share
}

func newCandidates(k, shareMinutes int) *candidates {
	return &candidates{k: k, share: shareMinutes, e: make([]*cand, 0, k), index: make(map[string]int, k)}
}

// offer considers topic with window estimate est; when it is (or becomes) a member, its
// new-account share records tenths at minute.
func (c *candidates) offer(topic string, h, est uint64, minute int64, tenths uint64, newAccount bool) {
	if i, ok := c.index[topic]; ok {
		m := c.e[i]
		m.est = est
		m.share.Add(minute, tenths, newAccount)
		c.fix(i)
		return
	}
	if len(c.e) < c.k {
		m := &cand{topic: topic, hash: h, est: est, share: NewShare(c.share)}
		m.share.Add(minute, tenths, newAccount)
		c.e = append(c.e, m)
		c.index[topic] = len(c.e) - 1
		c.up(len(c.e) - 1)
		return
	}
	if c.k == 0 || est <= c.e[0].est {
		return
	}
	// Replace the smallest member, reusing its share ring so a flood does not allocate one
	// per newcomer.
	m := c.e[0]
	delete(c.index, m.topic)
	sh := m.share
	for i := range sh.minute {
		sh.minute[i], sh.newW[i], sh.total[i] = -1, 0, 0
	}
	*m = cand{topic: topic, hash: h, est: est, share: sh}
	sh.Add(minute, tenths, newAccount)
	c.index[topic] = 0
	c.down(0)
}

// reestimate refreshes every member's estimate (the window moved) and restores the heap.
func (c *candidates) reestimate(est func(h uint64) uint64) {
	for _, m := range c.e {
		m.est = est(m.hash)
	}
	for i := len(c.e)/2 - 1; i >= 0; i-- {
		c.down(i)
	}
}

func (c *candidates) less(i, j int) bool {
	a, b := c.e[i], c.e[j]
	return a.est < b.est || (a.est == b.est && a.topic > b.topic)
}

func (c *candidates) swap(i, j int) {
	c.e[i], c.e[j] = c.e[j], c.e[i]
	c.index[c.e[i].topic] = i
	c.index[c.e[j].topic] = j
}

func (c *candidates) fix(i int) {
	if !c.down(i) {
		c.up(i)
	}
}

func (c *candidates) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !c.less(i, p) {
			return
		}
		c.swap(i, p)
		i = p
	}
}

func (c *candidates) down(i0 int) bool {
	i, n := i0, len(c.e)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && c.less(r, l) {
			j = r
		}
		if !c.less(j, i) {
			break
		}
		c.swap(i, j)
		i = j
	}
	return i > i0
}
