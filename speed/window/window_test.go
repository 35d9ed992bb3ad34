package window

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"trending/internal/setting"
	trmodel "trending/model"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// t0 is just before a month boundary, so that a 30-hour stream crosses
// calendar hours, days and a month.
var t0 = time.Date(2026, 1, 31, 9, 0, 0, 0, time.UTC)

// streamOpts shapes a random event stream.
type streamOpts struct {
	seed   uint64
	n      int           // events
	items  int           // distinct items (Zipf-ish)
	step   time.Duration // mean processing-time gap between events
	counts int           // counts are 1..counts
	late   bool          // include late and too-late events
}

// genStream returns a seeded stream: processing time moves forward by about
// step per event; event time trails it by a little (mostly), a few minutes
// (sometimes), hours or days (rarely).
func genStream(o streamOpts) []event.Event {
	r := rand.New(rand.NewPCG(o.seed, 99))
	zipf := rand.NewZipf(r, 1.2, 1, uint64(o.items-1))
	now := t0
	evs := make([]event.Event, 0, o.n)
	for range o.n {
		now = now.Add(time.Duration(r.Int64N(int64(2 * o.step))))
		ts := now.Add(-time.Duration(r.Int64N(int64(20 * time.Second))))
		if o.late {
			switch x := r.IntN(100); {
			case x < 8:
				ts = now.Add(-time.Duration(r.Int64N(int64(5 * time.Minute))))
			case x < 11:
				ts = now.Add(-time.Duration(r.Int64N(int64(3 * time.Hour))))
			case x < 12:
				ts = now.Add(-time.Duration(r.Int64N(int64(72 * time.Hour))))
			case x < 13:
				ts = now.Add(-40*24*time.Hour - time.Duration(r.Int64N(int64(20*24*time.Hour))))
			}
		}
		evs = append(evs, event.Event{
			ItemID: fmt.Sprintf("v%03d", zipf.Uint64()),
			Count:  uint32(1 + r.IntN(o.counts)),
			TS:     ts.Truncate(time.Millisecond),
		})
	}
	return evs
}

// model recomputes everything from the raw events, from scratch, with none
// of the partition's data structures: the truth the tests compare with.
type model struct {
	cfg     Config
	started bool
	maxSeen int64
	asOf    int64
	recs    []rec
}

type rec struct {
	m       int64 // event minute
	item    string
	c       uint64
	arrAsOf int64 // the watermark minute right after the event was seen
	outcome Outcome
}

func newModel(cfg Config) *model { return &model{cfg: cfg.normalized()} }

// windowsConfig is DefaultConfig with windows ws instead of the default ones.
func windowsConfig(ws []WindowConfig) Config {
	c := DefaultConfig()
	c.Windows = ws
	return c
}

func (md *model) windowStart(wc WindowConfig, asOf int64) int64 {
	b := int64(wc.Bucket / time.Minute)
	return floorTo(asOf-1, b) - (int64(wc.Length/wc.Bucket)-1)*b
}

func (md *model) add(ev event.Event) Outcome {
	ms := ev.TS.UnixMilli()
	if !md.started || ms > md.maxSeen {
		md.maxSeen = ms
		a := floorDiv(ms-md.cfg.latenessMs(), minuteMs)
		if !md.started || a > md.asOf {
			md.asOf = a
		}
		md.started = true
	}
	m := floorDiv(ms, minuteMs)
	o := TooLate
	if m >= md.asOf {
		o = Counted
	} else {
		for _, wc := range md.cfg.Windows {
			if wc.Kind == windowset.Sliding && m >= md.windowStart(wc, md.asOf) ||
				wc.Kind == windowset.Calendar && wc.Span.EndMinute(wc.Span.StartMinute(m)) > md.asOf ||
				wc.Kind == windowset.AllTime || wc.Kind == windowset.Decayed {
				o = Late
			}
		}
	}
	md.recs = append(md.recs, rec{m: m, item: ev.ItemID, c: uint64(ev.Count), arrAsOf: md.asOf, outcome: o})
	return o
}

// sliding returns the exact counts of a sliding window as of the model's
// watermark: every event whose minute is in the window (an event in range
// was necessarily accepted when it arrived, since window starts only move
// forward).
func (md *model) sliding(wc WindowConfig) map[string]uint64 {
	ws := md.windowStart(wc, md.asOf)
	out := map[string]uint64{}
	for _, r := range md.recs {
		if r.m >= ws && r.m < md.asOf {
			out[r.item] += r.c
		}
	}
	return out
}

// allTime returns the exact all-time counts as of the model's watermark:
// every event whose minute has closed (with an all-time window nothing is
// TooLate, so every such event was counted).
func (md *model) allTime() map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range md.recs {
		if r.m < md.asOf {
			out[r.item] += r.c
		}
	}
	return out
}

// period returns the exact counts of calendar period [start, end) from the
// events that arrived before the watermark passed its end.
func (md *model) period(start, end int64) map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range md.recs {
		if r.m >= start && r.m < end && r.m < md.asOf && r.arrAsOf < end {
			out[r.item] += r.c
		}
	}
	return out
}

func sum(m map[string]uint64) uint64 {
	var s uint64
	for _, c := range m {
		s += c
	}
	return s
}

// wantTop is the brute-force top n with the package's tie-break.
func wantTop(m map[string]uint64, n int) []topk.Entry {
	all := make([]topk.Entry, 0, len(m))
	for k, c := range m {
		all = append(all, topk.Entry{Item: k, Count: c})
	}
	slices.SortFunc(all, func(a, b topk.Entry) int {
		if topk.Less(a, b) {
			return -1
		}
		if topk.Less(b, a) {
			return 1
		}
		return 0
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}

func entriesEqual(a, b []topk.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// exactTestConfig has every window kind, counted exactly, sized for tests.
func exactTestConfig() Config {
	c := windowsConfig([]WindowConfig{
		{Name: "10min", Kind: windowset.Sliding, Length: 10 * time.Minute, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "3h", Kind: windowset.Sliding, Length: 3 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
		{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
		{Name: "2days", Kind: windowset.Sliding, Length: 48 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Exact},
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Exact},
		{Name: "calendar-month", Kind: windowset.Calendar, Span: trmodel.Month, Mode: windowset.Exact},
	})
	c.K, c.M, c.AllowedLateness = 3, 2, time.Minute
	return c
}

// checkAgainstModel compares every window's Top with the model.
func checkAgainstModel(t *testing.T, p *Partition, md *model) {
	t.Helper()
	if got, want := p.AsOf(), minuteTime(md.asOf); !got.Equal(want) {
		t.Fatalf("AsOf %v, want %v", got, want)
	}
	if got, want := p.Watermark(), time.UnixMilli(md.maxSeen-md.cfg.latenessMs()).UTC(); !got.Equal(want) {
		t.Fatalf("Watermark %v, want %v", got, want)
	}
	for _, wc := range md.cfg.Windows {
		l, err := p.Top(wc.Name)
		if err != nil {
			t.Fatal(err)
		}
		var truth map[string]uint64
		var start, end int64
		switch wc.Kind {
		case windowset.Sliding:
			truth = md.sliding(wc)
			start, end = md.windowStart(wc, md.asOf), md.asOf
		case windowset.AllTime:
			truth = md.allTime()
			start, end = minEventMs/minuteMs, md.asOf
		default:
			start = wc.Span.StartMinute(md.asOf)
			end = wc.Span.EndMinute(start)
			truth = md.period(start, end)
		}
		if !l.Start.Equal(minuteTime(start)) || !l.End.Equal(minuteTime(end)) {
			t.Fatalf("%s as of %v: [%v, %v), want [%v, %v)", wc.Name, minuteTime(md.asOf), l.Start, l.End, minuteTime(start), minuteTime(end))
		}
		if wc.Mode == windowset.Exact {
			if want := wantTop(truth, md.cfg.M*md.cfg.K); !entriesEqual(l.Items, want) || l.Total != sum(truth) || !l.Exact {
				t.Fatalf("%s as of %v:\n got %v total %d\nwant %v total %d", wc.Name, minuteTime(md.asOf), l.Items, l.Total, want, sum(truth))
			}
			continue
		}
		checkSketchList(t, l, truth)
	}
}

// checkSketchList checks a sketch window's list against the exact counts:
// the same N, and every estimate at or above the truth and within the
// stated bound.
func checkSketchList(t *testing.T, l List, truth map[string]uint64) {
	t.Helper()
	if l.Exact || l.Bound == nil {
		t.Fatalf("%s: sketch list says exact=%t bound=%v", l.Window, l.Exact, l.Bound)
	}
	if l.Total != sum(truth) {
		t.Fatalf("%s as of %v: N %d, want %d", l.Window, l.AsOf, l.Total, sum(truth))
	}
	for _, e := range l.Items {
		tc := truth[e.Item]
		if e.Count < tc || float64(e.Count-tc) > l.Bound.MaxOvercount+1e-9 {
			t.Fatalf("%s: %s estimate %d, true %d, bound %.1f", l.Window, e.Item, e.Count, tc, l.Bound.MaxOvercount)
		}
	}
}

func TestExactMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		o        streamOpts
		every    int           // check after every this many events
		lateness time.Duration // 0: exactTestConfig's minute; negative: none
		all      bool          // add an exact all-time window
	}{
		{"in-order", streamOpts{seed: 1, n: 8000, items: 40, step: 15 * time.Second, counts: 3}, 97, 0, false},
		{"late-and-too-late", streamOpts{seed: 2, n: 8000, items: 40, step: 15 * time.Second, counts: 3, late: true}, 97, 0, false},
		{"dense-ties", streamOpts{seed: 3, n: 6000, items: 12, step: 20 * time.Second, counts: 1, late: true}, 97, 0, false},
		{"sparse", streamOpts{seed: 4, n: 1500, items: 300, step: 90 * time.Second, counts: 5, late: true}, 1, 0, false},
		// Five minutes of lateness keeps up to six minutes open: more than
		// the dense gens, so older open minutes move to map form.
		{"long-lateness", streamOpts{seed: 6, n: 6000, items: 60, step: 10 * time.Second, counts: 3, late: true}, 53, 5 * time.Minute, false},
		{"no-lateness", streamOpts{seed: 7, n: 4000, items: 60, step: 10 * time.Second, counts: 3, late: true}, 53, -1, false},
		// An all-time window turns every too-late event into a late one
		// counted there, and keeps its items after everything else expired.
		{"all-time", streamOpts{seed: 2, n: 8000, items: 40, step: 15 * time.Second, counts: 3, late: true}, 97, 0, true},
		{"all-time-sparse", streamOpts{seed: 4, n: 1500, items: 300, step: 90 * time.Second, counts: 5, late: true}, 7, -1, true},
		// 3,000 events 5 minutes apart: ten days, so calendar weeks close.
		{"weeks", streamOpts{seed: 8, n: 3000, items: 40, step: 5 * time.Minute, counts: 3, late: true}, 31, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := exactTestConfig()
			cfg.Windows = append(cfg.Windows, WindowConfig{Name: "calendar-week", Kind: windowset.Calendar, Span: trmodel.Week, Mode: windowset.Exact})
			switch {
			case tc.lateness < 0:
				cfg.AllowedLateness = 0
			case tc.lateness > 0:
				cfg.AllowedLateness = tc.lateness
			}
			if tc.all {
				cfg.Windows = append(cfg.Windows, WindowConfig{Name: "all", Kind: windowset.AllTime, Mode: windowset.Exact})
			}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			md := newModel(cfg)
			var closed []List
			for i, ev := range genStream(tc.o) {
				want := md.add(ev)
				if got := p.Add(ev); got != want {
					t.Fatalf("event %d (%+v): outcome %v, want %v", i, ev, got, want)
				}
				closed = append(closed, p.TakeClosed()...)
				if i%tc.every == 0 {
					checkAgainstModel(t, p, md)
					checkInvariants(t, p)
				}
			}
			checkAgainstModel(t, p, md)
			checkInvariants(t, p)
			// Close everything: advance far past the last event.
			far := minuteTime(md.asOf).Add(40 * 24 * time.Hour)
			p.AdvanceTo(far)
			md.add(event.Event{ItemID: "x", Count: 1, TS: far}) // moves the model's watermark
			md.recs = md.recs[:len(md.recs)-1]
			closed = append(closed, p.TakeClosed()...)
			checkClosed(t, md, closed)
			checkInvariants(t, p)
			items := 0 // what the all-time window keeps for good
			if tc.all {
				items = len(md.allTime())
				if l, _ := p.Top("all"); l.Total != sum(md.allTime()) || l.Total == 0 {
					t.Fatalf("all-time total %d after everything else expired, want %d", l.Total, sum(md.allTime()))
				}
				if s := p.Stats(); s.TooLate != 0 || s.Late == 0 {
					t.Fatalf("with an all-time window: %d too late, %d late", s.TooLate, s.Late)
				}
			}
			if s := p.Stats(); s.Items != items || s.Entries != 0 {
				t.Fatalf("after everything expired: %d items (want %d), %d entries held", s.Items, items, s.Entries)
			}
		})
	}
}

// checkClosed checks exactly one final list per calendar period that
// counted something, equal to the brute force over the events that arrived
// before it closed.
func checkClosed(t *testing.T, md *model, closed []List) {
	t.Helper()
	type key struct {
		win   string
		start int64
	}
	got := map[key]List{}
	for _, l := range closed {
		k := key{l.Window, l.Start.Unix() / 60}
		if _, dup := got[k]; dup {
			t.Fatalf("%s %v closed twice", l.Window, l.Start)
		}
		if !l.Final {
			t.Fatalf("%s %v: closed list not final", l.Window, l.Start)
		}
		got[k] = l
	}
	want := map[key]bool{}
	for _, wc := range md.cfg.Windows {
		if wc.Kind != windowset.Calendar {
			continue
		}
		for _, r := range md.recs {
			s := wc.Span.StartMinute(r.m)
			if r.arrAsOf < wc.Span.EndMinute(s) {
				want[key{wc.Name, s}] = true
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d closed lists, want %d", len(got), len(want))
	}
	for k := range want {
		l, ok := got[k]
		if !ok {
			t.Fatalf("no closed list for %s %v", k.win, minuteTime(k.start))
		}
		var wc WindowConfig
		for _, w := range md.cfg.Windows {
			if w.Name == k.win {
				wc = w
			}
		}
		end := wc.Span.EndMinute(k.start)
		truth := md.period(k.start, end)
		if !l.End.Equal(minuteTime(end)) || !l.AsOf.Equal(l.End) {
			t.Fatalf("%s %v: end %v as of %v", k.win, l.Start, l.End, l.AsOf)
		}
		if wc.Mode != windowset.Exact {
			checkSketchList(t, l, truth)
			continue
		}
		if w := wantTop(truth, md.cfg.M*md.cfg.K); !entriesEqual(l.Items, w) || l.Total != sum(truth) {
			t.Fatalf("%s %v final:\n got %v\nwant %v", k.win, l.Start, l.Items, w)
		}
	}
}

// checkInvariants recomputes every derived quantity from the buckets: the
// sliding totals, the running sketches, and the reference counts.
// countJournal counts the references a sketch journal's single adds hold.
func countJournal(refs []uint32, j *journal) {
	for _, o := range j.ops {
		if o.minute == noMinute {
			refs[o.id]++
		}
	}
}

func checkInvariants(t *testing.T, p *Partition) {
	t.Helper()
	refs := make([]uint32, len(p.in.strs))
	countFrozen := func(f *frozen) {
		for _, e := range f.ents {
			refs[e>>32]++
		}
		for id := range f.extra {
			refs[id]++
		}
	}
	for i := range p.open {
		p.open[i].each(func(id uint32, _ uint64) { refs[id]++ })
	}
	for _, f := range p.minutes {
		countFrozen(f)
		if f.start >= p.asOf || f.start < p.asOf-p.keep {
			t.Fatalf("minute bucket %d outside [%d, %d)", f.start, p.asOf-p.keep, p.asOf)
		}
	}
	for _, w := range p.wins {
		switch w := w.(type) {
		case *exactSliding:
			want := make([]uint64, len(w.totals))
			var n uint64
			ws := w.start(p.asOf)
			addF := func(f *frozen) {
				f.each(func(id uint32, c uint64) { want[id] += c; n += c })
			}
			if w.b == 1 {
				for _, f := range p.minutes {
					if f.start >= ws {
						addF(f)
					}
				}
			} else {
				nb := floorTo(p.asOf-1, w.b)
				for i, f := range w.ring {
					if f.start < ws || f.start >= nb || (i > 0 && f.start <= w.ring[i-1].start) {
						t.Fatalf("%s: ring bucket %d out of order or outside [%d, %d)", w.cfg.Name, f.start, ws, nb)
					}
				}
				if w.hasOpen && w.openStart != nb {
					t.Fatalf("%s: open bucket %d, newest bucket is %d", w.cfg.Name, w.openStart, nb)
				}
				for _, f := range w.ring {
					countFrozen(f)
					addF(f)
				}
				for id, c := range w.openBucket {
					refs[id]++
					want[id] += c
					n += c
				}
			}
			if !slices.Equal(want, w.totals) || n != w.sum {
				t.Fatalf("%s: totals differ from the sum of its buckets", w.cfg.Name)
			}
		case *exactCalendar:
			for id, c := range w.totals {
				if c != 0 {
					refs[id]++
				}
			}
		case *sketchSliding:
			for id := range w.cands.set {
				refs[id]++
			}
			s := p.newSketch()
			for _, b := range w.buckets {
				if err := s.Merge(b.sk); err != nil {
					t.Fatal(err)
				}
			}
			if !s.Equal(w.running) {
				t.Fatalf("%s: running sketch differs from the sum of its buckets", w.cfg.Name)
			}
		case *sketchCalendar:
			countJournal(refs, &w.j)
			for id := range w.cands.set {
				refs[id]++
			}
		case *exactAll:
			var n uint64
			for id, c := range w.totals {
				if c != 0 {
					refs[id]++
					n += c
				}
			}
			if n != w.sum {
				t.Fatalf("%s: sum %d, totals add up to %d", w.cfg.Name, w.sum, n)
			}
		case *sketchAll:
			countJournal(refs, &w.j)
			for id := range w.cands.set {
				refs[id]++
			}
			if len(w.cands.set) > 0 && w.sk.Total() == 0 {
				t.Fatalf("%s: candidates without counts", w.cfg.Name)
			}
		case *decayedExact:
			for id, b := range w.values {
				if b != 0 {
					refs[id]++
					if !validValue(math.Float64frombits(b)) {
						t.Fatalf("%s: %q has value %v", w.cfg.Name, p.in.strs[id], math.Float64frombits(b))
					}
				}
			}
			if p.started && (w.d.epoch != floorTo(p.asOf, epochHalfLives*w.d.h) || w.at != floorDiv(p.asOf, 60)) {
				t.Fatalf("%s: epoch %d and sweep hour %d as of minute %d", w.cfg.Name, w.d.epoch, w.at, p.asOf)
			}
		case *decayedSketch:
			for id := range w.cands {
				refs[id]++
			}
			if p.started && (w.d.epoch != floorTo(p.asOf, epochHalfLives*w.d.h) || w.at != floorDiv(p.asOf, 60)) {
				t.Fatalf("%s: epoch %d and re-estimation hour %d as of minute %d", w.cfg.Name, w.d.epoch, w.at, p.asOf)
			}
		}
	}
	if sc := p.since; sc != nil {
		want := make([]uint64, len(sc.totals))
		var n uint64
		for _, f := range sc.ring {
			countFrozen(f)
			f.each(func(id uint32, c uint64) { want[id] += c; n += c })
			if f.start < sc.lo(p.asOf) || f.start%dayMinutes != 0 {
				t.Fatalf("since: day bucket %d before lo %d or not a day", f.start, sc.lo(p.asOf))
			}
		}
		for id, c := range sc.openBucket {
			refs[id]++
			want[id] += c
			n += c
		}
		if !slices.Equal(want, sc.totals) || n != sc.sum {
			t.Fatalf("since: totals differ from the sum of the day buckets")
		}
	}
	for id, r := range refs {
		if r != p.in.refs[id] {
			t.Fatalf("item %q: %d references counted, %d recorded", p.in.strs[id], r, p.in.refs[id])
		}
		if (r == 0) != (p.in.strs[id] == "") {
			t.Fatalf("handle %d: %d references, item %q", id, r, p.in.strs[id])
		}
	}
}

func TestSketchWindows(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Sketch},
		{Name: "2days", Kind: windowset.Sliding, Length: 48 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Sketch},
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch},
		{Name: "calendar-month", Kind: windowset.Calendar, Span: trmodel.Month, Mode: windowset.Sketch},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
	})
	cfg.K, cfg.M, cfg.AllowedLateness = 3, 2, time.Minute
	cfg.Sketch = sketch.Config{Width: 1 << 12, Depth: 4, Seed: 7}
	for _, conservative := range []bool{false, true} {
		t.Run(fmt.Sprintf("conservative=%t", conservative), func(t *testing.T) {
			cfg.Sketch.Conservative = conservative
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			md := newModel(cfg)
			var closed []List
			for i, ev := range genStream(streamOpts{seed: 5, n: 6000, items: 40, step: 20 * time.Second, counts: 3, late: true}) {
				if got, want := p.Add(ev), md.add(ev); got != want {
					t.Fatalf("event %d: outcome %v, want %v", i, got, want)
				}
				closed = append(closed, p.TakeClosed()...)
				if i%101 == 0 {
					checkAgainstModel(t, p, md)
					checkInvariants(t, p)
				}
			}
			// 2days never expires an item's only bucket in this stream
			// except at its start, and 40 items in 4096 columns do not
			// collide in all 4 rows: the list must be the exact one.
			l, _ := p.Top("calendar-month")
			truth := md.period(trmodel.Month.StartMinute(md.asOf), trmodel.Month.EndMinute(trmodel.Month.StartMinute(md.asOf)))
			if want := wantTop(truth, 6); !entriesEqual(l.Items, want) {
				t.Fatalf("calendar-month:\n got %v\nwant %v", l.Items, want)
			}
			if l, _ := p.Top("all"); !entriesEqual(l.Items, wantTop(md.allTime(), 6)) {
				t.Fatalf("all:\n got %v\nwant %v", l.Items, wantTop(md.allTime(), 6))
			}
			p.AdvanceTo(minuteTime(md.asOf).Add(40 * 24 * time.Hour))
			md.add(event.Event{ItemID: "x", Count: 1, TS: minuteTime(md.asOf).Add(40 * 24 * time.Hour)})
			md.recs = md.recs[:len(md.recs)-1]
			closed = append(closed, p.TakeClosed()...)
			checkClosed(t, md, closed)
			checkInvariants(t, p)
		})
	}
}

func TestSlidingExpiryAtMinuteBoundaries(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "5min", Kind: windowset.Sliding, Length: 5 * time.Minute, Bucket: time.Minute},
		{Name: "2h", Kind: windowset.Sliding, Length: 2 * time.Hour, Bucket: time.Hour},
	})
	cfg.K, cfg.M, cfg.AllowedLateness = 1, 1, 0
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	p.Add(event.Event{ItemID: "a", Count: 7, TS: at(59*time.Second + 999*time.Millisecond)}) // minute 0
	top := func(name string) uint64 {
		l, _ := p.Top(name)
		return l.Total
	}
	for _, tc := range []struct {
		now      time.Duration
		min5, h2 uint64
	}{
		{time.Minute - time.Millisecond, 0, 0}, // minute 0 still open
		{time.Minute, 7, 7},                    // closes exactly at its end
		{5*time.Minute + 59*time.Second, 7, 7}, // [1m, 6m) would exclude it; as of 5m it is in [0, 5m)
		{6 * time.Minute, 0, 7},                // as of 6m: [1m, 6m): expired exactly now
		{time.Hour + 59*time.Minute, 0, 7},     // hour 0 and hour 1 buckets
		{2*time.Hour + time.Minute, 0, 0},      // as of 2h01: hours 1 and 2 only
	} {
		p.AdvanceTo(at(tc.now))
		if a, b := top("5min"), top("2h"); a != tc.min5 || b != tc.h2 {
			t.Fatalf("at +%v: 5min=%d 2h=%d, want %d %d", tc.now, a, b, tc.min5, tc.h2)
		}
	}
}

func TestOutcomes(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour},
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day},
	})
	cfg.AllowedLateness = 2 * time.Minute
	p, _ := New(cfg)
	base := t0.Add(3 * time.Hour) // Jan 31 12:00
	ev := func(d time.Duration) event.Event { return event.Event{ItemID: "a", Count: 1, TS: base.Add(d)} }
	for _, tc := range []struct {
		name string
		ev   event.Event
		want Outcome
	}{
		{"first", ev(30 * time.Minute), Counted},                          // watermark 12:28
		{"inside lateness", ev(28*time.Minute + 30*time.Second), Counted}, // minute 12:28 still open
		{"closed minute inside the hour", ev(27 * time.Minute), Late},     // 12:27 closed, hour starts 11:28
		{"before the hour, day open", ev(-50 * time.Minute), Late},        // 11:10: calendar hour closed, day open
		{"previous day", ev(-13 * time.Hour), TooLate},                    // Jan 30 23:00
		{"future", ev(10 * time.Hour), Counted},                           // watermark 21:58
		{"earlier today", ev(5 * time.Hour), Late},                        // 17:00: only the calendar day
		{"day closed too", ev(-12*time.Hour - time.Minute), TooLate},      // Jan 30 23:59
		{"zero count", event.Event{ItemID: "a", TS: base}, Invalid},
		{"empty item", event.Event{Count: 1, TS: base}, Invalid},
		{"year 1999", event.Event{ItemID: "a", Count: 1, TS: time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC)}, Invalid},
		{"zero time", event.Event{ItemID: "a", Count: 1}, Invalid},
	} {
		if got := p.Add(tc.ev); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	s := p.Stats()
	if s.Counted != 3 || s.Late != 3 || s.TooLate != 2 || s.Invalid != 4 {
		t.Fatalf("stats %+v", s)
	}
	l, _ := p.Top("calendar-day")
	if l.Total != 5 {
		t.Fatalf("calendar day total %d, want 5 (every counted and late event of Jan 31 in a closed minute)", l.Total)
	}
}

func TestKAndM(t *testing.T) {
	for _, tc := range []struct{ k, m, items, want int }{
		{1, 1, 10, 1}, {3, 2, 10, 6}, {5, 3, 4, 4}, {1000, 10, 20000, 10000},
	} {
		t.Run(fmt.Sprintf("k%d-m%d-items%d", tc.k, tc.m, tc.items), func(t *testing.T) {
			cfg := windowsConfig([]WindowConfig{{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute}})
			cfg.K, cfg.M = tc.k, tc.m
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.items {
				p.Add(event.Event{ItemID: fmt.Sprintf("i%05d", i), Count: uint32(1 + i%7), TS: t0})
			}
			p.AdvanceTo(t0.Add(2 * time.Minute))
			l, _ := p.Top("hour")
			if len(l.Items) != tc.want {
				t.Fatalf("%d items, want %d", len(l.Items), tc.want)
			}
			// Deterministic tie-break: count descending, then item ascending.
			for i := 1; i < len(l.Items); i++ {
				if !topk.Less(l.Items[i-1], l.Items[i]) {
					t.Fatalf("not strictly ordered at %d: %v %v", i, l.Items[i-1], l.Items[i])
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	big := DefaultConfig()
	big.K, big.M = MaxK, MaxM // the candidate cap follows M*K
	if err := big.Validate(); err != nil {
		t.Fatalf("default config with K=%d, M=%d: %v", MaxK, MaxM, err)
	}
	for _, tc := range []struct {
		name string
		mod  func(c *Config)
	}{
		{"K too big", func(c *Config) { c.K = 1001 }},
		{"M too big", func(c *Config) { c.M = 11 }},
		{"lateness", func(c *Config) { c.AllowedLateness = 25 * time.Hour }},
		{"cap under M*K", func(c *Config) { c.CandidateCap = 10 }},
		{"no windows", func(c *Config) { c.Windows = []WindowConfig{} }},
		{"dup name", func(c *Config) { c.Windows = append(c.Windows, c.Windows[0]) }},
		{"bad name", func(c *Config) { c.Windows[0].Name = "Hour" }},
		{"bad bucket", func(c *Config) { c.Windows[0].Bucket = 2 * time.Minute }},
		{"length not multiple", func(c *Config) { c.Windows[0].Length = 90 * time.Second }},
		{"too many buckets", func(c *Config) { c.Windows[0].Length = 25 * time.Hour }},
		{"sliding with span", func(c *Config) { c.Windows[0].Span = trmodel.Hour }},
		{"bad span", func(c *Config) { c.Windows[3].Span = "fortnight" }},
		{"bad kind", func(c *Config) { c.Windows[0].Kind = "tumbling" }},
		{"bad mode", func(c *Config) { c.Windows[0].Mode = "fast" }},
		{"bad sketch", func(c *Config) { c.Sketch.Width = 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Windows = DefaultWindows()
			tc.mod(&c)
			if err := c.Validate(); !errors.Is(err, ErrConfig) || !errors.Is(err, setting.ErrConfig) {
				t.Fatalf("Validate: %v, want ErrConfig and setting.ErrConfig", err)
			}
			if _, err := New(c); !errors.Is(err, ErrConfig) {
				t.Fatalf("New: %v, want ErrConfig", err)
			}
		})
	}
	c := windowsConfig([]WindowConfig{
		{Name: "a", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour},
		{Name: "b", Kind: windowset.Sliding, Length: 48 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Auto},
		{Name: "c", Kind: windowset.Calendar, Span: trmodel.Month},
		{Name: "d", Kind: windowset.Calendar, Span: trmodel.Day, Length: time.Hour},
	}).normalized()
	if c.Windows[0].Mode != windowset.Exact || c.Windows[1].Mode != windowset.Sketch || c.Windows[2].Mode != windowset.Sketch || c.Windows[3].Mode != windowset.Exact || c.Windows[3].Length != 0 {
		t.Fatalf("auto modes resolved to %+v", c.Windows)
	}
}

// TestZeroMeansZero: DefaultConfig is where the defaults live and New takes it; a zero
// field that cannot work is refused by its name instead of taking the default; a zero
// lateness means none, a zero CandidateCap is 8*M*K.
func TestZeroMeansZero(t *testing.T) {
	if _, err := New(DefaultConfig()); err != nil {
		t.Fatalf("New(DefaultConfig()) = %v", err)
	}
	for _, tc := range []struct {
		field string
		mod   func(*Config)
	}{
		{"Windows", func(c *Config) { c.Windows = nil }},
		{"K", func(c *Config) { c.K = 0 }},
		{"M", func(c *Config) { c.M = 0 }},
		{"Sketch.Width", func(c *Config) { c.Sketch.Width = 0 }},
		{"Sketch.Depth", func(c *Config) { c.Sketch.Depth = 0 }},
		{"AllowedLateness", func(c *Config) { c.AllowedLateness = -time.Second }},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := New(c)
		es := setting.Errors(err)
		if !errors.Is(err, ErrConfig) || !errors.Is(err, setting.ErrConfig) || len(es) != 1 || es[0].Field != tc.field {
			t.Errorf("%s: New = %v, want one setting error naming it", tc.field, err)
		}
	}
	// Exact windows only: the sketch shape is unused, and zero is fine.
	exact := windowsConfig([]WindowConfig{{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact}})
	exact.Sketch = sketch.Config{}
	if _, err := New(exact); err != nil {
		t.Errorf("exact windows, zero sketch: %v", err)
	}

	c := windowsConfig([]WindowConfig{{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute}})
	c.AllowedLateness = 0
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Config().CandidateCap, 8*c.M*c.K; got != want {
		t.Errorf("CandidateCap 0: %d, want 8*M*K = %d", got, want)
	}
	p.Add(event.Event{ItemID: "a", Count: 1, TS: t0})
	p.Add(event.Event{ItemID: "b", Count: 1, TS: t0.Add(time.Minute + time.Second)})
	if got, want := p.AsOf(), t0.Add(time.Minute); !got.Equal(want) {
		t.Errorf("AllowedLateness 0: watermark minute %s after an event 1m1s later, want %s: zero must mean none, not the default 30s", got, want)
	}
	if l, _ := p.Top("hour"); len(l.Items) != 1 || l.Items[0].Item != "a" {
		t.Errorf("AllowedLateness 0: hour list %+v, want a's closed minute", l.Items)
	}
}

func TestUnknownWindow(t *testing.T) {
	p, _ := New(DefaultConfig())
	if _, err := p.Top("fortnight"); !errors.Is(err, ErrUnknownWindow) {
		t.Fatalf("Top: %v", err)
	}
}

func TestDefaultConfigRuns(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sketch = sketch.Config{Width: 1 << 10, Depth: 3}
	cfg.K, cfg.M, cfg.CandidateCap = 5, 2, 80
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md := newModel(cfg)
	for i, ev := range genStream(streamOpts{seed: 9, n: 5000, items: 60, step: 30 * time.Second, counts: 4, late: true}) {
		if got, want := p.Add(ev), md.add(ev); got != want {
			t.Fatalf("event %d: %v, want %v", i, got, want)
		}
		if i%211 == 0 {
			checkAgainstModel(t, p, md)
			checkInvariants(t, p)
		}
	}
}

// TestCountOverflow: a minute's count for one item past 2^32 (5,000 events
// of a million views) is kept exactly, expires to zero, and survives a
// snapshot.
func TestCountOverflow(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute},
		{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour},
	})
	cfg.AllowedLateness = 0
	p, _ := New(cfg)
	const n, c = 5000, 1_000_000
	for i := range n {
		p.Add(event.Event{ItemID: "hot", Count: c, TS: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	p.Add(event.Event{ItemID: "cold", Count: 1, TS: t0.Add(time.Minute)})
	for _, name := range []string{"hour", "day"} {
		if l, _ := p.Top(name); len(l.Items) == 0 || l.Items[0].Count != n*c || l.Total != n*c {
			t.Fatalf("%s: %+v", name, l)
		}
	}
	checkInvariants(t, p)
	q, err := Restore(cfg, mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, q)
	for _, x := range []*Partition{p, q} {
		x.AdvanceTo(t0.Add(61 * time.Minute))
		if l, _ := x.Top("hour"); l.Total != 1 {
			t.Fatalf("hour after expiry: total %d, want 1", l.Total)
		}
		x.AdvanceTo(t0.Add(25 * time.Hour))
		if l, _ := x.Top("day"); l.Total != 0 {
			t.Fatalf("day after expiry: total %d", l.Total)
		}
		checkInvariants(t, x)
	}
}

// TestAllTimeSketchBound runs the sketch all-time window on sketches small
// enough that items collide, against brute-force counts: N is exact, no
// estimate is low, at most a few items pass the stated bound (it holds per
// item with probability 1-e^-depth), every listed item is within it, and no
// item whose true count beats the list's last estimate is missing (the
// candidate set is complete because all-time counts only grow).
func TestAllTimeSketchBound(t *testing.T) {
	for _, tc := range []struct {
		name         string
		width, depth int
		conservative bool
		seed         uint64
	}{
		{"standard-64x4", 64, 4, false, 31},
		{"conservative-64x4", 64, 4, true, 31},
		{"standard-256x3", 256, 3, false, 32},
		{"conservative-128x5", 128, 5, true, 33},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := windowsConfig([]WindowConfig{{Name: "all", Kind: windowset.AllTime}}) // Auto: sketch
			cfg.K, cfg.M, cfg.AllowedLateness = 5, 2, 30*time.Second
			cfg.Sketch = sketch.Config{Width: tc.width, Depth: tc.depth, Seed: tc.seed, Conservative: tc.conservative}
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Config().Windows[0].Mode != windowset.Sketch {
				t.Fatalf("auto all-time window resolved to %s, want sketch", p.Config().Windows[0].Mode)
			}
			md := newModel(cfg)
			w := p.byName["all"].(*sketchAll)
			overs, checks, noisy := 0, 0, 0
			check := func() {
				truth := md.allTime()
				l, _ := p.Top("all")
				checkSketchList(t, l, truth)
				if want := sketch.BoundFor(tc.width, tc.depth, l.Total); *l.Bound != want {
					t.Fatalf("bound %+v, want %+v", *l.Bound, want)
				}
				for item, c := range truth {
					est := w.sk.EstimateString(item)
					if est < c {
						t.Fatalf("%s: estimate %d below the true %d", item, est, c)
					}
					checks++
					if est > c {
						noisy++
					}
					if float64(est-c) > l.Bound.MaxOvercount {
						overs++
					}
				}
				if len(l.Items) < p.mk() {
					if len(l.Items) != len(truth) {
						t.Fatalf("short list of %d with %d items counted", len(l.Items), len(truth))
					}
					return
				}
				last := l.Items[len(l.Items)-1].Count
				for item, c := range truth {
					if c > last && !slices.ContainsFunc(l.Items, func(e topk.Entry) bool { return e.Item == item }) {
						t.Fatalf("%s (true %d) missing from a list whose last estimate is %d", item, c, last)
					}
				}
			}
			for i, ev := range genStream(streamOpts{seed: tc.seed, n: 12000, items: 400, step: 20 * time.Second, counts: 4, late: true}) {
				if got, want := p.Add(ev), md.add(ev); got != want {
					t.Fatalf("event %d: outcome %v, want %v", i, got, want)
				}
				if i%401 == 0 {
					check()
					checkInvariants(t, p)
				}
			}
			check()
			if noisy < checks/10 {
				t.Fatalf("only %d of %d estimates over the truth: the sketch is too large for this test", noisy, checks)
			}
			if limit := 2 * math.Exp(-float64(tc.depth)) * float64(checks); float64(overs) > limit {
				t.Fatalf("%d of %d estimates over the bound, want at most %.0f", overs, checks, limit)
			}
			t.Logf("%d of %d estimates over the truth, %d over the bound", noisy, checks, overs)
		})
	}
}

// TestConservativeMinuteOrder: conservative update depends on the order of
// updates, and a restore loses the arrival order within open minutes. The
// same minutes' events in any order must leave the same sketches (and
// bytes), or replaying from a snapshot could drift from the uninterrupted
// run.
func TestConservativeMinuteOrder(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
	})
	cfg.K, cfg.M, cfg.AllowedLateness = 3, 2, 0
	cfg.Sketch = sketch.Config{Width: 8, Depth: 3, Seed: 5, Conservative: true}
	var evs []event.Event
	for m := range 5 {
		for i := range 40 {
			evs = append(evs, event.Event{ItemID: fmt.Sprintf("i%02d", i), Count: uint32(1 + (i*7+m)%5), TS: t0.Add(time.Duration(m) * time.Minute)})
		}
	}
	run := func(order []event.Event) []byte {
		p, _ := New(cfg)
		for _, ev := range order {
			p.Add(ev)
		}
		p.AdvanceTo(t0.Add(10 * time.Minute))
		return mustMarshal(t, p)
	}
	want := run(evs)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 10 {
		shuffled := slices.Clone(evs)
		// Shuffle within each minute: event time order stays the same.
		for m := 0; m < len(shuffled); m += 40 {
			part := shuffled[m : m+40]
			r.Shuffle(len(part), func(a, b int) { part[a], part[b] = part[b], part[a] })
		}
		if !bytes.Equal(run(shuffled), want) {
			t.Fatalf("shuffle %d: another order within the minutes gave another state", i)
		}
	}
}

// TestAddBytesMatchesAdd: AddBytes with the item in a buffer that is overwritten after every
// call gives the outcomes, the lists and the snapshot bytes of Add on the same stream: the
// partition keeps no reference to the caller's bytes.
func TestAddBytesMatchesAdd(t *testing.T) {
	for name, cfg := range map[string]Config{"exact and sketch": snapTestConfig(), "with all-time": snapAllConfig()} {
		t.Run(name, func(t *testing.T) {
			evs := genStream(streamOpts{seed: 7, n: 20_000, items: 500, step: 2 * time.Second, counts: 5, late: true})
			a, _ := New(cfg)
			b, _ := New(cfg)
			buf := make([]byte, 0, 64)
			for i, ev := range evs {
				buf = append(buf[:0], ev.ItemID...)
				oa, ob := a.Add(ev), b.AddBytes(buf, ev.Count, ev.TS.UnixMilli())
				for j := range buf {
					buf[j] = 'X'
				}
				if oa != ob {
					t.Fatalf("event %d (%+v): Add %v, AddBytes %v", i, ev, oa, ob)
				}
			}
			if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
				t.Fatal("snapshots differ")
			}
			if ta, tb := allTops(t, a), allTops(t, b); !reflect.DeepEqual(ta, tb) {
				t.Fatalf("lists differ:\n%+v\n%+v", ta, tb)
			}
			if b.Add(event.Event{Count: 1, TS: t0}) != Invalid || b.AddBytes(nil, 1, t0.UnixMilli()) != Invalid || b.AddBytes([]byte("a"), 0, t0.UnixMilli()) != Invalid {
				t.Fatal("an empty item or a zero count must be Invalid")
			}
		})
	}
}

// TestAddBytesAllocs: counting a known item from bytes allocates nothing, which is the
// point of AddBytes (the worker's per-event cost).
func TestAddBytesAllocs(t *testing.T) {
	p, _ := New(exactTestConfig())
	item, ms := []byte("dQw4w9WgXcQ"), t0.UnixMilli()
	p.AddBytes(item, 1, ms)
	if n := testing.AllocsPerRun(1000, func() { p.AddBytes(item, 1, ms) }); n != 0 {
		t.Fatalf("AddBytes of a known item: %v allocations, want 0", n)
	}
}

// TestDroppedLate: an event too late for a calendar period (it had closed) is counted
// against that period's start, per calendar window, whether other windows still count it
// (Late) or none does (TooLate); TakeLate reports each changed count once, a period that
// produced no final list included; counts survive a snapshot; periods that ended more than
// LateRetention ago are not tracked.
func TestDroppedLate(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour},
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch},
	})
	cfg.AllowedLateness = 2 * time.Minute
	cfg.Sketch = sketch.Config{Width: 64, Depth: 2}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := t0.Add(3 * time.Hour) // Jan 31 12:00
	ev := func(d time.Duration) event.Event { return event.Event{ItemID: "a", Count: 5, TS: base.Add(d)} }
	for _, c := range []struct {
		d    time.Duration
		want Outcome
	}{
		{-30 * time.Minute, Counted}, // 11:30, opens hour 11
		{30 * time.Minute, Counted},  // 12:30: watermark 12:28, hour 11 closes
		{-20 * time.Minute, Late},    // 11:40: sliding hour counts it, calendar hour 11 does not
		{-10 * time.Minute, Late},    // 11:50: again
		{-150 * time.Minute, Late},   // 09:30: only the calendar day; hour 9 never opened here
		{-13 * time.Hour, TooLate},   // Jan 30 23:00: hour 23 and day Jan 30 both closed
	} {
		if got := p.Add(ev(c.d)); got != c.want {
			t.Fatalf("event at %s: %v, want %v", base.Add(c.d).Format("15:04"), got, c.want)
		}
	}
	closed := p.TakeClosed()
	if len(closed) != 1 || closed[0].Window != "calendar-hour" || !closed[0].Start.Equal(base.Add(-time.Hour)) || closed[0].LateOnly {
		t.Fatalf("closed: %+v", closed)
	}
	type got struct {
		win, start string
		n          uint64
	}
	take := func() (out []got) {
		for _, l := range p.TakeLate() {
			if !l.LateOnly || !l.Final || len(l.Items) != 0 || !l.AsOf.Equal(l.End) || !l.End.After(l.Start) {
				t.Fatalf("late update %+v: want a final, late-only list without items, as of its end", l)
			}
			out = append(out, got{l.Window, l.Start.Format("01-02T15:04"), l.DroppedLate})
		}
		return out
	}
	want := []got{{"calendar-hour", "01-30T23:00", 1}, {"calendar-hour", "01-31T09:00", 1}, {"calendar-hour", "01-31T11:00", 2}, {"calendar-day", "01-30T00:00", 1}}
	if g := take(); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("TakeLate:\n got %v\nwant %v", g, want)
	}
	if g := take(); len(g) != 0 {
		t.Fatalf("TakeLate again: %v, want nothing new", g)
	}
	if n := p.DroppedLate("calendar-hour", base.Add(-time.Hour)); n != 2 {
		t.Fatalf("DroppedLate(hour 11) = %d, want 2", n)
	}
	// One more, then a snapshot: the count and its pending update survive.
	p.Add(ev(-5 * time.Minute))
	q, err := Restore(cfg, mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	p = q
	if g := take(); fmt.Sprint(g) != fmt.Sprint([]got{{"calendar-hour", "01-31T11:00", 3}}) {
		t.Fatalf("after restore: %v", g)
	}
	// Three days on, the old periods are forgotten, and a drop for one is not tracked.
	p.Add(ev(72 * time.Hour))
	p.TakeClosed()
	p.TakeLate()
	if len(p.late) != 0 {
		t.Fatalf("late counts kept past LateRetention: %v", p.late)
	}
	if o := p.Add(ev(-10 * time.Minute)); o != TooLate {
		t.Fatalf("old event: %v", o)
	}
	if g := take(); len(g) != 0 || len(p.late) != 0 {
		t.Fatalf("a drop for a period past LateRetention was tracked: %v", g)
	}
}
