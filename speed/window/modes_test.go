package window

import (
	"testing"

	"trending/model/windowset"
)

// TestSetModes: a span's mode reaches its live and its calendar window, and no other.
func TestSetModes(t *testing.T) {
	c := DefaultConfig()
	before := map[string]windowset.Mode{}
	for _, w := range c.Windows {
		before[w.Name] = w.Mode
	}
	c.SetModes(map[string]windowset.Mode{"hour": windowset.Sketch})
	hours := 0
	for _, w := range c.Windows {
		span := w.Name
		if w.Kind == windowset.Calendar {
			span = string(w.Span)
		}
		want := before[w.Name]
		if span == "hour" {
			want = windowset.Sketch
			hours++
		}
		if w.Mode != want {
			t.Errorf("%s: mode %s, want %s", w.Name, w.Mode, want)
		}
	}
	if hours != 2 {
		t.Errorf("%d windows of the span hour, want the sliding and the calendar hour", hours)
	}
}
