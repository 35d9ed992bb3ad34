package window

import (
	"fmt"
	"slices"
	"time"

	"trending/model/topk"
	"trending/model/windowset"
)

// dayMinutes is a UTC day in minutes.
const dayMinutes = 24 * 60

// MaxSinceDays bounds Config.SinceDays.
const MaxSinceDays = 62

// SetSinceDays sets the days of counts since the all-time boundary the partitions keep
// (SinceDays, `--since-days`): days when c.Windows has an all-time window, else 0, since
// those counts feed the all-time list only (the merger's hybrid of it). Set the windows
// first.
func (c *Config) SetSinceDays(days int) {
	if !slices.ContainsFunc(c.Windows, func(w WindowConfig) bool { return w.Kind == windowset.AllTime }) {
		days = 0
	}
	c.SinceDays = days
}

// since counts every item exactly from the time boundary B up to the watermark: the speed
// side of the all-time hybrid (the batch layer's exact totals before B plus these counts
// from B). It keeps one frozen bucket per closed UTC day and an open bucket (a map) for
// the open day, with running totals over them, like a sliding window of daily buckets; but
// its start is B, which the runtime moves forward (SetBoundary) when the batch publishes a
// newer base, rather than a length. Days before B are subtracted and dropped. Without a
// boundary, or when B is older, it keeps at most Config.SinceDays days: the counts are then
// complete only from `from`, the start of the oldest day it still holds in whole.
type since struct {
	days     int64 // most days kept
	boundary int64 // B in Unix minutes (a day start), or noMinute before the first SetBoundary
	from     int64 // counts are complete for every minute at or after from

	totals []uint64
	sum    uint64

	ring       ring // closed day buckets at or after lo, by start
	openBucket map[uint32]uint64
	openStart  int64
	hasOpen    bool
}

func newSince(p *Partition, days int) *since {
	s := &since{days: int64(days), boundary: noMinute, from: minEventMs / minuteMs, openBucket: make(map[uint32]uint64)}
	p.in.register(&s.totals)
	return s
}

// keep is the start of the oldest day kept as of asOf.
func (s *since) keep(asOf int64) int64 {
	return floorTo(asOf-1, dayMinutes) - (s.days-1)*dayMinutes
}

// lo is the first minute counted as of asOf: B, or the oldest day kept when that is later.
func (s *since) lo(asOf int64) int64 {
	if s.boundary == noMinute {
		return s.keep(asOf)
	}
	return max(s.keep(asOf), s.boundary)
}

// advance drops the days before lo and freezes the open day when the next one starts.
func (s *since) advance(p *Partition) {
	lo := s.lo(p.asOf)
	if s.hasOpen && s.openStart < floorTo(p.asOf-1, dayMinutes) {
		s.freeze()
	}
	n := 0
	for n < len(s.ring) && s.ring[n].start < lo {
		s.sub(s.ring[n].each)
		s.ring[n].release(p.in)
		n++
	}
	if n > 0 {
		s.ring.popFront(n)
	}
	if s.hasOpen && s.openStart < lo {
		s.sub(func(fn func(uint32, uint64)) {
			for id, c := range s.openBucket {
				fn(id, c)
			}
		})
		for id := range s.openBucket {
			p.in.unref(id)
		}
		clear(s.openBucket)
		s.hasOpen = false
	}
	// Days past SinceDays are lost for good; days before B were not wanted.
	s.from = max(s.from, s.keep(p.asOf))
}

func (s *since) sub(each func(func(uint32, uint64))) {
	each(func(id uint32, c uint64) {
		if s.totals[id] < c {
			panic("BUG: window: since-boundary total below a dropped day's count")
		}
		s.totals[id] -= c
		s.sum -= c
	})
}

func (s *since) freeze() {
	s.ring = append(s.ring, freezeCounts(s.openStart, s.openBucket))
	clear(s.openBucket)
	s.hasOpen = false
}

func (s *since) addOpen(p *Partition, id uint32, c uint64) {
	old, ok := s.openBucket[id]
	if !ok {
		p.in.ref(id)
	}
	s.openBucket[id] = old + c
}

// addMinute counts a minute that has just closed.
func (s *since) addMinute(p *Partition, f *frozen) {
	if f.start < s.lo(p.asOf) {
		return
	}
	d := floorTo(f.start, dayMinutes)
	if s.hasOpen && s.openStart < d {
		s.freeze()
	}
	if !s.hasOpen {
		s.hasOpen, s.openStart = true, d
	}
	f.each(func(id uint32, c uint64) {
		s.totals[id] += c
		s.sum += c
		s.addOpen(p, id, c)
	})
}

// accepts reports whether a late event of closed minute m counts here.
func (s *since) accepts(p *Partition, m int64) bool { return m >= s.lo(p.asOf) }

func (s *since) addLate(p *Partition, m int64, id uint32, c uint64) {
	s.totals[id] += c
	s.sum += c
	d := floorTo(m, dayMinutes)
	if nb := floorTo(p.asOf-1, dayMinutes); d == nb {
		if !s.hasOpen {
			s.hasOpen, s.openStart = true, nb
		}
		s.addOpen(p, id, c)
		return
	}
	if s.ring.at(d).add(id, c) {
		p.in.ref(id)
	}
}

// setBoundary moves B forward to minute b.
func (s *since) setBoundary(p *Partition, b int64) {
	if s.boundary != noMinute && b <= s.boundary {
		return
	}
	s.boundary = b
	if p.started {
		s.advance(p)
	}
}

func (s *since) stats(st *Stats) {
	st.Bytes += int64(cap(s.totals)) * 8
	for _, f := range s.ring {
		st.Entries += f.entries()
		st.Bytes += f.bytes()
	}
	st.Entries += len(s.openBucket)
	st.Bytes += int64(len(s.openBucket)) * 36
}

// SinceList is a partition's exact counts since the time boundary (Partition.Since).
type SinceList struct {
	// Boundary is B, the start of the counts; zero before SetBoundary.
	Boundary time.Time
	// From: the counts are complete for every event at or after From. They are exact since B
	// only when From is not after B (a partition restored from a snapshot without these
	// counts, or one that had to drop days past Config.SinceDays, starts later).
	From time.Time
	// AsOf is the end of the last closed minute counted.
	AsOf time.Time
	// Items are the top M*K items since B.
	Items []topk.Entry
	// Base are the counts since B of every asked-for item this partition holds (nonzero
	// only), whether or not it is in Items too: an asked-for item not in Base has no views
	// since B here.
	Base []topk.Entry
	// Tracked are the counts since B of the tracked (salted) items (Partition.Track) this
	// partition holds, nonzero only, however they rank.
	Tracked []topk.Entry
	// Cutoff is the most views since B an item in neither Items nor Base can have: the last
	// item's count when Items is full, else 0.
	Cutoff uint64
	// Total is the sum of all counts since B.
	Total uint64
}

// SinceEnabled reports whether the partition keeps counts since a boundary
// (Config.SinceDays).
func (p *Partition) SinceEnabled() bool { return p.since != nil }

// SetBoundary moves the time boundary B forward to t, a UTC day start: days before it are
// dropped. An earlier or equal t does nothing (dropped days cannot come back). It fails when
// the partition keeps no counts since a boundary or t is not a UTC day start.
func (p *Partition) SetBoundary(t time.Time) error {
	if p.since == nil {
		return fmt.Errorf("set boundary: %w: the partition keeps no counts since a boundary (SinceDays is 0)", ErrConfig)
	}
	ms := t.UnixMilli()
	if t.IsZero() || ms < minEventMs || ms >= maxEventMs || ms%(dayMinutes*minuteMs) != 0 {
		return fmt.Errorf("set boundary %s: %w: not a UTC day start", t.Format(time.RFC3339), ErrConfig)
	}
	p.since.setBoundary(p, ms/minuteMs)
	return nil
}

// Since returns the partition's exact counts since the boundary: its top M*K, and the counts
// of the given items (the batch's base list) that it holds beyond those. ok is false when the
// partition keeps no such counts.
func (p *Partition) Since(items []string) (l SinceList, ok bool) {
	s := p.since
	if s == nil {
		return l, false
	}
	l.Total = s.sum
	if s.boundary != noMinute {
		l.Boundary = minuteTime(s.boundary)
	}
	l.From = minuteTime(s.from)
	if !p.started {
		return l, true
	}
	l.AsOf = minuteTime(p.asOf)
	n := p.mk()
	l.Items = topOf(n, func(offer func(uint32, uint64)) {
		for id, c := range s.totals {
			if c != 0 {
				offer(uint32(id), c)
			}
		}
	}, p.in.strs)
	if len(l.Items) == n {
		l.Cutoff = l.Items[n-1].Count
	}
	listed := make(map[string]bool, len(items))
	for _, it := range items {
		if listed[it] {
			continue
		}
		id, found := p.in.lookup(it)
		if !found || int(id) >= len(s.totals) || s.totals[id] == 0 {
			continue
		}
		listed[it] = true
		l.Base = append(l.Base, topk.Entry{Item: it, Count: s.totals[id]})
	}
	l.Tracked = p.trackedCounts(false, time.Time{}, func(id uint32, _ bool, _ uint64) uint64 { return at(s.totals, id) })
	return l, true
}

// ceilDay rounds a minute up to a day start.
func ceilDay(m int64) int64 {
	d := floorTo(m, dayMinutes)
	if d < m {
		d += dayMinutes
	}
	return d
}
