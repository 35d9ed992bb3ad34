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
	cfg.Windows = []window.WindowConfig{{Name: "hour", Kind: window.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: window.Exact}}
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
			g.add(global, []byte(r), item, 1, ms)
		}
		eu, mars, slash := []byte("eu"), []byte("mars"), []byte("a/b")
		for name, v := range map[string][]byte{"eu": eu, "mars": mars, "a/b": slash} {
			if n := testing.AllocsPerRun(100, func() { g.add(global, v, item, 1, ms) }); n != 0 {
				t.Errorf("%s: an event of %s allocates %v times", sel, name, n)
			}
		}
	}
}
