package window

import "slices"

// An open minute counts the events of a minute the watermark has not yet
// passed. Items are interned when their event arrives, so closing a minute
// never hashes a string again.
//
// The newest open minutes (two, which covers any lateness under a minute:
// the watermark then trails the newest minute by at most one) count in a
// gen: a sparse set, where sparse[handle] is the entry's index in ids and
// counts and is valid only if ids[index] == handle. An event is one
// intern-map lookup plus an array increment, and closing the minute is a
// scan of ids: no map of its own, no clearing, no sort. Older open minutes,
// which only a lateness over a minute creates, and minutes restored from a
// snapshot, count in a map.
type openMinute struct {
	minute int64
	g      *gen              // dense form, or nil
	counts map[uint32]uint64 // map form when g is nil
}

// gen is a reusable dense counter for one open minute.
type gen struct {
	sparse []uint32 // handle -> index in ids, registered with the interner
	ids    []uint32
	counts []uint64
	inUse  bool
}

const nGens = 2

func (g *gen) add(p *Partition, id uint32, c uint64) {
	if i := g.sparse[id]; int(i) < len(g.ids) && g.ids[i] == id {
		g.counts[i] += c
		return
	}
	g.sparse[id] = uint32(len(g.ids))
	g.ids = append(g.ids, id)
	g.counts = append(g.counts, c)
	p.in.ref(id)
}

func (o *openMinute) entries() int {
	if o.g != nil {
		return len(o.g.ids)
	}
	return len(o.counts)
}

// each calls fn for every entry of the open minute.
func (o *openMinute) each(fn func(id uint32, c uint64)) {
	if o.g != nil {
		for i, id := range o.g.ids {
			fn(id, o.g.counts[i])
		}
		return
	}
	for id, c := range o.counts {
		fn(id, c)
	}
}

// addOpen counts c for id in open minute m (>= p.asOf), creating the open
// minute, and makes it the fast path's current minute if it is dense.
func (p *Partition) addOpen(m int64, id uint32, c uint64) {
	i, ok := slices.BinarySearchFunc(p.open, m, func(o openMinute, m int64) int { return int64cmp(o.minute, m) })
	if !ok {
		om := openMinute{minute: m}
		if i == len(p.open) {
			om.g = p.freeGen()
			// freeGen may have converted an open minute; i is unchanged
			// since nothing was inserted or removed.
		}
		if om.g == nil {
			om.counts = make(map[uint32]uint64)
		}
		p.open = slices.Insert(p.open, i, om)
	}
	o := &p.open[i]
	if o.g != nil {
		o.g.add(p, id, c)
		p.curMin, p.curGen = m, o.g
		return
	}
	old, had := o.counts[id]
	if !had {
		p.in.ref(id)
	}
	o.counts[id] = old + c
}

// freeGen returns an unused gen, first moving the oldest dense open minute
// to map form if every gen is in use.
func (p *Partition) freeGen() *gen {
	for _, g := range p.gens {
		if !g.inUse {
			g.inUse = true
			return g
		}
	}
	for i := range p.open {
		o := &p.open[i]
		if o.g == nil {
			continue
		}
		g := o.g
		o.counts = make(map[uint32]uint64, len(g.ids))
		for j, id := range g.ids {
			o.counts[id] = g.counts[j]
		}
		o.g = nil
		if p.curGen == g {
			p.curMin, p.curGen = noMinute, nil
		}
		g.ids, g.counts = g.ids[:0], g.counts[:0]
		return g
	}
	panic("BUG: window: every gen in use but no dense open minute")
}

// releaseOpen forgets an open minute's storage after it was frozen.
func (p *Partition) releaseOpen(o *openMinute) {
	if o.minute == p.curMin {
		p.curMin, p.curGen = noMinute, nil
	}
	if g := o.g; g != nil {
		// Drop a burst's arrays rather than pin their memory for good.
		if cap(g.ids) > 1<<22 {
			g.ids, g.counts = nil, nil
		}
		g.ids, g.counts, g.inUse = g.ids[:0], g.counts[:0], false
	}
	o.g, o.counts = nil, nil
}
