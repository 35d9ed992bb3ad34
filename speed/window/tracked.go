package window

import (
	"math"
	"slices"
	"strings"
	"time"

	"trending/model/topk"
	"trending/model/windowset"
)

// Tracked items: the counts of salted items, reported in full.
//
// A salted item (docs/scale-out.md, "Hot keys") has its events spread over several
// partitions, so each of them holds part of its count, and the merger sums the parts. For
// that sum to be whole, every partition holding a part must report it, however it ranks
// there: the top M*K is not enough. The runtime calls Track for every salted event it counts;
// from then on every list the partition makes (Top, Live, LiveAll, the final lists of
// TakeClosed, Since) carries, beside its top M*K, the count of each tracked item in
// List.Tracked:
//
//   - exact windows: every tracked item with a nonzero count in the window;
//   - sketch windows: every tracked item whose last salted event is at or after the list's
//     start, with its estimate (within the list's bound, like any estimate): a sketch holds no
//     list of what it counted, and the estimate of an item the partition never counted there is
//     noise the sum would add.
//
// The counts are the item's whole counts in the partition, its unsalted events included: the
// partition that takes sub-key 0 also holds the item's counts from before and after it was
// salted, and the merger must add those too. An item is tracked until no window reaches back
// to its last salted event (with an all-time or a decayed window, for good).
//
// The tracked set is not in the window snapshot: the runtime stores it beside the snapshot
// (TrackedItems, SetTracked), in the same checkpoint, so a restore plus the replay from its
// offset tracks exactly what an uninterrupted run would.

// TrackedItem is a tracked item and the minute of its last salted event.
type TrackedItem struct {
	Item string
	// Last is the start of the minute of the item's newest salted event.
	Last time.Time
}

// Track records a salted event of item at Unix milliseconds ms: the item's counts are
// reported in full from now on (see above). Call it beside Add or AddBytes; it costs one map
// lookup, and allocates only for a new item or a later minute.
func (p *Partition) Track(item []byte, ms int64) {
	if len(item) == 0 || ms < minEventMs || ms >= maxEventMs {
		return
	}
	m := floorDiv(ms, minuteMs)
	if p.tracked == nil {
		p.tracked = map[string]int64{}
	}
	if last, ok := p.tracked[string(item)]; ok && last >= m {
		return
	}
	p.tracked[string(item)] = m
}

// TrackedItems returns the tracked items, by item: what the runtime stores with a snapshot.
func (p *Partition) TrackedItems() []TrackedItem {
	out := make([]TrackedItem, 0, len(p.tracked))
	for it, m := range p.tracked {
		out = append(out, TrackedItem{Item: it, Last: minuteTime(m)})
	}
	slices.SortFunc(out, func(a, b TrackedItem) int { return strings.Compare(a.Item, b.Item) })
	return out
}

// SetTracked replaces the tracked items with items (TrackedItems of the snapshot restored),
// dropping those no window reaches any more.
func (p *Partition) SetTracked(items []TrackedItem) {
	p.tracked = nil
	for _, it := range items {
		p.Track([]byte(it.Item), it.Last.UnixMilli())
	}
	p.expireTracked()
}

// expireTracked forgets the tracked items whose last salted event no window reaches.
func (p *Partition) expireTracked() {
	if len(p.tracked) == 0 || !p.started {
		return
	}
	reach := p.asOf
	for _, w := range p.wins {
		reach = min(reach, w.reach(p))
	}
	if p.since != nil {
		reach = min(reach, p.since.lo(p.asOf))
	}
	for it, last := range p.tracked {
		if last < reach {
			delete(p.tracked, it)
		}
	}
}

// tracked is the Tracked field of a list of window w starting at start: count(id, found, h)
// is a tracked item's count (found: the item is interned as id; h: its sketch hash, for
// sketch windows).
func (p *Partition) trackedCounts(sketchWin bool, start time.Time, count func(id uint32, found bool, h uint64) uint64) []topk.Entry {
	if len(p.tracked) == 0 {
		return nil
	}
	from := int64(math.MinInt64)
	if sketchWin && !start.IsZero() {
		from = floorDiv(start.UnixMilli(), minuteMs)
	}
	var out []topk.Entry
	for it, last := range p.tracked {
		if last < from {
			continue
		}
		id, found := p.in.lookup(it)
		if !found && !sketchWin {
			continue // an exact window counts only interned items
		}
		var h uint64
		if sketchWin {
			h = p.hasher.HashString(it)
		}
		if c := count(id, found, h); c > 0 {
			out = append(out, topk.Entry{Item: it, Count: c})
		}
	}
	topk.Sort(out)
	return out
}

// closedTracked is the Tracked field of w's list as of AsOf (Top, a final list).
func (p *Partition) closedTracked(w window, start time.Time) []topk.Entry {
	return p.trackedCounts(w.conf().Mode == windowset.Sketch, start, func(id uint32, found bool, h uint64) uint64 {
		return w.count(p, id, found, h)
	})
}

// liveTracked is the Tracked field of a live list built from spec; xs(id) is an interned
// item's count in the buckets spec expires (exact windows).
func (p *Partition) liveTracked(spec *liveSpec, xs func(id uint32) uint64) []topk.Entry {
	return p.trackedCounts(!spec.exact(), spec.meta.Start, func(id uint32, found bool, h uint64) uint64 {
		var open uint64
		if found {
			open = p.openCount(id, spec.lo, spec.hi)
		}
		if !spec.exact() {
			return spec.sk.EstimateHashWithout(h, spec.without...) + open
		}
		return uint64(max(int64(at(spec.totals, id)+open)-int64(xs(id)), 0))
	})
}

// expiringCounts is, for the tracked items, their counts in the buckets spec expires: what
// Live subtracts (LiveAll's caches hold them already).
func (p *Partition) expiringCounts(spec *liveSpec) map[uint32]uint64 {
	if len(p.tracked) == 0 || !spec.exact() {
		return nil
	}
	ids := map[uint32]uint64{}
	for it := range p.tracked {
		if id, ok := p.in.lookup(it); ok {
			ids[id] = 0
		}
	}
	expiringOf(spec, ids, ids)
	return ids
}

// expiringOf adds to into[id], for each item in wanted, its count in the buckets spec
// expires (whole buckets and the partly expired one). A function of the set's type, not a
// method taking a predicate: the set is probed once per expiring entry, directly.
func expiringOf[V any](spec *liveSpec, wanted map[uint32]V, into map[uint32]uint64) {
	add := func(id uint32, n uint64) {
		if _, ok := wanted[id]; ok {
			into[id] += n
		}
	}
	for _, f := range spec.expiring {
		f.each(add)
	}
	for id, n := range spec.openBucket {
		add(id, n)
	}
}

// The count of an item in each window kind as of AsOf (id is its handle when found).

func (w *exactSliding) count(_ *Partition, id uint32, found bool, _ uint64) uint64 {
	if !found {
		return 0
	}
	return at(w.totals, id)
}

func (w *exactCalendar) count(_ *Partition, id uint32, found bool, _ uint64) uint64 {
	if !found || !w.opened {
		return 0
	}
	return at(w.totals, id)
}

func (w *exactAll) count(_ *Partition, id uint32, found bool, _ uint64) uint64 {
	if !found {
		return 0
	}
	return at(w.totals, id)
}

func (w *sketchSliding) count(_ *Partition, _ uint32, _ bool, h uint64) uint64 {
	return w.running.EstimateHash(h)
}

func (w *sketchCalendar) count(_ *Partition, _ uint32, _ bool, h uint64) uint64 {
	if !w.opened {
		return 0
	}
	return w.sk.EstimateHash(h)
}

func (w *sketchAll) count(_ *Partition, _ uint32, _ bool, h uint64) uint64 {
	return w.sk.EstimateHash(h)
}

// The first minute whose counts each window kind still holds: a tracked item whose last
// salted event is older is no longer reported there.

func (w *exactSliding) reach(p *Partition) int64  { return w.start(p.asOf) }
func (w *sketchSliding) reach(p *Partition) int64 { return w.start(p.asOf) }
func (w *exactAll) reach(*Partition) int64        { return math.MinInt64 }
func (w *sketchAll) reach(*Partition) int64       { return math.MinInt64 }

func (w *exactCalendar) reach(p *Partition) int64 {
	if w.opened {
		return w.pstart
	}
	return p.asOf
}

func (w *sketchCalendar) reach(p *Partition) int64 {
	if w.opened {
		return w.pstart
	}
	return p.asOf
}

// A decayed window ranks by score, not count: its tracked items' scores are in
// List.TrackedScored (trackedScored), and count reports none. It holds an item's views until
// they decay under 2^-ForgetHalfLives of a view, which no minute bounds: a tracked item is
// kept for as long as a decayed window is configured.

func (w *decayedExact) count(*Partition, uint32, bool, uint64) uint64  { return 0 }
func (w *decayedSketch) count(*Partition, uint32, bool, uint64) uint64 { return 0 }
func (w *decayedExact) reach(*Partition) int64                         { return math.MinInt64 }
func (w *decayedSketch) reach(*Partition) int64                        { return math.MinInt64 }

// trackedScored is a decayed list's TrackedScored at Unix millisecond t: each tracked item's
// stored value (value: its handle when found) plus, for a live list, its views in the open
// minutes at the weights ws (nil for a list as of AsOf), scored at t; the same float
// operations as the list's own entries, so an item in both has one score. Exact windows list
// the items with a score, sketch windows every tracked item with an estimate.
func (p *Partition) trackedScored(d *decay, value func(item string, id uint32, found bool) float64, ws []float64, t int64) []topk.Scored {
	if len(p.tracked) == 0 {
		return nil
	}
	f := d.factor(t)
	var out []topk.Scored
	for it := range p.tracked {
		id, found := p.in.lookup(it)
		v := value(it, id, found)
		if found && ws != nil {
			v = liveValue(p, v, id, ws)
		}
		if s := v * f; s > 0 {
			out = append(out, topk.Scored{Item: it, Score: s})
		}
	}
	topk.SortScored(out)
	return out
}

func (w *decayedExact) trackedValue(_ string, id uint32, found bool) float64 {
	if !found || int(id) >= len(w.values) {
		return 0
	}
	return w.value(id)
}

func (w *decayedSketch) trackedValue(p *Partition) func(string, uint32, bool) float64 {
	return func(item string, _ uint32, _ bool) float64 { return w.sk.EstimateHash(p.hasher.HashString(item)) }
}
