package topics

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"testing"
	"time"

	"trending/model/topicrules"
	"trending/speed/sketch"
)

// v1Config is the configuration testdata/snapshot-v1.snap was written under by the version 1
// build (baseline width 1,024 then; any now).
func v1Config() Config {
	c := DefaultConfig()
	c.Regions = []string{"us"}
	c.Scores = map[string]topicrules.Score{"us": topicrules.Surge}
	c.Width, c.BaselineWidth = 1<<12, 1<<12
	c.Dedupe.Capacity = 1 << 10
	return c
}

// saveAll saves every unsaved hour as a store would and returns them by hour.
func saveAll(s *State) map[int64]*sketch.Sketch {
	out := map[int64]*sketch.Sketch{}
	for _, h := range s.Unsaved() {
		out[h.Hour] = h.Sketch
		s.Saved(h.Hour)
	}
	return out
}

// TestRestoreSnapshotV1: a version 1 snapshot (every hour of a week in memory, quarter width,
// written by the previous build: 3 days of marathon at 800 an hour, then 4,000 in the window)
// restores under the full baseline width; its closed hours wait to be saved at their own
// width, and the scores are the ones the old build ranked, before and after they moved to
// the store and back.
func TestRestoreSnapshotV1(t *testing.T) {
	snap, err := os.ReadFile("testdata/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	var old []Ranked
	if b, err := os.ReadFile("testdata/snapshot-v1.rank.json"); err != nil || json.Unmarshal(b, &old) != nil {
		t.Fatal(err)
	}
	s := newState(t, v1Config(), nil)
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		rs, _ := s.Rank("us")
		m, _ := find(rs, "marathon")
		if m.Expected != old[0].Expected || m.Score != old[0].Score || m.NoHistory || m.Expected != 200 {
			t.Errorf("%s: marathon %+v, the version 1 build ranked %+v", when, m, old[0])
		}
	}
	check("restored")
	un := s.Unsaved()
	if len(un) != 6 {
		t.Fatalf("%d unsaved hours, want the 6 closed ones of the snapshot", len(un))
	}
	for _, h := range un {
		if w := h.Sketch.Config().Width; w != 1<<10 {
			t.Errorf("hour %d width %d, want the snapshot's 1024", h.Hour, w)
		}
	}
	stored := saveAll(s)
	check("saved (the current baseline's days stay)")
	// A restore of the new snapshot asks for the baseline again; loading it gives the same.
	snap2, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	s2 := newState(t, v1Config(), nil)
	if err := s2.Restore(snap2); err != nil {
		t.Fatal(err)
	}
	if un := s2.Unsaved(); len(un) != 0 {
		t.Errorf("%d unsaved hours in the version 2 snapshot, want none: they were saved", len(un))
	}
	need := s2.NeedBaseline(false)
	if len(need) != 7 {
		t.Fatalf("need %v, want the 7 days of the current hour", need)
	}
	for _, h := range need {
		if err := s2.SetBaseline(h, stored[h], nil); err != nil {
			t.Fatal(err)
		}
	}
	if b := s2.Baseline(); b.Days != 3 || b.Missing != 4 || b.Degraded() {
		t.Errorf("baseline %v, want 3 days and 4 missing", b)
	}
	s = s2
	check("restored from version 2 and loaded")
}

// peakHours feeds, for each of days previous days at t0's clock hour and then for the current
// minute, one hour of seed 001's peak: 271 mentions a second over the worldwide and one
// regional key, pre-summed a second at a time.
func peakHours(s *State, days int) {
	for d := days; d >= 1; d-- {
		h := t0.Add(-time.Duration(d) * 24 * time.Hour)
		for sec := range 3600 {
			s.Add(Mention{Topic: "t" + string(rune('a'+sec%26)), Region: "us", TS: h.Add(time.Duration(sec) * time.Second), Count: 271})
		}
	}
	s.Add(Mention{Topic: "now", Region: "us", TS: t0})
}

// TestBaselineBoundAtDefaults: at the default sizes and seed 001's peak the expected count's
// bound is the design's, about 20 mentions for 15 minutes (ComputeSizing's
// BaselineOvercount, the window's bound), whether the days are still in memory or loaded
// from the store. At the quarter width of the previous build it was about 80.
func TestBaselineBoundAtDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a week of peak hours")
	}
	cfg := DefaultConfig()
	cfg.Regions, cfg.Dedupe.Capacity = []string{"us"}, 1<<10
	s := newState(t, cfg, nil)
	peakHours(s, 7)
	sz, _ := ComputeSizing(DefaultSizingInput())
	for _, when := range []string{"in memory", "loaded from the store"} {
		b := s.Baseline()
		t.Logf("%s: %v; design %.1f", when, b, sz.BaselineOvercount)
		if b.Days != 7 || math.Abs(b.MaxOvercount-sz.BaselineOvercount) > 0.05 || math.Abs(b.MaxOvercount-sz.OvercountWindow) > 0.05 {
			t.Errorf("%s: baseline %v, want 7 days bounded by the design's %.2f (the window's %.2f)", when, b, sz.BaselineOvercount, sz.OvercountWindow)
		}
		t.Logf("%s: state %.1f MB", when, float64(s.Bytes())/1e6)
		stored := saveAll(s)
		for _, h := range s.NeedBaseline(false) {
			if err := s.SetBaseline(h, stored[h], nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestUnsavedHoursBounded: with the store down for longer than UnsavedHours, the oldest
// closed hours are dropped instead of growing the state, and what they saw still counts as
// history.
func TestUnsavedHoursBounded(t *testing.T) {
	cfg := smallConfig()
	cfg.UnsavedHours = 3
	s := newState(t, cfg, nil)
	mention(s, "marathon", "us", t0.Add(-10*time.Hour), 400, false)
	for h := 9; h >= 0; h-- {
		mention(s, "coffee", "us", t0.Add(-time.Duration(h)*time.Hour), 10, false)
	}
	if n, d := len(s.Unsaved()), s.UnsavedDropped(); n != 3 || d != 6 {
		t.Errorf("%d unsaved, %d dropped; want 3 and the other 6 closed hours (10 to 2 hours ago; the last one is still open)", n, d)
	}
	mention(s, "marathon", "us", t0.Add(10*time.Minute), 400, false)
	rs, _ := s.Rank("us")
	if m, _ := find(rs, "marathon"); m.NoHistory {
		t.Errorf("marathon %+v: its dropped hour's presence should still count as history", m)
	}
}

// TestBaselineStoreUnavailable: when the store cannot be read the expected counts fall back
// to the days still in memory, the status says how many are missing for that reason, and a
// retry that succeeds restores them.
func TestBaselineStoreUnavailable(t *testing.T) {
	s := newState(t, smallConfig(), nil)
	history(s, "marathon", "us", 7, 800)
	mention(s, "marathon", "us", t0.Add(10*time.Minute), 4000, false)
	expected := func() float64 {
		rs, _ := s.Rank("us")
		m, _ := find(rs, "marathon")
		return m.Expected
	}
	if e := expected(); e != 200 {
		t.Fatalf("expected %v before saving, want 200", e)
	}
	// Six days reach the store; the newest is still unsaved (its write failed, say).
	un := s.Unsaved()
	stored := map[int64]*sketch.Sketch{}
	for _, h := range un[:len(un)-1] {
		stored[h.Hour] = h.Sketch
		s.Saved(h.Hour)
	}
	// A restore drops the loaded days; the store is down.
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(snap); err != nil {
		t.Fatal(err)
	}
	down := errors.New("connection refused")
	for _, h := range s.NeedBaseline(false) {
		if err := s.SetBaseline(h, nil, down); err != nil {
			t.Fatal(err)
		}
	}
	b := s.Baseline()
	if !b.Degraded() || b.Days != 1 || b.Unavailable != 6 {
		t.Errorf("store down: %v, want 1 day from memory and 6 unavailable", b)
	}
	if e := expected(); e != 200 {
		t.Errorf("store down: expected %v, want 200 from the day in memory", e)
	}
	if got := s.NeedBaseline(false); len(got) != 0 {
		t.Errorf("NeedBaseline(false) %v: a failed day is asked for again only on retry", got)
	}
	for _, h := range s.NeedBaseline(true) {
		if err := s.SetBaseline(h, stored[h], nil); err != nil {
			t.Fatal(err)
		}
	}
	if b := s.Baseline(); b.Degraded() || b.Days != 7 {
		t.Errorf("store back: %v, want 7 days", b)
	}
	if e := expected(); e != 200 {
		t.Errorf("store back: expected %v, want 200", e)
	}
}
