package window

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// Outcome says what Add did with an event. The runtime counts them.
type Outcome uint8

const (
	// Counted: the event's minute was still open; it is in every window.
	Counted Outcome = iota + 1
	// Late: the event's minute had closed, but the event was counted in
	// every window that still covers that minute (at least one). Windows
	// that had moved past it miss it; the batch layer corrects closed
	// calendar windows from the archive.
	Late
	// TooLate: no window covers the event's minute any more. It is counted
	// nowhere in the speed layer; the archive still has it. An all-time
	// window covers every minute, so a partition with one never reports
	// TooLate: such an event is Late, counted in the all-time window (and
	// in any other window that still covers it).
	TooLate
	// Invalid: a zero count, an empty item, or an event time outside
	// [2000-01-01, 2100-01-01) UTC. event.Decode never returns such events.
	Invalid
)

func (o Outcome) String() string {
	switch o {
	case Counted:
		return "counted"
	case Late:
		return "late"
	case TooLate:
		return "too_late"
	case Invalid:
		return "invalid"
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// The event-time range a partition accepts, the same as event.Decode's. It
// keeps every minute and month computation far from int64 overflow.
var (
	minEventMs = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	maxEventMs = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

const (
	minuteMs = 60_000
	noMinute = math.MinInt64
)

// List is a partition's answer for one window: its top M*K items, best
// first (count descending, then item ascending).
type List struct {
	// Window is the window's name.
	Window string
	// Start and End bound the counted interval: [Start, End) on Top's
	// lists, [Start, End] on live lists, whose End is the newest event time
	// counted. For a sliding window End is AsOf; for a calendar window they
	// are the period's bounds (End may be after AsOf while the period is
	// open); for an all-time window Start is 2000-01-01 UTC, the earliest
	// event time a partition accepts, and End is AsOf.
	Start, End time.Time
	// AsOf is the end of the last closed minute the list includes.
	AsOf time.Time
	// Final is true for a calendar window's list at its close (TakeClosed).
	Final bool
	// DroppedLate is, for a closed calendar period, how many events of it the partition
	// could not count because they arrived after the period had closed: a running total.
	// Periods that ended more than LateRetention before AsOf are no longer tracked.
	DroppedLate uint64
	// LateOnly marks a list that only updates DroppedLate of a period whose final list was
	// taken before (TakeClosed): it has no Items and no Total.
	LateOnly bool
	// Exact is true when counts are exact; false for sketch windows.
	Exact bool
	// Bound is the sketch's error bound at Total, nil when Exact.
	Bound *sketch.Bound
	// Items are the top M*K items (empty on a decayed list: Scored).
	Items []topk.Entry
	// Tracked are the counts of the tracked (salted) items in the window, however they rank
	// (Track, tracked.go), best first; an item may be in Items too, with the same count.
	Tracked []topk.Entry
	// HalfLife is set on a decayed window's list, whose Scored hold its top M*K items by
	// score as of AsOf (decayed.go); Total is then the window's decayed views, rounded, and
	// Bound is at that total. Start is zero: a decayed list has no edge.
	HalfLife time.Duration
	Scored   []topk.Scored
	// TrackedScored are a decayed list's tracked (salted) items' scores, however they rank
	// (Track, tracked.go), best first.
	TrackedScored []topk.Scored
	// Total is the sum of all counts in the window (the sketch's N).
	Total uint64
	// Frequent marks a frequent window's list (frequentwin.go): each item's Count is a
	// lower bound on its views and Count+MaxError an upper bound; no item left out has
	// more than Cutoff views. Exact is false and Bound nil.
	Frequent bool
	// MaxError is a frequent list's offset D, the most any count is low.
	MaxError uint64
	// Cutoff is a frequent list's guarantee: no item it leaves out has more views.
	Cutoff uint64
}

// Stats describes a partition's state and what Add did so far.
type Stats struct {
	// Counted, Late, TooLate and Invalid count events by Outcome.
	Counted, Late, TooLate, Invalid uint64
	// Items is the number of distinct items held (interned).
	Items int
	// OpenMinutes and OpenEntries describe the minutes still open.
	OpenMinutes, OpenEntries int
	// Entries is the number of (bucket, item) entries in closed exact
	// buckets (the minute ring and the hourly and daily rings) and open
	// buckets. A late event for an item already in a closed bucket adds a
	// side entry, counted here separately.
	Entries int
	// Candidates is the total size of the sketch windows' candidate sets.
	Candidates int
	// Sketches is the number of count-min sketches allocated.
	Sketches int
	// Bytes estimates the state's memory.
	Bytes int64
}

// window is one configured window's state. Every method runs on the
// partition's goroutine; p.asOf is the current watermark minute.
type window interface {
	conf() WindowConfig
	// advance moves the window to p.asOf: it closes buckets, subtracts the
	// expired ones and finalizes a calendar period that ended.
	advance(p *Partition)
	// addMinute adds a minute that has just closed (f.start == p.asOf-1).
	// When the partition has sketch windows, hs holds the sketch hash and ns
	// the count of every f.ents entry, for sketch.AddHashes.
	addMinute(p *Partition, f *frozen, hs, ns []uint64)
	// accepts reports whether a late event of closed minute m still counts
	// in this window.
	accepts(p *Partition, m int64) bool
	// addLate counts a late event the window accepts; h is its sketch hash.
	addLate(p *Partition, m int64, id uint32, c, h uint64)
	// top returns the window's current list.
	top(p *Partition) List
	// liveSpec says what the list as if every open minute had closed is made of (live.go).
	liveSpec(p *Partition, ov *overlay) liveSpec
	// stats adds the window's entries, sketches and bytes to s.
	stats(s *Stats)
	// count is an item's count (an estimate in a sketch window) as of p.asOf: found says
	// the item is interned as id, h is its sketch hash (tracked.go).
	count(p *Partition, id uint32, found bool, h uint64) uint64
	// reach is the first minute whose counts the window still holds (tracked.go).
	reach(p *Partition) int64
	// snapState writes and reads the window's part of a snapshot (snapshot.go).
	snapState
}

// Partition is the window state of one log partition: open minute maps,
// the closed minute ring, and every configured window. It is not safe for
// concurrent use: one goroutine owns a partition.
type Partition struct {
	cfg    Config
	lateMs int64

	started bool
	maxSeen int64 // largest event time seen, Unix ms
	asOf    int64 // minutes before asOf (Unix minutes) are closed

	open   []openMinute // sorted by minute, all >= asOf
	gens   [nGens]*gen
	curMin int64 // the dense open minute the fast path counts in, or noMinute
	curGen *gen

	in      *interner
	minutes ring  // closed minute buckets kept for the minute-bucket windows
	keep    int64 // how many minutes back minutes reaches: max Length of exact minute windows

	wins    []window
	byName  map[string]window
	nSketch int
	pool    []*sketch.Sketch // reset sliding-window bucket sketches
	hashBuf []uint64
	cntBuf  []uint64
	sortBuf []hashEnt
	// byHash: a conservative sketch window is configured, so closed minutes
	// are sorted by hash before the windows add them (see addFrozen).
	byHash bool
	hasher *sketch.Sketch // a 1x1 sketch with the configured seed: the hash function

	closed []List
	// late counts, per closed calendar period, the events that came too late for it
	// (see List.DroppedLate); dirty ones have changed since TakeClosed last reported them.
	late map[lateKey]lateCount
	st   Stats

	since *since // counts since the time boundary; nil unless Config.SinceDays

	// tracked are the salted items reported in full, each with the minute of its last salted
	// event (Track, tracked.go); nil when none.
	tracked map[string]int64

	incIdx []uint32 // scratch for incremental snapshots, indexed by handle, kept zero
	skVer  uint64   // bumped by every change to a sliding-window bucket sketch (sbucket.ver)

	gen int64 // how many times asOf moved: LiveAll's caches are valid within one
	// freqOpen is the frequent windows' scratch map of open counts (frequentwin.go).
	freqOpen map[uint32]int64
	live     *liveState // LiveAll's caches and the events since its last call; nil before it
}

// lateKey names one calendar period of one window: the window's index in wins and the
// period's first minute.
type lateKey struct {
	win   int
	start int64
}

type lateCount struct {
	n     uint64
	dirty bool
}

// LateRetention is how long after a calendar period ends (in event time, by AsOf) a
// partition keeps counting the events too late for it. It matches the merger's default
// retention of closed calendar windows: after that nobody publishes the period's speed list.
const LateRetention = 48 * time.Hour

const lateRetentionMin = int64(LateRetention / time.Minute)

// New returns an empty partition for cfg, or an error wrapping ErrConfig
// (and setting.ErrConfig, naming the field).
func New(cfg Config) (*Partition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.normalized()
	p := &Partition{
		cfg:    cfg,
		lateMs: cfg.latenessMs(),
		curMin: noMinute,
		in:     newInterner(),
		byName: make(map[string]window, len(cfg.Windows)),
		late:   map[lateKey]lateCount{},
	}
	hasher, err := sketch.New(sketch.Config{Width: 1, Depth: 1, Seed: cfg.Sketch.Seed})
	if err != nil {
		return nil, fmt.Errorf("%w: sketch: %w", ErrConfig, err)
	}
	p.hasher = hasher
	for i := range p.gens {
		p.gens[i] = &gen{}
		p.in.register32(&p.gens[i].sparse)
	}
	for _, wc := range cfg.Windows {
		var w window
		switch {
		case wc.Kind == windowset.Decayed && wc.Mode == windowset.Exact:
			w = newDecayedExact(p, wc)
		case wc.Kind == windowset.Decayed:
			w = newDecayedSketch(p, wc)
			p.nSketch++
			// Float additions round by their order: a closed minute reaches the sketch
			// sorted by hash, the same after a restore (as for conservative update).
			p.byHash = true
		case wc.Mode == windowset.Frequent && wc.Kind == windowset.Sliding:
			w = newFreqSliding(wc)
		case wc.Mode == windowset.Frequent:
			w = newFreqRunning(wc, wc.Kind == windowset.AllTime)
		case wc.Kind == windowset.AllTime && wc.Mode == windowset.Exact:
			w = newExactAll(p, wc)
		case wc.Kind == windowset.AllTime:
			w = newSketchAll(p, wc)
			p.nSketch++
			p.byHash = p.byHash || cfg.Sketch.Conservative
		case wc.Kind == windowset.Sliding && wc.Mode == windowset.Exact:
			w = newExactSliding(p, wc)
			if wc.Bucket == time.Minute {
				p.keep = max(p.keep, int64(wc.Length/time.Minute))
			}
		case wc.Kind == windowset.Sliding:
			w = newSketchSliding(p, wc)
			p.nSketch++
		case wc.Mode == windowset.Exact:
			w = newExactCalendar(p, wc)
		default:
			w = newSketchCalendar(p, wc)
			p.nSketch++
			p.byHash = p.byHash || cfg.Sketch.Conservative
		}
		p.wins = append(p.wins, w)
		p.byName[wc.Name] = w
	}
	if cfg.SinceDays > 0 {
		p.since = newSince(p, cfg.SinceDays)
	}
	for _, w := range p.wins {
		switch w := w.(type) {
		case *sketchCalendar:
			w.j = newJournal(p)
		case *sketchAll:
			w.j = newJournal(p)
		}
	}
	return p, nil
}

// Config returns the partition's configuration with defaults filled in.
func (p *Partition) Config() Config { return p.cfg }

// Add counts one event by its event time and says what it did.
func (p *Partition) Add(ev event.Event) Outcome {
	return add(p, ev.ItemID, ev.Count, ev.TS.UnixMilli())
}

// AddBytes is Add for an event whose item id is still in the message it was decoded from
// (event.Decoder): count views of item at Unix milliseconds ms. An item already in the
// partition costs no allocation; a new one is copied, so item may be reused afterwards.
func (p *Partition) AddBytes(item []byte, count uint32, ms int64) Outcome {
	return add(p, item, count, ms)
}

// add is Add and AddBytes. It is generic rather than converting, so that neither path
// allocates for an item the interner already holds.
func add[S string | []byte](p *Partition, item S, count uint32, ms int64) Outcome {
	if count == 0 || len(item) == 0 || ms < minEventMs || ms >= maxEventMs {
		p.st.Invalid++
		return Invalid
	}
	if !p.started || ms > p.maxSeen {
		p.observe(ms)
	}
	m := ms / minuteMs
	if m == p.curMin {
		id := intern(p.in, item)
		p.curGen.add(p, id, uint64(count))
		p.st.Counted++
		if p.live != nil {
			p.logTouch(id, uint64(count), m, false)
		}
		return Counted
	}
	if m >= p.asOf {
		id := intern(p.in, item)
		p.addOpen(m, id, uint64(count))
		p.st.Counted++
		p.logTouch(id, uint64(count), m, false)
		return Counted
	}
	return addLate(p, m, item, uint64(count))
}

// Watermark returns the largest event time seen minus the allowed
// lateness, or the zero time before the first event.
func (p *Partition) Watermark() time.Time {
	if !p.started {
		return time.Time{}
	}
	return time.UnixMilli(max(p.maxSeen-p.lateMs, p.asOf*minuteMs)).UTC()
}

// AsOf returns the watermark truncated to the minute: every minute before
// it is closed and in the sliding windows. Zero before the first event.
func (p *Partition) AsOf() time.Time {
	if !p.started {
		return time.Time{}
	}
	return minuteTime(p.asOf)
}

// AdvanceTo moves the watermark as if an event at t had been seen, without
// counting anything, and reports whether closed minutes advanced. The
// runtime calls it with the wall clock for a partition that is idle and
// caught up, so its lists and calendar windows keep moving; it must not be
// called while the partition lags, or buffered events turn late. Unlike
// Add, it makes the state depend on the wall clock: replaying the log does
// not repeat it. Calendar windows it closes go to TakeClosed.
func (p *Partition) AdvanceTo(t time.Time) bool {
	ms := t.UnixMilli()
	if ms < minEventMs || ms >= maxEventMs || (p.started && ms <= p.maxSeen) {
		return false
	}
	before, was := p.asOf, p.started
	p.observe(ms)
	return !was || p.asOf > before
}

// observe records a new largest event time and moves the watermark.
func (p *Partition) observe(ms int64) {
	p.maxSeen = ms
	target := floorDiv(ms-p.lateMs, minuteMs)
	if !p.started {
		p.started = true
		p.asOf = target
		for _, w := range p.wins {
			w.advance(p)
		}
		if p.since != nil {
			p.since.advance(p)
		}
		return
	}
	if target > p.asOf {
		p.advanceTo(target)
	}
}

// advanceTo closes every open minute before target in order, then moves
// every window to target. Windows move minute by minute only where a minute
// has data; an idle stretch is one step, so a jump of a year costs no more
// than the buckets it expires.
func (p *Partition) advanceTo(target int64) {
	for len(p.open) > 0 && p.open[0].minute < target {
		m := p.open[0].minute
		p.setAsOf(m)
		p.closeMinute()
		p.setAsOf(m + 1)
	}
	p.setAsOf(target)
}

func (p *Partition) setAsOf(x int64) {
	if x <= p.asOf {
		return
	}
	p.asOf, p.gen = x, p.gen+1
	for _, w := range p.wins {
		w.advance(p)
	}
	if p.since != nil {
		p.since.advance(p)
	}
	p.expireTracked()
	n := 0
	for n < len(p.minutes) && p.minutes[n].start < x-p.keep {
		p.minutes[n].release(p.in)
		n++
	}
	if n > 0 {
		p.minutes.popFront(n)
	}
}

// closeMinute freezes the oldest open minute (== p.asOf-1) into an array
// of packed entries, adds it to every window, and keeps it in the minute
// ring if a minute-bucket window needs it for expiry. The open entries'
// references pass to the frozen bucket.
func (p *Partition) closeMinute() {
	om := p.open[0]
	p.open = slices.Delete(p.open, 0, 1)
	f := &frozen{start: om.minute, ents: make([]uint64, 0, om.entries())}
	om.each(f.put)
	p.releaseOpen(&om)
	var hs, ns []uint64
	if p.nSketch > 0 {
		hs = p.hashBuf[:0]
		for _, e := range f.ents {
			hs = append(hs, p.hash(uint32(e>>32)))
		}
		p.hashBuf = hs
		if p.byHash {
			p.sortByHash(f, hs)
		}
		ns = p.cntBuf[:0]
		for _, e := range f.ents {
			ns = append(ns, e&math.MaxUint32)
		}
		p.cntBuf = ns
	}
	for _, w := range p.wins {
		w.addMinute(p, f, hs, ns)
	}
	if p.since != nil {
		p.since.addMinute(p, f)
	}
	if p.keep > 0 {
		p.minutes = append(p.minutes, f)
	} else {
		f.release(p.in)
	}
}

// sortByHash sorts a closed minute's entries, and their hashes with them,
// by hash: the canonical order in which conservative sketches take them
// (see addFrozen). A frozen bucket's entries are in no particular order
// anyway.
func (p *Partition) sortByHash(f *frozen, hs []uint64) {
	buf := p.sortBuf[:0]
	for i, e := range f.ents {
		buf = append(buf, hashEnt{hs[i], e})
	}
	slices.SortFunc(buf, func(a, b hashEnt) int { return cmp.Compare(a.h, b.h) })
	for i, x := range buf {
		hs[i], f.ents[i] = x.h, x.v
	}
	p.sortBuf = buf
}

// addLate counts an event whose minute m has closed, wherever it still can. A calendar
// window that no longer accepts it (its period has closed) counts it as dropped late.
func addLate[S string | []byte](p *Partition, m int64, item S, c uint64) Outcome {
	inSince := p.since != nil && p.since.accepts(p, m)
	anyWin := inSince
	for i, w := range p.wins {
		if w.accepts(p, m) {
			anyWin = true
		} else if wc := w.conf(); wc.Kind == windowset.Calendar {
			p.dropLate(i, wc.Span.StartMinute(m))
		}
	}
	if !anyWin {
		p.st.TooLate++
		return TooLate
	}
	id := intern(p.in, item)
	if p.keep > 0 && m >= p.asOf-p.keep {
		if p.minutes.at(m).add(id, c) {
			p.in.ref(id)
		}
	}
	var h uint64
	if p.nSketch > 0 {
		h = p.hash(id)
	}
	for _, w := range p.wins {
		if w.accepts(p, m) {
			w.addLate(p, m, id, c, h)
		}
	}
	if inSince {
		p.since.addLate(p, m, id, c)
	}
	p.logTouch(id, c, m, true)
	p.in.releaseIfUnused(id)
	p.st.Late++
	return Late
}

// dropLate counts one event too late for the period of window wi starting at start,
// unless the period ended longer than LateRetention ago.
func (p *Partition) dropLate(wi int, start int64) {
	if p.wins[wi].conf().Span.EndMinute(start) < p.asOf-lateRetentionMin {
		return
	}
	k := lateKey{wi, start}
	lc := p.late[k]
	p.late[k] = lateCount{n: lc.n + 1, dirty: true}
}

// hash is the sketch hash of an item (every sketch shares the seed).
func (p *Partition) hash(id uint32) uint64 {
	return p.hasher.HashString(p.in.strs[id])
}

// Top returns the partition's top M*K for the named window as of AsOf:
// a sliding window's last Length, or the open calendar period's minutes so
// far. It returns an error wrapping ErrUnknownWindow for a name the Config
// does not define.
func (p *Partition) Top(name string) (List, error) {
	w, ok := p.byName[name]
	if !ok {
		return List{}, fmt.Errorf("top %q: %w", name, ErrUnknownWindow)
	}
	l := w.top(p)
	l.Tracked = p.closedTracked(w, l.Start)
	return l, nil
}

// TakeClosed returns the final lists of the calendar windows that closed
// since the last call, oldest first, and forgets them. A period produces a
// list only if the partition counted something in it.
func (p *Partition) TakeClosed() []List {
	c := p.closed
	p.closed = nil
	return c
}

// TakeLate returns the late-drop updates (LateOnly lists, ordered by window
// and period) of the closed calendar periods whose DroppedLate changed since
// the last call, and forgets periods that ended more than LateRetention
// before AsOf. A period that produced no final list (the partition counted
// nothing in it) gets updates too. Call it after TakeClosed, so an update
// follows the final list it amends.
func (p *Partition) TakeLate() []List {
	var c []List
	var upd []lateKey
	for k, lc := range p.late {
		switch {
		case p.wins[k.win].conf().Span.EndMinute(k.start) < p.asOf-lateRetentionMin:
			delete(p.late, k)
		case lc.dirty:
			upd = append(upd, k)
		}
	}
	slices.SortFunc(upd, compareLateKeys)
	for _, k := range upd {
		lc := p.late[k]
		p.late[k] = lateCount{n: lc.n}
		wc := p.wins[k.win].conf()
		end := minuteTime(wc.Span.EndMinute(k.start))
		c = append(c, List{Window: wc.Name, Start: minuteTime(k.start), End: end, AsOf: end, Final: true, LateOnly: true,
			Exact: wc.Mode == windowset.Exact, Frequent: wc.Mode == windowset.Frequent, DroppedLate: lc.n})
	}
	return c
}

func compareLateKeys(a, b lateKey) int {
	if a.win != b.win {
		return cmp.Compare(a.win, b.win)
	}
	return cmp.Compare(a.start, b.start)
}

// windex is the index in wins of the window named name, or -1.
func (p *Partition) windex(name string) int {
	return slices.IndexFunc(p.wins, func(w window) bool { return w.conf().Name == name })
}

// DroppedLate returns the events too late for the calendar period of the named window
// that starts at start (0 when none, or when the period is not tracked).
func (p *Partition) DroppedLate(name string, start time.Time) uint64 {
	return p.late[lateKey{p.windex(name), start.Unix() / 60}].n
}

// Stats returns counters and a size estimate of the state.
func (p *Partition) Stats() Stats {
	s := p.st
	s.Items = p.in.live()
	s.Bytes = p.in.bytes()
	s.OpenMinutes = len(p.open)
	for _, o := range p.open {
		s.OpenEntries += o.entries()
		s.Bytes += int64(o.entries()) * 20
	}
	for _, f := range p.minutes {
		s.Entries += f.entries()
		s.Bytes += f.bytes()
	}
	for _, w := range p.wins {
		w.stats(&s)
	}
	if p.since != nil {
		p.since.stats(&s)
	}
	for _, g := range p.gens {
		s.Bytes += int64(cap(g.sparse))*4 + int64(cap(g.ids))*12
	}
	s.Sketches += len(p.pool)
	s.Bytes += int64(len(p.pool)) * int64(p.cfg.Sketch.Width*p.cfg.Sketch.Depth*8)
	return s
}

// mk is the number of items a partition reports per window.
func (p *Partition) mk() int { return p.cfg.M * p.cfg.K }

func minuteTime(m int64) time.Time { return time.Unix(m*60, 0).UTC() }

// newSketch returns a reset sliding-window sketch, reusing a pooled one.
func (p *Partition) newSketch() *sketch.Sketch {
	if n := len(p.pool); n > 0 {
		s := p.pool[n-1]
		p.pool = p.pool[:n-1]
		return s
	}
	cfg := p.cfg.Sketch
	cfg.Conservative = false
	s, err := sketch.New(cfg)
	if err != nil {
		panic("BUG: window: validated sketch config rejected: " + err.Error())
	}
	return s
}

// putSketch returns a sliding-window sketch to the pool. The pool keeps
// at most two: buckets expire one at a time and are replaced one at a time.
func (p *Partition) putSketch(s *sketch.Sketch) {
	if len(p.pool) >= 2 {
		return
	}
	s.Reset()
	p.pool = append(p.pool, s)
}

// topOf keeps the best n of the items each offers.
func topOf(n int, each func(offer func(id uint32, c uint64)), strs []string) []topk.Entry {
	h := topk.NewHeap(n)
	each(func(id uint32, c uint64) { h.Offer(strs[id], c) })
	return h.Sorted()
}
