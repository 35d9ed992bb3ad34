package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// spanPresets are the speed windows of the served presets (model/windowset: the default
// set, and seed 004's minute, hour, day, 7 days and calendar week; "auto" there is either
// mode, so seed 004 is here twice).
func spanPresets() map[string][]WindowConfig {
	seed004 := func(mode windowset.Mode) []WindowConfig {
		return []WindowConfig{
			{Name: "minute", Kind: windowset.Sliding, Length: time.Minute, Bucket: time.Minute, Mode: windowset.Exact},
			{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
			{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
			{Name: "7d", Kind: windowset.Sliding, Length: 7 * 24 * time.Hour, Bucket: time.Hour, Mode: mode},
			{Name: "calendar-week", Kind: windowset.Calendar, Span: trmodel.Week, Mode: mode},
		}
	}
	return map[string][]WindowConfig{
		"default":         DefaultWindows(),
		"seed-004-sketch": seed004(windowset.Sketch),
		"seed-004-exact":  seed004(windowset.Exact),
		// Windows of a few buckets, shorter than the lateness: open minutes reach before
		// their start, and each bucket that starts to expire has items counted since.
		"short": {
			{Name: "3min", Kind: windowset.Sliding, Length: 3 * time.Minute, Bucket: time.Minute, Mode: windowset.Exact},
			{Name: "3min-sketch", Kind: windowset.Sliding, Length: 3 * time.Minute, Bucket: time.Minute, Mode: windowset.Sketch},
			{Name: "minute-sketch", Kind: windowset.Sliding, Length: time.Minute, Bucket: time.Minute, Mode: windowset.Sketch},
			{Name: "2h", Kind: windowset.Sliding, Length: 2 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
			{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Exact},
		},
	}
}

// spanEvent is one event the partition took, for the truth.
type spanEvent struct {
	ms   int64
	item string
	c    uint64
}

// spanTruth is every item's count over the events taken whose time lies in [from, to]
// (Unix ms, both ends in).
func spanTruth(evs []spanEvent, from, to int64) map[string]uint64 {
	out := map[string]uint64{}
	for _, e := range evs {
		if e.ms >= from && e.ms <= to {
			out[e.item] += e.c
		}
	}
	return out
}

// TestLiveSpansAreTheTruth: every live list (Live and LiveAll) of every window of the
// served presets counts exactly the events whose time lies in its stated span, at random
// read times of generated streams with late, very late and early events and idle stretches
// (AdvanceTo), under several allowed latenesses: a sliding or all-time list's span is
// [Start, End] (End the newest event time counted), a calendar list's [Start, End) of the
// events up to AsOf. An exact list is the truth's top M*K (ties by item) and its Total the
// truth's; a sketch list's Total is the truth's and each of its counts is at least the
// truth and at most the truth plus its bound. Live lists have dropped nothing: a sliding
// window only refuses events before its start, and a calendar period refuses events only
// once it has closed.
func TestLiveSpansAreTheTruth(t *testing.T) {
	for name, wins := range spanPresets() {
		for _, late := range []time.Duration{30 * time.Second, 0, 100 * time.Second, 200 * time.Second} {
			for seed := uint64(1); seed <= 3; seed++ {
				t.Run(fmt.Sprintf("%s/lateness-%s/%d", name, late, seed), func(t *testing.T) {
					liveSpansAreTheTruth(t, wins, late, seed)
				})
			}
		}
	}
}

func liveSpansAreTheTruth(t *testing.T, wins []WindowConfig, late time.Duration, seed uint64) {
	cfg := windowsConfig(wins)
	cfg.K, cfg.M, cfg.AllowedLateness = 4, 2, late
	cfg.Sketch = sketch.Config{Width: 1 << 12, Depth: 4, Seed: 7}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 27))
	zipf := rand.NewZipf(r, 1.3, 1, 60)
	// now is the processing time: event times trail it a little (mostly), by minutes,
	// hours or days (sometimes), or lead it (early events, as --max-future lets through).
	now := t0.Add(time.Duration(r.Int64N(int64(time.Hour))))
	var taken []spanEvent
	checked, before := 0, 0 // reads, and reads with an open minute before a window's start
	check := func(at string) {
		all := p.LiveAll()
		for j, wc := range cfg.Windows {
			l, err := p.Live(wc.Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []struct {
				how string
				l   List
			}{{"Live", l}, {"LiveAll", all[j]}} {
				checkSpan(t, fmt.Sprintf("%s: %s %s", at, got.how, wc.Name), cfg, wc, got.l, taken)
			}
			if wc.Kind == windowset.Sliding && len(p.open) > 0 && minuteTime(p.open[0].minute).Before(l.Start) {
				before++
			}
		}
		checked++
	}
	for i := range 3000 {
		now = now.Add(time.Duration(r.Int64N(int64(4 * time.Second))))
		if r.IntN(400) == 0 {
			// An idle stretch: the runtime moves the watermark with the wall clock.
			now = now.Add(time.Duration(r.Int64N(int64(5 * time.Minute))))
			p.AdvanceTo(now)
			p.TakeClosed()
			check(fmt.Sprintf("event %d, idle to %s", i, now.Format(time.TimeOnly)))
		}
		ts := now.Add(-time.Duration(r.Int64N(int64(25 * time.Second))))
		switch x := r.IntN(100); {
		case x < 6:
			ts = now.Add(-time.Duration(r.Int64N(int64(4 * time.Minute))))
		case x < 8:
			ts = now.Add(-time.Duration(r.Int64N(int64(3 * time.Hour))))
		case x < 9:
			ts = now.Add(-time.Duration(r.Int64N(int64(9 * 24 * time.Hour))))
		case x < 10:
			ts = now.Add(time.Duration(r.Int64N(int64(90 * time.Second)))) // early
		}
		ev := event.Event{ItemID: fmt.Sprintf("v%02d", zipf.Uint64()), Count: uint32(1 + r.IntN(3)), TS: ts.Truncate(time.Millisecond)}
		if p.Add(ev) != TooLate {
			taken = append(taken, spanEvent{ev.TS.UnixMilli(), ev.ItemID, uint64(ev.Count)})
		}
		p.TakeClosed()
		if r.IntN(5) == 0 {
			p.LiveAll() // between reads too, so that the caches carry over
		}
		if r.IntN(25) == 0 {
			check(fmt.Sprintf("event %d at %s", i, now.Format(time.TimeOnly)))
		}
		if t.Failed() {
			return
		}
	}
	if checked < 80 {
		t.Fatalf("only %d reads", checked)
	}
	short := false
	for _, wc := range wins {
		short = short || wc.Kind == windowset.Sliding && wc.Length <= late
	}
	if short && before == 0 {
		t.Fatalf("no read had an open minute before a sliding window's start: the case is not exercised")
	}
}

// checkSpan checks one live list against the truth over its stated span (see
// TestLiveSpansAreTheTruth).
func checkSpan(t *testing.T, at string, cfg Config, wc WindowConfig, l List, taken []spanEvent) {
	t.Helper()
	if l.Window != wc.Name || l.AsOf.IsZero() || l.Start.IsZero() || l.AsOf.After(l.End) || l.DroppedLate != 0 {
		t.Fatalf("%s: list %+v", at, l)
	}
	to := l.End.UnixMilli()
	if wc.Kind == windowset.Calendar {
		to = min(l.End.UnixMilli()-1, l.AsOf.UnixMilli())
	} else if !l.AsOf.Equal(l.End) {
		t.Fatalf("%s: AsOf %s, End %s", at, l.AsOf, l.End)
	}
	truth := spanTruth(taken, l.Start.UnixMilli(), to)
	if l.Total != sum(truth) {
		t.Errorf("%s: [%s, %s]: total %d, the truth %d", at, l.Start.Format(time.TimeOnly), l.End.Format(time.TimeOnly), l.Total, sum(truth))
	}
	if wc.Mode == windowset.Exact {
		if want := wantTop(truth, cfg.M*cfg.K); !entriesEqual(l.Items, want) {
			t.Fatalf("%s: [%s, %s] (as of %s):\ngot   %v\ntruth %v", at, l.Start.Format(time.DateTime), l.End.Format(time.DateTime), l.AsOf.Format(time.TimeOnly), l.Items, want)
		}
		return
	}
	for _, e := range l.Items {
		if c := truth[e.Item]; e.Count < c || float64(e.Count-c) > l.Bound.MaxOvercount {
			t.Fatalf("%s: [%s, %s]: %s estimated %d, the truth %d (bound %.1f)", at, l.Start.Format(time.DateTime), l.End.Format(time.DateTime), e.Item, e.Count, c, l.Bound.MaxOvercount)
		}
	}
}

// TestLiveStartIsTheAsOfs: a live list's span is a function of its end alone, so that
// partitions at the same as-of minute state the same start whatever they counted: a
// partition whose newest events are minutes old and that the runtime keeps moving with the
// wall clock (AdvanceTo) and one with an event a moment ago state the same Start for every
// window (the merger takes one boundary for all partitions, speed/merge).
func TestLiveStartIsTheAsOfs(t *testing.T) {
	cfg := windowsConfig(spanPresets()["seed-004-exact"])
	r := rand.New(rand.NewPCG(4, 27))
	for range 200 {
		busy, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		idle, _ := New(cfg)
		now := t0.Add(time.Duration(r.Int64N(int64(48 * time.Hour))))
		busy.Add(event.Event{ItemID: "a", Count: 1, TS: now.Add(-time.Duration(r.Int64N(int64(10 * time.Second))))})
		busy.Add(event.Event{ItemID: "a", Count: 1, TS: now})
		idle.Add(event.Event{ItemID: "b", Count: 1, TS: now.Add(-time.Duration(r.Int64N(int64(10 * time.Minute))))})
		idle.AdvanceTo(now)
		bl, il := busy.LiveAll(), idle.LiveAll()
		for j, wc := range cfg.Windows {
			if !bl[j].Start.Equal(il[j].Start) || !bl[j].End.Equal(il[j].End) {
				t.Fatalf("%s as of %s: the busy partition's list spans [%s, %s], the idle one's [%s, %s]", wc.Name, now.Format(time.DateTime),
					bl[j].Start.Format(time.TimeOnly), bl[j].End.Format(time.TimeOnly), il[j].Start.Format(time.TimeOnly), il[j].End.Format(time.TimeOnly))
			}
		}
	}
}
