package window

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"trending/model/event"
	"trending/model/windowset"
)

// TestLiveIsTopAfterClosing: at random points of seeded streams with late events, every
// exact window's Live list is the Top list the same state gives once every open minute has
// closed (a restored copy advanced past them), or that period's final list where closing
// them ends a calendar period; sketch windows have the same N and no live estimate above the
// closed one. Live changes nothing: the snapshot is the same bytes before and after.
func TestLiveIsTopAfterClosing(t *testing.T) {
	for _, cc := range []struct {
		name string
		cfg  func() Config
	}{{"windows", snapTestConfig}, {"with-all-time", snapAllConfig}} {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("%s/%d", cc.name, seed), func(t *testing.T) { liveIsTopAfterClosing(t, cc.cfg(), seed) })
		}
	}
}

func liveIsTopAfterClosing(t *testing.T, cfg Config, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 17))
	evs := genStream(streamOpts{seed: seed, n: 2500, items: 30 + r.IntN(100), step: time.Duration(3+r.IntN(20)) * time.Second, counts: 3, late: true})
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	checked, fresher := 0, 0
	for i, ev := range evs {
		p.Add(ev)
		p.TakeClosed()
		if r.IntN(60) == 0 {
			p.LiveAll() // between checks too, so the caches see every kind of gap
		}
		if r.IntN(40) != 0 {
			continue
		}
		checked++
		before := mustMarshal(t, p)
		lives := map[string]List{}
		all := p.LiveAll()
		for j, wc := range cfg.Windows {
			l, err := p.Live(wc.Name)
			if err != nil {
				t.Fatal(err)
			}
			lives[wc.Name] = l
			checkLiveAll(t, fmt.Sprintf("event %d %s", i, wc.Name), wc, all[j], l)
		}
		if !bytes.Equal(before, mustMarshal(t, p)) {
			t.Fatalf("event %d: Live changed the state", i)
		}
		newest := time.UnixMilli(p.maxSeen).UTC()
		closed, err := Restore(cfg, before)
		if err != nil {
			t.Fatal(err)
		}
		upTo := p.asOf
		if n := len(p.open); n > 0 {
			upTo = p.open[n-1].minute + 1
		}
		if upTo > p.asOf && !closed.AdvanceTo(minuteTime(upTo).Add(cfg.AllowedLateness)) {
			t.Fatalf("event %d: could not advance the copy", i)
		}
		if closed.asOf != upTo {
			t.Fatalf("event %d: copy at minute %d, want %d", i, closed.asOf, upTo)
		}
		finals := map[string]List{}
		for _, l := range closed.TakeClosed() {
			finals[l.Window+l.Start.String()] = l
		}
		for _, wc := range cfg.Windows {
			live := lives[wc.Name]
			want, err := closed.Top(wc.Name)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := finals[wc.Name+live.Start.String()]; ok && wc.Kind == windowset.Calendar {
				want = f
			}
			if wc.Kind != windowset.Calendar && !live.AsOf.Equal(newest) {
				t.Fatalf("event %d %s: AsOf %v, want the newest event time %v", i, wc.Name, live.AsOf, newest)
			}
			if wc.Kind == windowset.Calendar && live.AsOf.After(newest) {
				t.Fatalf("event %d %s: AsOf %v after the newest event %v", i, wc.Name, live.AsOf, newest)
			}
			if live.Total != want.Total {
				t.Fatalf("event %d %s: live total %d, after closing %d", i, wc.Name, live.Total, want.Total)
			}
			if wc.Kind != windowset.Calendar && !live.Start.Equal(want.Start) {
				t.Fatalf("event %d %s: live start %v, after closing %v", i, wc.Name, live.Start, want.Start)
			}
			if wc.Mode == windowset.Exact {
				if top, _ := p.Top(wc.Name); !reflect.DeepEqual(top.Items, live.Items) {
					fresher++
				}
				if !reflect.DeepEqual(live.Items, want.Items) {
					t.Fatalf("event %d %s (open minutes up to %d, closed to %d):\nlive    %v\nclosing %v", i, wc.Name, upTo, p.asOf, live.Items, want.Items)
				}
				continue
			}
			est := map[string]uint64{}
			for _, e := range want.Items {
				est[e.Item] = e.Count
			}
			for _, e := range live.Items {
				if c, ok := est[e.Item]; ok && e.Count > c {
					t.Fatalf("event %d %s: %s live %d above its estimate after closing %d", i, wc.Name, e.Item, e.Count, c)
				}
			}
		}
	}
	if checked < 20 || fresher < checked {
		t.Fatalf("%d points checked, %d exact lists differ from Top: the overlay is barely exercised", checked, fresher)
	}
}

// TestLiveCountsTheOpenMinute: an event shows in the live lists as soon as it is counted,
// before its minute closes, and Top does not show it until then.
func TestLiveCountsTheOpenMinute(t *testing.T) {
	cfg := exactTestConfig()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(30 * time.Second)
	p.Add(event.Event{ItemID: "a", Count: 2, TS: at})
	p.Add(event.Event{ItemID: "b", Count: 5, TS: at.Add(time.Second)})
	top, _ := p.Top("hour")
	if len(top.Items) != 0 {
		t.Fatalf("Top shows the open minute: %v", top.Items)
	}
	for _, name := range []string{"hour", "day", "calendar-hour", "calendar-month"} {
		l, err := p.Live(name)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(l.Items) != "[{b 5} {a 2}]" || l.Total != 7 || !l.AsOf.Equal(at.Add(time.Second)) {
			t.Errorf("%s: live %v total %d as of %v; want [b 5, a 2], 7, as of %v", name, l.Items, l.Total, l.AsOf, at.Add(time.Second))
		}
	}
	if _, err := p.Live("nope"); err == nil {
		t.Fatal("Live of an unknown window: no error")
	}
}

// checkLiveAll: LiveAll's list of an exact window is Live's; a sketch window's has the same
// N and bound and no estimate above Live's (an estimate cached at the last closing misses
// only later collisions).
func checkLiveAll(t *testing.T, at string, wc WindowConfig, got, want List) {
	t.Helper()
	if got.Total != want.Total || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) || !got.AsOf.Equal(want.AsOf) || got.Exact != want.Exact || got.Window != want.Window {
		t.Fatalf("%s: LiveAll %+v\nLive %+v", at, got, want)
	}
	if wc.Mode == windowset.Exact {
		if !reflect.DeepEqual(got.Items, want.Items) {
			t.Fatalf("%s: LiveAll items %v\nLive items    %v", at, got.Items, want.Items)
		}
		return
	}
	if !reflect.DeepEqual(got.Bound, want.Bound) {
		t.Fatalf("%s: bound %+v, Live %+v", at, got.Bound, want.Bound)
	}
	est := map[string]uint64{}
	for _, e := range want.Items {
		est[e.Item] = e.Count
	}
	for _, e := range got.Items {
		if c, ok := est[e.Item]; ok && e.Count > c {
			t.Fatalf("%s: %s at %d in LiveAll, %d in Live", at, e.Item, e.Count, c)
		}
	}
}
