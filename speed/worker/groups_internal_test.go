package worker

import (
	"testing"
	"time"

	"trending/model/windowset"
	"trending/speed/window"
)

// TestGroupAddAllocations: once a value has its state, counting its events allocates
// nothing, and neither do events of a value without lists (listed or every value seen past
// the cap), so a stream of many unlisted regions costs no garbage per event.
func TestGroupAddAllocations(t *testing.T) {
	cfg := window.DefaultConfig()
	cfg.Windows = []window.WindowConfig{{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact}}
	ms := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC).UnixMilli()
	item := []byte("V1")
	for _, sel := range []windowset.Groups{
		{By: windowset.ByRegion, Values: []string{"eu"}},
		{By: windowset.ByRegion, Every: true, Max: 1},
	} {
		global, err := window.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		g := newGroupStates(sel, cfg)
		for _, r := range []string{"eu", "mars"} { // eu gets its state; mars none (unlisted, or past the cap)
			global.AddBytes(item, 1, ms)
			g.add(global, []byte(r), item, 1, ms, false)
		}
		eu, mars, slash := []byte("eu"), []byte("mars"), []byte("a/b")
		for name, v := range map[string][]byte{"eu": eu, "mars": mars, "a/b": slash} {
			if n := testing.AllocsPerRun(100, func() { g.add(global, v, item, 1, ms, false) }); n != 0 {
				t.Errorf("%s: an event of %s allocates %v times", sel, name, n)
			}
		}
	}
}

// TestGroupsTrackSalted: a salted event is tracked in its region's state too (its lists then
// report the item in full, for the merger to sum its shares), and the tracked items survive
// the checkpoint's groups part.
func TestGroupsTrackSalted(t *testing.T) {
	cfg := window.DefaultConfig()
	cfg.Windows = []window.WindowConfig{{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact}}
	sel := windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
	ms := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC).UnixMilli()
	global, err := window.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := newGroupStates(sel, cfg)
	for _, ev := range []struct {
		region, item string
		salted       bool
	}{{"eu", "HOT", true}, {"eu", "V1", false}, {"us", "V2", false}} {
		global.AddBytes([]byte(ev.item), 1, ms)
		g.add(global, []byte(ev.region), []byte(ev.item), 1, ms, ev.salted)
	}
	if tr := g.states["eu"].TrackedItems(); len(tr) != 1 || tr[0].Item != "HOT" {
		t.Fatalf("eu tracks %v, want HOT", tr)
	}
	if tr := g.states["us"].TrackedItems(); len(tr) != 0 {
		t.Fatalf("us tracks %v, want none", tr)
	}
	snaps, err := g.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	part, pieces, err := g.encode(snaps, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := unbundle(bundle(bundled{win: []byte("TWIN"), groups: part}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := restoreGroups(sel, cfg, back.groups, pieces)
	if err != nil {
		t.Fatal(err)
	}
	if tr := r.states["eu"].TrackedItems(); len(tr) != 1 || tr[0].Item != "HOT" || len(r.states["us"].TrackedItems()) != 0 {
		t.Fatalf("restored: eu tracks %v, us %v", tr, r.states["us"].TrackedItems())
	}
	l := r.states["eu"].LiveAll()[0] // the open minute's counts included
	if len(l.Tracked) != 1 || l.Tracked[0].Item != "HOT" {
		t.Fatalf("eu's restored hour reports tracked %v, want HOT in full", l.Tracked)
	}
	if _, err := restoreGroups(windowset.Groups{By: windowset.ByRegion, Values: []string{"eu"}}, cfg, back.groups, pieces); err == nil {
		t.Fatal("a groups part counted under eu,us restored under eu alone")
	}
}
