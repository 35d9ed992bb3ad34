package window

import (
	"reflect"
	"testing"

	"trending/model/windowset"
)

// TestFromSet: the core counts a window set's windows as the set defines them, one
// vocabulary for kind and mode; the default set is DefaultWindows exactly (the names are in
// the snapshot's fingerprint, so checkpoints restore), and every preset builds a partition.
func TestFromSet(t *testing.T) {
	if got, want := FromSet(windowset.Default()), DefaultWindows(); !reflect.DeepEqual(got, want) {
		t.Fatalf("FromSet(Default()) =\n%+v\nwant DefaultWindows() =\n%+v", got, want)
	}
	for _, name := range windowset.PresetNames() {
		s, err := windowset.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := windowset.Parse(s.String() + ",now=decayed:1h,all=alltime")
		if name == "default" {
			s2, err = windowset.Parse(s.String() + ",now=decayed:1h")
		}
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.Windows = FromSet(s2)
		if err := cfg.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		for i, w := range s2.Windows {
			wc := cfg.Windows[i]
			if wc.Kind != w.Kind || wc.Mode != w.Mode || (w.Kind == windowset.Calendar) != (wc.Name == CalendarName(w.Span)) {
				t.Errorf("preset %s: window %+v counted as %+v", name, w, wc)
			}
		}
	}
}
