package window

import "testing"

// TestSetModes: a span's mode reaches its live and its calendar window, and no other.
func TestSetModes(t *testing.T) {
	c := DefaultConfig()
	before := map[string]Mode{}
	for _, w := range c.Windows {
		before[w.Name] = w.Mode
	}
	c.SetModes(map[string]Mode{"hour": Sketch})
	hours := 0
	for _, w := range c.Windows {
		span := w.Name
		if w.Kind == Calendar {
			span = w.Span
		}
		want := before[w.Name]
		if span == "hour" {
			want = Sketch
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
