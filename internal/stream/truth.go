package stream

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"trending/model/event"
	"trending/model/topk"
)

// Truth is the exact ground truth of a stream: the views of every item in
// every minute of event time, for every valid event it was given. Any
// [from, to) range of whole minutes can be summed (Range), and the whole
// written to a file (WriteTo, docs/accuracy.md) and read back (ReadTruth).
//
// The newest few minutes are counted in maps; older ones are frozen into
// arrays of 8-byte (item, count) entries, so a month of a few million views
// takes tens of megabytes. A late event reopens its minute's map until the
// next freeze. A Truth is not safe for concurrent use.
type Truth struct {
	ids    map[string]uint32
	names  []string
	mins   map[int64]*truthMinute
	hot    []int64 // minutes with a map
	newest int64
	views  uint64
	events uint64
	// regions holds the truth of each region's events (Region), beside this one of
	// every event; nil in a region's own Truth.
	regions map[string]*Truth
	inner   bool // a region's Truth: it keeps no regions of its own
}

type truthMinute struct {
	ents []truthEntry // may hold an item more than once: sums add them
	hot  map[uint32]uint64
}

type truthEntry struct{ id, n uint32 }

// hotMinutes is how many minutes behind the newest stay in maps: the
// generator's events arrive in time order, so only late events touch older
// minutes.
const hotMinutes = 2

// NewTruth returns an empty Truth.
func NewTruth() *Truth {
	return &Truth{ids: make(map[string]uint32), mins: make(map[int64]*truthMinute), newest: math.MinInt64}
}

// Add counts a valid event in its minute of event time. It panics on an
// event with an empty item or a zero count: only valid events are truth.
func (t *Truth) Add(ev event.Event) {
	if ev.ItemID == "" || ev.Count == 0 {
		panic("BUG: stream: Truth.Add of an invalid event")
	}
	t.add(floorDiv(ev.TS.UnixMilli(), 60_000), ev.ItemID, uint64(ev.Count))
	t.events++
	if ev.Region != "" && !t.inner {
		r := t.region(ev.Region)
		r.add(floorDiv(ev.TS.UnixMilli(), 60_000), ev.ItemID, uint64(ev.Count))
		r.events++
	}
}

// region returns region's Truth, creating it.
func (t *Truth) region(name string) *Truth {
	r := t.regions[name]
	if r == nil {
		if t.regions == nil {
			t.regions = map[string]*Truth{}
		}
		r = NewTruth()
		r.inner = true
		t.regions[name] = r
	}
	return r
}

// Region returns the truth of the events of one region (the list per region of
// model/windowset.Groups): empty when none had it.
func (t *Truth) Region(name string) *Truth {
	if r := t.regions[name]; r != nil {
		return r
	}
	r := NewTruth()
	r.inner = true
	return r
}

// Regions returns the regions with events, sorted.
func (t *Truth) Regions() []string {
	out := make([]string, 0, len(t.regions))
	for r := range t.regions {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (t *Truth) add(m int64, item string, n uint64) {
	id, ok := t.ids[item]
	if !ok {
		id = uint32(len(t.names))
		t.ids[item] = id
		t.names = append(t.names, item)
	}
	mi := t.mins[m]
	if mi == nil {
		mi = &truthMinute{}
		t.mins[m] = mi
	}
	if mi.hot == nil {
		mi.hot = make(map[uint32]uint64)
		t.hot = append(t.hot, m)
	}
	mi.hot[id] += n
	t.views += n
	if m > t.newest {
		t.newest = m
		t.freeze(m - hotMinutes)
	}
}

// freeze moves every map of a minute before limit into entries.
func (t *Truth) freeze(limit int64) {
	keep := t.hot[:0]
	for _, m := range t.hot {
		if m >= limit {
			keep = append(keep, m)
			continue
		}
		mi := t.mins[m]
		for id, n := range mi.hot {
			for n > math.MaxUint32 {
				mi.ents = append(mi.ents, truthEntry{id, math.MaxUint32})
				n -= math.MaxUint32
			}
			mi.ents = append(mi.ents, truthEntry{id, uint32(n)})
		}
		mi.hot = nil
	}
	t.hot = keep
}

// Views returns the sum of the counts of every event added.
func (t *Truth) Views() uint64 { return t.views }

// Events returns the number of events added (0 for a Truth read from a
// file, which keeps only per-minute sums).
func (t *Truth) Events() uint64 { return t.events }

// Items returns the number of distinct items seen.
func (t *Truth) Items() int { return len(t.names) }

// Span returns the first minute with views and the end of the last one
// (both zero when empty).
func (t *Truth) Span() (from, to time.Time) {
	if len(t.mins) == 0 {
		return time.Time{}, time.Time{}
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for m := range t.mins {
		lo, hi = min(lo, m), max(hi, m)
	}
	return minuteStart(lo), minuteStart(hi + 1)
}

// Range sums every minute whose start is in [from, to): the truth is kept
// by minute, so from and to are effectively rounded up to whole minutes.
func (t *Truth) Range(from, to time.Time) Counts {
	c := Counts{t: t, m: make(map[uint32]uint64)}
	lo := ceilDiv(from.UnixMilli(), 60_000)
	hi := ceilDiv(to.UnixMilli(), 60_000)
	if hi <= lo {
		return c
	}
	sum := func(mi *truthMinute) {
		for _, e := range mi.ents {
			c.m[e.id] += uint64(e.n)
			c.total += uint64(e.n)
		}
		for id, n := range mi.hot {
			c.m[id] += n
			c.total += n
		}
	}
	if hi-lo <= int64(len(t.mins)) {
		for m := lo; m < hi; m++ {
			if mi := t.mins[m]; mi != nil {
				sum(mi)
			}
		}
		return c
	}
	for m, mi := range t.mins {
		if m >= lo && m < hi {
			sum(mi)
		}
	}
	return c
}

// Counts are the exact views of every item over a range of a Truth.
type Counts struct {
	t     *Truth
	m     map[uint32]uint64
	total uint64
}

// Get returns the views of item (0 when it has none).
func (c Counts) Get(item string) uint64 {
	id, ok := c.t.ids[item]
	if !ok {
		return 0
	}
	return c.m[id]
}

// Total returns the views of all items: a sketch's N.
func (c Counts) Total() uint64 { return c.total }

// Len returns the number of items with views.
func (c Counts) Len() int { return len(c.m) }

// Top returns the k items with the most views, ranked as topk ranks them
// (count descending, then item ascending).
func (c Counts) Top(k int) []topk.Entry { return c.TopWhere(k, nil) }

// TopWhere is Top over the items keep accepts (nil keeps all): the true top
// of one partition when keep selects its items.
func (c Counts) TopWhere(k int, keep func(item string) bool) []topk.Entry {
	h := topk.NewHeap(k)
	for id, n := range c.m {
		if s := c.t.names[id]; keep == nil || keep(s) {
			h.Offer(s, n)
		}
	}
	return h.Sorted()
}

// Each calls fn for every item with views, in no particular order.
func (c Counts) Each(fn func(item string, n uint64)) {
	for id, n := range c.m {
		fn(c.t.names[id], n)
	}
}

// Map returns the counts as a map of item to views.
func (c Counts) Map() map[string]uint64 {
	out := make(map[string]uint64, len(c.m))
	c.Each(func(s string, n uint64) { out[s] = n })
	return out
}

// truthLine is one line of a truth file: one minute of every event, or of one region's.
type truthLine struct {
	Minute string            `json:"minute"`
	Region string            `json:"region,omitempty"`
	Counts map[string]uint64 `json:"counts"`
}

// WriteTo writes the truth as JSON lines, one per minute with views, in
// time order: {"minute":"2026-01-01T00:05:00Z","counts":{"V1":1234,"V7":3}}
// with items in byte order, each followed by the same minute's line of each
// region with views, in region order ({"minute":...,"region":"eu","counts":...}).
// The same truth always gives the same bytes.
func (t *Truth) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	cw := &countingWriter{w: bw}
	enc := json.NewEncoder(cw)
	enc.SetEscapeHTML(false)
	// Every minute with views, of every event or of a region (a region's minute is written
	// after its minute's line of every event, even one without views: a file may say so).
	seen := make(map[int64]bool, len(t.mins))
	keys := make([]int64, 0, len(t.mins))
	regions := t.Regions()
	for _, tr := range append([]*Truth{t}, func() []*Truth {
		out := make([]*Truth, len(regions))
		for i, r := range regions {
			out[i] = t.regions[r]
		}
		return out
	}()...) {
		for m := range tr.mins {
			if !seen[m] {
				seen[m] = true
				keys = append(keys, m)
			}
		}
	}
	slices.Sort(keys)
	for _, m := range keys {
		if err := enc.Encode(t.line(m, "")); err != nil {
			return cw.n, fmt.Errorf("write truth: %w", err)
		}
		for _, r := range regions {
			if rt := t.regions[r]; rt.mins[m] != nil {
				if err := enc.Encode(rt.line(m, r)); err != nil {
					return cw.n, fmt.Errorf("write truth: %w", err)
				}
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, fmt.Errorf("write truth: %w", err)
	}
	return cw.n, nil
}

// line is minute m's line of the file.
func (t *Truth) line(m int64, region string) *truthLine {
	mi := t.mins[m]
	if mi == nil {
		mi = &truthMinute{}
	}
	line := &truthLine{Minute: minuteStart(m).Format(time.RFC3339), Region: region, Counts: make(map[string]uint64, len(mi.ents)+len(mi.hot))}
	for _, e := range mi.ents {
		line.Counts[t.names[e.id]] += uint64(e.n)
	}
	for id, n := range mi.hot {
		line.Counts[t.names[id]] += n
	}
	return line
}

// ReadTruth reads a file WriteTo wrote. It is strict, since a truth that is
// silently wrong makes every accuracy figure wrong: each line must be one
// object with exactly the fields minute (RFC 3339, a whole UTC minute,
// increasing from line to line) and counts (valid item ids to counts of at
// least 1), or a region's line: minute, region (a valid event region) and
// counts, after its minute's line of every event and increasing in region
// within the minute. A region's counts are not checked against the line of
// every event. Errors wrap ErrTruthFormat and name the line.
func ReadTruth(r io.Reader) (*Truth, error) {
	t := NewTruth()
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	dec.DisallowUnknownFields()
	prev := int64(math.MinInt64)
	prevRegion := ""
	for line := 1; ; line++ {
		var l truthLine
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		bad := func(format string, args ...any) (*Truth, error) {
			return nil, fmt.Errorf("%w: line %d: %s", ErrTruthFormat, line, fmt.Sprintf(format, args...))
		}
		if err != nil {
			return bad("%v", err)
		}
		ts, err := time.Parse(time.RFC3339, l.Minute)
		if err != nil {
			return bad("minute %q: %v", l.Minute, err)
		}
		ms := ts.UnixMilli()
		if ts.Location() != time.UTC || ms%60_000 != 0 || ts.Nanosecond() != 0 {
			return bad("minute %q is not a whole minute in UTC (such as 2026-01-01T00:05:00Z)", l.Minute)
		}
		m := ms / 60_000
		into := t
		if l.Region != "" {
			if err := (event.Event{ItemID: "V", Count: 1, TS: ts, Region: l.Region}).Validate(); err != nil {
				return bad("region %q: %v", l.Region, err)
			}
			if m != prev || l.Region <= prevRegion {
				return bad("region %q of minute %s: a region's line follows its minute's line of every event, regions in order", l.Region, l.Minute)
			}
			prevRegion, into = l.Region, t.region(l.Region)
		} else {
			if m <= prev {
				return bad("minute %s is not after the previous line's", l.Minute)
			}
			prev, prevRegion = m, ""
		}
		if l.Counts == nil {
			return bad("minute %s has no counts", l.Minute)
		}
		items := make([]string, 0, len(l.Counts))
		for item := range l.Counts {
			items = append(items, item)
		}
		slices.Sort(items) // a deterministic order of ids, so equal files give equal Truths
		for _, item := range items {
			n := l.Counts[item]
			if err := (event.Event{ItemID: item, Count: 1, TS: ts}).Validate(); err != nil {
				return bad("minute %s: %v", l.Minute, err)
			}
			if n == 0 {
				return bad("minute %s: item %q has count 0: leave it out", l.Minute, item)
			}
			if into.views+n < into.views {
				return bad("counts overflow")
			}
			into.add(m, item, n)
		}
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func minuteStart(m int64) time.Time { return time.UnixMilli(m * 60_000).UTC() }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
