package window

import "trending/model/windowset"

// SetModes sets the counting mode of the windows of a span, the operator's override of the
// window set's modes (`--hour-mode sketch`): modes maps a span to its mode, and a window's
// span is its name for a live window (hour, day, month, all) and its calendar period for a
// calendar one, so "hour" covers the sliding hour and the calendar hour alike. A window
// of a span not in modes keeps its mode.
func (c *Config) SetModes(modes map[string]windowset.Mode) {
	for i, w := range c.Windows {
		span := w.Name
		if w.Kind == windowset.Calendar {
			span = string(w.Span)
		}
		if m, ok := modes[span]; ok {
			c.Windows[i].Mode = m
			if m != windowset.Frequent {
				c.Windows[i].Capacity = 0 // a frequent capacity goes with its mode
			}
		}
	}
}
