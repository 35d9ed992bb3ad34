package window

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"trending/internal/setting"
	trmodel "trending/model"
	"trending/model/windowset"
	"trending/speed/frequent"
	"trending/speed/sketch"
)

// Limits.
const (
	// MaxK is the largest K: the all-time list serves up to 1,000 items.
	MaxK = 1000
	// MaxM bounds the per-partition over-report factor.
	MaxM = 10
	// MaxWindows bounds the number of configured windows.
	MaxWindows = 16
	// MaxBuckets bounds Length/Bucket of a sliding window: 1,440 minute
	// buckets is a day at minute resolution, the longest ring worth keeping.
	MaxBuckets = 1440
	// MaxLateness bounds AllowedLateness. A day of lateness holds a day of
	// events in open minute maps before any list moves.
	MaxLateness = 24 * time.Hour
)

// WindowConfig defines one window.
type WindowConfig struct {
	// Name is how Top, List and the serving layer call the window: a
	// non-empty lowercase name of letters, digits, '-' and '_', unique in the
	// Config ("hour", "day", "calendar-month").
	Name string
	// Kind is windowset.Sliding, Calendar, AllTime or Decayed: the model's vocabulary
	// (model/windowset), shared with every role's window set.
	Kind windowset.Kind
	// Length is a sliding window's length, a whole number of Buckets, at
	// most MaxBuckets of them. Calendar and all-time windows ignore it.
	Length time.Duration
	// Bucket is a sliding window's bucket: time.Minute, time.Hour or 24h.
	// The window is the Length/Bucket newest buckets, the newest being the
	// one holding the last closed minute, so with buckets longer than a
	// minute the window is between Length-Bucket and Length long (the day
	// of 24 hourly buckets is 23 to 24 hours, which nobody notices on a trending page). Calendar
	// and all-time windows ignore it.
	Bucket time.Duration
	// Span is a calendar window's UTC period (model.Hour, Day, Week or Month).
	// Other kinds must leave it empty.
	Span trmodel.Period
	// Mode is windowset.Exact, Sketch or Auto; empty means Auto, which picks
	// from Kind and Length (see resolved): exact for windows up to 24 hours
	// long, sketch beyond (sliding windows over 24h, calendar weeks and months,
	// all-time windows): the capacity arithmetic of docs/requirements.md, where
	// the hour (7.5 GB) and day (43.5 GB) fit exactly and the month (250 GB)
	// does not.
	Mode windowset.Mode
	// HalfLife is a decayed window's half-life: a whole number of minutes from
	// MinHalfLife to MaxHalfLife. Other kinds must leave it zero.
	HalfLife time.Duration
	// Capacity is a frequent window's counters per summary (frequent.Config.Capacity);
	// 0 takes Config.FrequentCapacity. Other modes must leave it zero.
	Capacity int
}

// Config configures a Partition. Start from DefaultConfig, which holds every
// default: a zero field means zero. Where zero cannot work (no Windows, K 0,
// M 0, a zero Sketch shape with a sketch window) New refuses it by the
// field's name; where it is a setting (AllowedLateness, CandidateFloor,
// SinceDays) it means what the field says. CandidateCap 0 is derived: 8*M*K.
type Config struct {
	// Windows are the windows every partition counts. Default: the
	// sliding hour (60 minute buckets, exact), sliding day (24 hourly
	// buckets, exact), sliding month (30 daily sketches, sketch), and the
	// calendar hour and day (exact) and month (sketch), named "hour", "day",
	// "month", "calendar-hour", "calendar-day" and "calendar-month", and
	// the all-time window (sketch), named "all" (docs/requirements.md):
	// DefaultWindows(). At least one; nil or empty is refused.
	Windows []WindowConfig
	// K is the size of the served list, 1..MaxK. Default 100.
	K int
	// M is the over-report factor: each partition reports its top M*K so
	// that sketch noise cannot push a leader out of the merge (docs/requirements.md,
	// "The exact merge").
	// 1..MaxM. Default 3.
	M int
	// AllowedLateness is how far behind the largest event time seen the
	// watermark trails; a minute closes when the watermark passes its end.
	// 0 means no lateness at all: a minute closes as soon as an event of a
	// later minute arrives. At most MaxLateness; negative is refused.
	// Default 30s: events are pre-summed per server per
	// second, so producer batching and Kafka delivery put most stragglers
	// within seconds, and a later event is still counted (Late) wherever
	// its window has not moved past it. Larger values delay every list by
	// the same amount.
	AllowedLateness time.Duration
	// Sketch shapes every count-min sketch. Default sketch.DefaultConfig()
	// (2^18 x 5, 10.5 MB); with a sketch window a zero Width or Depth is
	// refused ("Sketch.Width"), with none the shape is unused. Sliding-window
	// sketches always use standard update, because their buckets are
	// subtracted; Conservative applies to calendar and all-time sketches
	// only, which are never subtracted.
	Sketch sketch.Config
	// CandidateFloor is the fixed part of the sketch windows' candidate
	// floor: an item becomes a candidate when its running estimate reaches
	// max(CandidateFloor, the adaptive floor). The capacity arithmetic sets it to
	// half the expected K-th count (500,000 for a month of its traffic). Default 0:
	// the adaptive floor alone, which works at any traffic.
	CandidateFloor uint64
	// CandidateCap bounds a sketch window's candidate set between hourly
	// re-estimations: when it grows past CandidateCap the window
	// re-estimates at once. At least M*K. Zero is derived: 8*M*K, the
	// default (DefaultConfig leaves it 0, so that changing K or M keeps it
	// in step).
	CandidateCap int
	// SinceDays, when positive, makes the partition count every item
	// exactly from the time boundary B (SetBoundary, the batch layer's
	// all-time base) up to the watermark, in daily buckets (Since): the
	// speed side of the exact all-time list. It keeps at most SinceDays
	// UTC days (the open one included), so counts since a B older than
	// that are incomplete (SinceList.From says from when they are
	// complete). 0 (the default) keeps none. At most MaxSinceDays. Like K
	// and M it may change across a restart: it is not in the fingerprint.
	// SetSinceDays sets it by the rule of the roles (none without an
	// all-time window).
	SinceDays int
	// FrequentCapacity is the counters per summary of a frequent window that sets no
	// Capacity of its own (frequent.DefaultCapacity, 4,096: a bound of N/4,097). It is in
	// the fingerprint through each frequent window's resolved capacity.
	FrequentCapacity int
}

// CalendarName is the name the core counts a calendar window of span under
// ("calendar-day"); the worker serves it under its span. The name is in a
// snapshot's fingerprint, so it never changes.
func CalendarName(span trmodel.Period) string { return "calendar-" + string(span) }

// FromSet returns a served window set's windows as the core counts them:
// each window as the set defines it (the same Kind and Mode), a calendar
// window named CalendarName(span).
func FromSet(s windowset.Set) []WindowConfig {
	out := make([]WindowConfig, 0, len(s.Windows))
	for _, w := range s.Windows {
		wc := WindowConfig{Name: w.Name, Kind: w.Kind, Length: w.Length, Bucket: w.Bucket,
			Span: w.Span, Mode: w.Mode, HalfLife: w.HalfLife, Capacity: w.Capacity}
		if w.Kind == windowset.Calendar {
			wc.Name = CalendarName(w.Span)
		}
		out = append(out, wc)
	}
	return out
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Windows:         DefaultWindows(),
		K:               100,
		M:               3,
		AllowedLateness: 30 * time.Second,
		Sketch:          sketch.DefaultConfig(),

		FrequentCapacity: frequent.DefaultCapacity,
	}
}

// DefaultWindows returns the sliding and calendar hour, day and month windows and the
// all-time window (docs/requirements.md).
// "all" counts by sketch: a running total per item ever seen grows without
// bound, and the batch layer publishes the exact all-time list nightly.
func DefaultWindows() []WindowConfig {
	return []WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
		{Name: "month", Kind: windowset.Sliding, Length: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Sketch},
		{Name: CalendarName(trmodel.Hour), Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Exact},
		{Name: CalendarName(trmodel.Day), Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Exact},
		{Name: CalendarName(trmodel.Month), Kind: windowset.Calendar, Span: trmodel.Month, Mode: windowset.Sketch},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
	}
}

// normalized returns c as a Partition keeps it: the windows copied with
// Auto modes resolved, and a zero CandidateCap derived as 8*M*K. It fills in
// no default.
func (c Config) normalized() Config {
	if c.Windows != nil {
		c.Windows = append([]WindowConfig(nil), c.Windows...)
	}
	for i := range c.Windows {
		c.Windows[i] = c.Windows[i].resolved()
		if c.Windows[i].Mode == windowset.Frequent && c.Windows[i].Capacity == 0 {
			c.Windows[i].Capacity = c.FrequentCapacity
		}
	}
	if c.CandidateCap == 0 {
		c.CandidateCap = 8 * c.M * c.K
	}
	return c
}

// resolved returns w with Auto (or empty) Mode resolved and the fields its
// Kind ignores zeroed.
func (w WindowConfig) resolved() WindowConfig {
	if w.Kind == windowset.Calendar || w.Kind == windowset.AllTime || w.Kind == windowset.Decayed {
		w.Length, w.Bucket = 0, 0
	}
	if w.Mode == "" || w.Mode == windowset.Auto {
		w.Mode = windowset.Exact
		if (w.Kind == windowset.Sliding && w.Length > 24*time.Hour) || (w.Kind == windowset.Calendar && w.Span.Valid() && w.Span.Nominal() > 24*time.Hour) || w.Kind == windowset.AllTime ||
			(w.Kind == windowset.Decayed && Horizon(w.HalfLife) > 24*time.Hour) {
			w.Mode = windowset.Sketch
		}
	}
	return w
}

// invalid is a setting error for field (internal/setting) that also wraps
// ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c can build a Partition; every error wraps
// ErrConfig and setting.ErrConfig, names the field ("K", "Sketch.Width",
// "Windows") and says what to change. Several are joined.
func (c Config) Validate() error {
	c = c.normalized()
	d := DefaultConfig()
	var errs []error
	kOK, mOK := c.K >= 1 && c.K <= MaxK, c.M >= 1 && c.M <= MaxM
	if !kOK {
		errs = append(errs, invalid("K", "%d is out of range: use 1..%d (default %d)", c.K, MaxK, d.K))
	}
	if !mOK {
		errs = append(errs, invalid("M", "%d is out of range: use 1..%d (default %d)", c.M, MaxM, d.M))
	}
	switch {
	case c.AllowedLateness < 0:
		errs = append(errs, invalid("AllowedLateness", "%s: must not be negative (0: none; default %s)", c.AllowedLateness, d.AllowedLateness))
	case c.AllowedLateness > MaxLateness:
		errs = append(errs, invalid("AllowedLateness", "%s is over %s: lower it (default %s)", c.AllowedLateness, MaxLateness, d.AllowedLateness))
	case c.AllowedLateness%time.Millisecond != 0:
		errs = append(errs, invalid("AllowedLateness", "%s is not a whole number of milliseconds", c.AllowedLateness))
	}
	if kOK && mOK && c.CandidateCap < c.M*c.K {
		errs = append(errs, invalid("CandidateCap", "%d is below M*K = %d: raise it (0: 8*M*K, the default)", c.CandidateCap, c.M*c.K))
	}
	if c.SinceDays < 0 || c.SinceDays > MaxSinceDays {
		errs = append(errs, invalid("SinceDays", "%d is out of range: use 0..%d (0 keeps no counts since a boundary)", c.SinceDays, MaxSinceDays))
	}
	switch {
	case len(c.Windows) == 0:
		errs = append(errs, invalid("Windows", "no windows: configure at least one (default DefaultWindows())"))
	case len(c.Windows) > MaxWindows:
		errs = append(errs, invalid("Windows", "%d windows: at most %d", len(c.Windows), MaxWindows))
	default:
		seen := make(map[string]bool, len(c.Windows))
		for _, w := range c.Windows {
			if err := w.validate(); err != nil {
				errs = append(errs, err)
				continue
			}
			if seen[w.Name] {
				errs = append(errs, invalid("Windows", "window name %q is used twice: names must be unique", w.Name))
			}
			seen[w.Name] = true
		}
	}
	if c.anySketch() {
		if err := c.Sketch.Validate(); err != nil {
			for _, e := range setting.Errors(err) {
				errs = append(errs, invalid("Sketch."+e.Field, "%s", e.Problem))
			}
		}
	}
	return errors.Join(errs...)
}

// validate checks one resolved window.
func (w WindowConfig) validate() error {
	if w.Name == "" || strings.TrimLeft(w.Name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" || len(w.Name) > 64 {
		return invalid("Windows", "window name %q: use 1 to 64 lowercase letters, digits, '-' or '_'", w.Name)
	}
	if !w.Mode.Valid() || w.Mode == windowset.Auto { // resolved: Auto is gone
		return invalid("Windows", "window %q: mode %q: use %s", w.Name, w.Mode, windowset.ModeNames())
	}
	if w.Mode == windowset.Frequent {
		if w.Kind == windowset.Decayed {
			return invalid("Windows", "window %q: a decayed window cannot count in frequent mode: use exact or sketch", w.Name)
		}
		if err := (frequent.Config{Capacity: w.Capacity}).Validate(); err != nil {
			return invalid("Windows", "window %q: capacity %d: use 1..%d counters (Config.FrequentCapacity sets the default)", w.Name, w.Capacity, frequent.MaxCapacity)
		}
	} else if w.Capacity != 0 {
		return invalid("Windows", "window %q: a capacity (%d) is a frequent window's: remove it or use mode frequent", w.Name, w.Capacity)
	}
	if w.HalfLife != 0 && w.Kind != windowset.Decayed {
		return invalid("Windows", "window %q: a %s window has no half-life (%s): remove it or make the window decayed", w.Name, w.Kind, w.HalfLife)
	}
	switch w.Kind {
	case windowset.Sliding:
		if w.Span != "" {
			return invalid("Windows", "window %q: a sliding window has no span (%q): remove it or make the window calendar", w.Name, w.Span)
		}
		if w.Bucket != time.Minute && w.Bucket != time.Hour && w.Bucket != 24*time.Hour {
			return invalid("Windows", "window %q: bucket %s: use 1m, 1h or 24h", w.Name, w.Bucket)
		}
		if w.Length <= 0 || w.Length%w.Bucket != 0 {
			return invalid("Windows", "window %q: length %s is not a positive whole number of %s buckets", w.Name, w.Length, w.Bucket)
		}
		if n := w.Length / w.Bucket; n > MaxBuckets {
			return invalid("Windows", "window %q: %d buckets of %s: at most %d: use a larger bucket", w.Name, n, w.Bucket, MaxBuckets)
		}
	case windowset.Calendar:
		if !w.Span.Valid() {
			return invalid("Windows", "window %q: span %q: use one of %s", w.Name, w.Span, trmodel.PeriodNames())
		}
	case windowset.AllTime:
		if w.Span != "" {
			return invalid("Windows", "window %q: an all-time window has no span (%q): remove it or make the window calendar", w.Name, w.Span)
		}
	case windowset.Decayed:
		if w.Span != "" {
			return invalid("Windows", "window %q: a decayed window has no span (%q): remove it or make the window calendar", w.Name, w.Span)
		}
		if w.HalfLife < MinHalfLife || w.HalfLife > MaxHalfLife || w.HalfLife%time.Minute != 0 {
			return invalid("Windows", "window %q: half-life %s: use a whole number of minutes from %s to %s, such as 1h", w.Name, w.HalfLife, MinHalfLife, MaxHalfLife)
		}
	default:
		return invalid("Windows", "window %q: kind %q: use %q, %q, %q or %q", w.Name, w.Kind, windowset.Sliding, windowset.Calendar, windowset.AllTime, windowset.Decayed)
	}
	return nil
}

// fingerprint is the canonical text of the settings that give a snapshot's
// state its meaning: the resolved windows and the sketch shape. Restore
// refuses a snapshot whose fingerprint differs (ErrConfigMismatch). K, M,
// the candidate floor and cap, and the allowed lateness may change across a
// restart.
func (c Config) fingerprint() string {
	var b strings.Builder
	for i, w := range c.Windows {
		if i > 0 {
			b.WriteByte(';')
		}
		mode := string(w.Mode)
		if w.Mode == windowset.Frequent {
			mode += "/" + strconv.Itoa(w.Capacity)
		}
		switch w.Kind {
		case windowset.Sliding:
			fmt.Fprintf(&b, "%s:%s:%dm/%dm:%s", w.Name, w.Kind, w.Length/time.Minute, w.Bucket/time.Minute, mode)
		case windowset.AllTime:
			fmt.Fprintf(&b, "%s:%s:%s", w.Name, w.Kind, mode)
		case windowset.Decayed:
			fmt.Fprintf(&b, "%s:%s:%dm:%s", w.Name, w.Kind, w.HalfLife/time.Minute, mode)
		default:
			fmt.Fprintf(&b, "%s:%s:%s:%s", w.Name, w.Kind, w.Span, mode)
		}
	}
	s := c.Sketch
	if !c.anySketch() {
		return b.String()
	}
	fmt.Fprintf(&b, "|sketch:%dx%d:seed=%d:conservative=%t", s.Width, s.Depth, s.Seed, s.Conservative)
	return b.String()
}

// anySketch reports whether any window counts by sketch.
func (c Config) anySketch() bool {
	for _, w := range c.Windows {
		if w.Mode == windowset.Sketch {
			return true
		}
	}
	return false
}

// latenessMs is the allowed lateness in milliseconds.
func (c Config) latenessMs() int64 { return c.AllowedLateness.Milliseconds() }
