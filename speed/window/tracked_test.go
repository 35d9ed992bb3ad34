package window

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"trending/model/windowset"
)

// exactTwin is cfg with every window counted exactly and lists long enough to hold every
// item: fed the same events, its lists are the truth of each window's counts.
func exactTwin(cfg Config) Config {
	cfg.Windows = append([]WindowConfig(nil), cfg.Windows...)
	for i := range cfg.Windows {
		cfg.Windows[i].Mode = windowset.Exact
	}
	cfg.K, cfg.M, cfg.CandidateCap = MaxK, MaxM, 0
	return cfg
}

func countsOf(es ...[]List) map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	for _, ls := range es {
		for _, l := range ls {
			m := map[string]uint64{}
			for _, e := range l.Items {
				m[e.Item] = e.Count
			}
			out[l.Window+"@"+l.Start.String()] = m
		}
	}
	return out
}

// checkTracked: every tracked item's count in l (a list of window wc) is the truth's: the
// same count in an exact window (and no item without one), at least the truth in a sketch
// window, where every tracked item the window counted is listed.
func checkTracked(t *testing.T, at string, wc WindowConfig, l List, truth map[string]uint64, tracked map[string]bool) {
	t.Helper()
	got := map[string]uint64{}
	for _, e := range l.Tracked {
		if !tracked[e.Item] {
			t.Fatalf("%s %s: %s is not tracked but in Tracked %v", at, wc.Name, e.Item, l.Tracked)
		}
		got[e.Item] = e.Count
	}
	for it := range tracked {
		want := truth[it]
		switch {
		case wc.Mode == windowset.Exact && got[it] != want:
			t.Fatalf("%s %s: tracked %s counts %d, the truth %d (Tracked %v)", at, wc.Name, it, got[it], want, l.Tracked)
		case wc.Mode == windowset.Sketch && got[it] < want:
			t.Fatalf("%s %s: tracked %s estimated %d, under the truth %d (Tracked %v)", at, wc.Name, it, got[it], want, l.Tracked)
		}
	}
}

// checkTrackedScored is checkTracked for a decayed list: every tracked item's score is the
// exact twin's in an exact window (the same float operations), and not under it in a sketch
// window (beyond float rounding).
func checkTrackedScored(t *testing.T, at string, wc WindowConfig, l, twin List, tracked map[string]bool) {
	t.Helper()
	truth := map[string]float64{}
	for _, e := range twin.Scored {
		truth[e.Item] = e.Score
	}
	got := map[string]float64{}
	for _, e := range l.TrackedScored {
		if !tracked[e.Item] {
			t.Fatalf("%s %s: %s is not tracked but in TrackedScored %v", at, wc.Name, e.Item, l.TrackedScored)
		}
		got[e.Item] = e.Score
	}
	for it := range tracked {
		switch want := truth[it]; {
		case wc.Mode == windowset.Exact && got[it] != want:
			t.Fatalf("%s %s: tracked %s scores %v, the truth %v (TrackedScored %v)", at, wc.Name, it, got[it], want, l.TrackedScored)
		case wc.Mode == windowset.Sketch && got[it] < want*(1-1e-9):
			t.Fatalf("%s %s: tracked %s estimated %v, under the truth %v", at, wc.Name, it, got[it], want)
		}
	}
}

// TestTrackedCounts: on seeded streams with late events, every list a partition makes (Top,
// Live, LiveAll, the final lists, Since) reports the tracked items' counts whatever they
// rank (K*M is 6 here), equal to an exact twin's counts in exact windows and never under
// them in sketch windows; LiveAll's are Live's; and a partition restored from a snapshot with
// its TrackedItems reports what the uninterrupted one does.
func TestTrackedCounts(t *testing.T) {
	for _, cc := range []struct {
		name string
		cfg  func() Config
	}{{"windows", snapTestConfig}, {"with-all-time", snapAllConfig}, {"with-decayed", decayedTestConfig}} {
		for seed := uint64(1); seed <= 6; seed++ {
			t.Run(fmt.Sprintf("%s/%d", cc.name, seed), func(t *testing.T) {
				cfg := cc.cfg()
				cfg.SinceDays = 3
				trackedCounts(t, cfg, seed)
			})
		}
	}
}

func trackedCounts(t *testing.T, cfg Config, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 23))
	evs := genStream(streamOpts{seed: seed, n: 2500, items: 40 + r.IntN(80), step: time.Duration(3+r.IntN(20)) * time.Second, counts: 3, late: true})
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := New(exactTwin(cfg))
	if err != nil {
		t.Fatal(err)
	}
	// Four items salted from the start, one (v002) from the middle of the stream: its earlier
	// counts are reported too.
	tracked := map[string]bool{"v001": true, "v004": true, "v009": true, "v025": true}
	known := map[string]bool{} // the tracked items the partition has seen a salted event of
	var copyAt []byte
	var copyTracked []TrackedItem
	copyFrom := len(evs) / 3
	checked := 0
	for i, ev := range evs {
		if i == len(evs)/2 {
			tracked["v002"] = true
		}
		p.Add(ev)
		twin.Add(ev)
		if tracked[ev.ItemID] {
			p.Track([]byte(ev.ItemID), ev.TS.UnixMilli())
			known[ev.ItemID] = true
		}
		if i == copyFrom {
			copyAt, copyTracked = mustMarshal(t, p), p.TrackedItems()
		}
		finals, twinFinals := p.TakeClosed(), twin.TakeClosed()
		truth := countsOf(twinFinals)
		for _, l := range finals {
			checkTracked(t, fmt.Sprintf("event %d final", i), p.byName[l.Window].conf(), l, truth[l.Window+"@"+l.Start.String()], known)
		}
		if r.IntN(50) != 0 {
			continue
		}
		checked++
		at := fmt.Sprintf("event %d", i)
		all, twinAll := p.LiveAll(), twin.LiveAll()
		truth = countsOf(twinAll)
		for j, wc := range cfg.Windows {
			live, err := p.Live(wc.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(all[j].Tracked, live.Tracked) || !reflect.DeepEqual(all[j].TrackedScored, live.TrackedScored) {
				t.Fatalf("%s %s: LiveAll tracked %v %v, Live %v %v", at, wc.Name, all[j].Tracked, all[j].TrackedScored, live.Tracked, live.TrackedScored)
			}
			if wc.Kind == windowset.Decayed {
				top, _ := p.Top(wc.Name)
				twinTop, _ := twin.Top(wc.Name)
				checkTrackedScored(t, at+" live", p.byName[wc.Name].conf(), all[j], twinAll[j], known)
				checkTrackedScored(t, at+" top", p.byName[wc.Name].conf(), top, twinTop, known)
				continue
			}
			checkTracked(t, at+" live", wc, all[j], truth[twinAll[j].Window+"@"+twinAll[j].Start.String()], known)
			top, _ := p.Top(wc.Name)
			twinTop, _ := twin.Top(wc.Name)
			checkTracked(t, at+" top", wc, top, countsOf([]List{twinTop})[twinTop.Window+"@"+twinTop.Start.String()], known)
		}
		sl, _ := p.Since(nil)
		tl, _ := twin.Since(nil)
		checkTracked(t, at+" since", WindowConfig{Name: "since", Mode: windowset.Exact}, List{Tracked: sl.Tracked}, countsOf([]List{{Items: tl.Items}})["@"+time.Time{}.String()], known)
	}
	if checked < 20 {
		t.Fatalf("%d points checked", checked)
	}
	// A copy restored a third of the way in, with its tracked items, then fed the rest, reports
	// what the uninterrupted partition does.
	q, err := Restore(cfg, copyAt)
	if err != nil {
		t.Fatal(err)
	}
	q.SetTracked(copyTracked)
	for i, ev := range evs[copyFrom+1:] {
		q.Add(ev)
		if tracked[ev.ItemID] && (ev.ItemID != "v002" || copyFrom+1+i >= len(evs)/2) {
			q.Track([]byte(ev.ItemID), ev.TS.UnixMilli())
		}
	}
	q.TakeClosed()
	want, got := p.LiveAll(), q.LiveAll()
	for j := range want {
		if !reflect.DeepEqual(got[j].Tracked, want[j].Tracked) || !reflect.DeepEqual(got[j].TrackedScored, want[j].TrackedScored) {
			t.Fatalf("restored %s: tracked %v %v, uninterrupted %v %v", want[j].Window, got[j].Tracked, got[j].TrackedScored, want[j].Tracked, want[j].TrackedScored)
		}
	}
	if !reflect.DeepEqual(q.TrackedItems(), p.TrackedItems()) {
		t.Fatalf("restored tracked items %v, uninterrupted %v", q.TrackedItems(), p.TrackedItems())
	}
}

// TestTrackedExpire: a tracked item is forgotten once no window reaches back to its last
// salted event, and never with an all-time window.
func TestTrackedExpire(t *testing.T) {
	for _, cc := range []struct {
		name  string
		cfg   Config
		stays bool
	}{{"windows", snapTestConfig(), false}, {"with-all-time", snapAllConfig(), true}} {
		t.Run(cc.name, func(t *testing.T) {
			p, err := New(cc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			at := t0.Add(30 * time.Second)
			p.AddBytes([]byte("hot"), 5, at.UnixMilli())
			p.Track([]byte("hot"), at.UnixMilli())
			p.AddBytes([]byte("other"), 1, at.Add(20*24*time.Hour).UnixMilli())
			if got := p.TrackedItems(); len(got) != 1 || got[0].Item != "hot" || !got[0].Last.Equal(at.Truncate(time.Minute)) {
				t.Fatalf("after 20 days: tracked %v, want hot at %v", got, at.Truncate(time.Minute))
			}
			l, _ := p.Top("sk-month")
			if len(l.Tracked) != 1 || l.Tracked[0].Count < 5 {
				t.Fatalf("sk-month tracked %v, want hot at least 5", l.Tracked)
			}
			p.AddBytes([]byte("other"), 1, at.Add(70*24*time.Hour).UnixMilli())
			if got := p.TrackedItems(); (len(got) == 1) != cc.stays {
				t.Fatalf("after 70 days: tracked %v, want it kept %v", got, cc.stays)
			}
		})
	}
}
