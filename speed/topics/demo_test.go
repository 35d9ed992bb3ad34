package topics

import (
	"reflect"
	"testing"
	"time"

	"trending/model/topicrules"
)

// TestFeedDemo runs the demo's week small: the marathon leads the first region's surge list,
// the never-seen quake is held and listed nowhere, the banned term is dropped, and the same
// seed gives the same lists.
func TestFeedDemo(t *testing.T) {
	regions := []string{"us", "jp"}
	now := time.Date(2026, 11, 14, 10, 20, 0, 0, time.UTC)
	run := func(seed uint64) (*State, map[string][]Ranked) {
		s, err := New(DemoConfig(regions, 2048), topicrules.NewBlocklist(DemoBanned))
		if err != nil {
			t.Fatal(err)
		}
		FeedDemo(s, regions, now, 1000, 2000, seed)
		return s, s.Refresh(now)
	}
	s, lists := run(1)
	if got := s.Config().Scores; got[topicrules.World] != topicrules.Volume || got["us"] != topicrules.Surge || got["jp"] != topicrules.Surge {
		t.Errorf("scores %v: want world by volume, each region by surge", got)
	}
	if st := s.Stats(); st.Blocked == 0 || st.Counted == 0 {
		t.Errorf("stats %+v: want mentions counted and the banned term blocked", st)
	}
	if us := lists["us"]; len(us) == 0 || us[0].Topic != "marathon" {
		t.Errorf("us surge list does not lead with the marathon: %+v", us)
	}
	for name, l := range lists {
		for _, r := range l {
			if r.Topic == "quake" {
				t.Errorf("%s lists the held quake: %+v", name, r)
			}
		}
	}
	if st, ok := s.Review().Status("quake"); !ok || st != topicrules.Pending {
		t.Errorf("quake: %q, %v; want pending review", st, ok)
	}
	if _, again := run(1); !reflect.DeepEqual(lists, again) {
		t.Error("the same seed gave different lists")
	}
}
