package window

import (
	"fmt"
	"strings"
	"time"

	"trending/speed/sketch"
)

// Kind says how a window moves.
type Kind string

const (
	// Sliding windows end at the watermark's minute and move every minute:
	// "the last hour up to now".
	Sliding Kind = "sliding"
	// Calendar windows are fixed UTC periods (10:00-11:00, a day, a month);
	// each produces one final list when the watermark passes its end.
	Calendar Kind = "calendar"
	// AllTime windows never expire: every event since the partition's log
	// began, up to the watermark's minute (seed 003's all-time counts). They
	// accept every late event, so a partition with one never reports
	// TooLate. Exact mode keeps a running total per item ever seen (memory
	// grows with the catalog: for small deployments); sketch mode keeps one
	// running count-min sketch and a candidate set.
	AllTime Kind = "alltime"
)

// Mode says how a window counts.
type Mode string

const (
	// Exact counts every item in per-bucket count arrays plus running totals.
	Exact Mode = "exact"
	// Sketch counts in count-min sketches (one per bucket plus a running
	// one) and keeps a candidate set of items whose estimate passed a floor.
	Sketch Mode = "sketch"
	// Auto picks Exact for windows up to 24 hours long and Sketch beyond
	// (sliding windows over 24h, calendar months, all-time windows): seed
	// 000's memory arithmetic, where the hour and day fit exactly and the
	// month does not.
	Auto Mode = "auto"
)

// Calendar spans.
const (
	SpanHour  = "hour"
	SpanDay   = "day"
	SpanMonth = "month"
)

// Limits.
const (
	// MaxK is the largest K: seed 003 serves up to 1,000 items.
	MaxK = 1000
	// MaxM bounds the per-partition over-report factor.
	MaxM = 10
	// MaxWindows bounds the number of configured windows.
	MaxWindows = 16
	// MaxBuckets bounds Length/Bucket of a sliding window: 1,440 minute
	// buckets is seed 003's day ring, the longest ring worth keeping.
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
	// Kind is Sliding, Calendar or AllTime.
	Kind Kind
	// Length is a sliding window's length, a whole number of Buckets, at
	// most MaxBuckets of them. Calendar and all-time windows ignore it.
	Length time.Duration
	// Bucket is a sliding window's bucket: time.Minute, time.Hour or 24h.
	// The window is the Length/Bucket newest buckets, the newest being the
	// one holding the last closed minute, so with buckets longer than a
	// minute the window is between Length-Bucket and Length long (the day
	// of 24 hourly buckets is 23 to 24 hours, as in seed 000). Calendar
	// and all-time windows ignore it.
	Bucket time.Duration
	// Span is a calendar window's UTC period: SpanHour, SpanDay or
	// SpanMonth. Sliding and all-time windows must leave it empty.
	Span string
	// Mode is Exact, Sketch or Auto; empty means Auto.
	Mode Mode
}

// Config configures a Partition. The zero value of every field means its
// documented default; DefaultConfig returns them filled in.
type Config struct {
	// Windows are the windows every partition counts. Default: seed 000's
	// sliding hour (60 minute buckets, exact), sliding day (24 hourly
	// buckets, exact), sliding month (30 daily sketches, sketch), and the
	// calendar hour and day (exact) and month (sketch), named "hour", "day",
	// "month", "calendar-hour", "calendar-day" and "calendar-month", and
	// seed 003's all-time window (sketch), named "all".
	Windows []WindowConfig
	// K is the size of the served list, 1..MaxK. Default 100.
	K int
	// M is the over-report factor: each partition reports its top M*K so
	// that sketch noise cannot push a leader out of the merge (seed 004).
	// 1..MaxM. Default 3.
	M int
	// AllowedLateness is how far behind the largest event time seen the
	// watermark trails; a minute closes when the watermark passes its end.
	// At most MaxLateness; zero means the default, and a negative value means
	// no lateness at all. Default 30s: events are pre-summed per server per
	// second, so producer batching and Kafka delivery put most stragglers
	// within seconds, and a later event is still counted (Late) wherever
	// its window has not moved past it. Larger values delay every list by
	// the same amount.
	AllowedLateness time.Duration
	// Sketch shapes every count-min sketch. Default sketch.DefaultConfig()
	// (2^18 x 5, 10.5 MB). Sliding-window sketches always use standard
	// update, because their buckets are subtracted; Conservative applies to
	// calendar and all-time sketches only, which are never subtracted.
	Sketch sketch.Config
	// CandidateFloor is the fixed part of the sketch windows' candidate
	// floor: an item becomes a candidate when its running estimate reaches
	// max(CandidateFloor, the adaptive floor). Seed 000 sets it to half the
	// expected K-th count (500,000 for a month of its traffic). Default 0:
	// the adaptive floor alone, which works at any traffic.
	CandidateFloor uint64
	// CandidateCap bounds a sketch window's candidate set between hourly
	// re-estimations: when it grows past CandidateCap the window
	// re-estimates at once. At least M*K. Zero means 8*M*K (also in
	// DefaultConfig, so that changing K or M keeps it in step).
	CandidateCap int
	// SinceDays, when positive, makes the partition count every item
	// exactly from the time boundary B (SetBoundary, the batch layer's
	// all-time base) up to the watermark, in daily buckets (Since): the
	// speed side of the exact all-time list. It keeps at most SinceDays
	// UTC days (the open one included), so counts since a B older than
	// that are incomplete (SinceList.From says from when they are
	// complete). 0 (the default) keeps none. At most MaxSinceDays. Like K
	// and M it may change across a restart: it is not in the fingerprint.
	SinceDays int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Windows:         DefaultWindows(),
		K:               100,
		M:               3,
		AllowedLateness: 30 * time.Second,
		Sketch:          sketch.DefaultConfig(),
	}
}

// DefaultWindows returns seed 000's windows and seed 003's all-time window.
// "all" counts by sketch: a running total per item ever seen grows without
// bound, and the batch layer publishes the exact all-time list nightly.
func DefaultWindows() []WindowConfig {
	return []WindowConfig{
		{Name: "hour", Kind: Sliding, Length: time.Hour, Bucket: time.Minute, Mode: Exact},
		{Name: "day", Kind: Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: Exact},
		{Name: "month", Kind: Sliding, Length: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Mode: Sketch},
		{Name: "calendar-hour", Kind: Calendar, Span: SpanHour, Mode: Exact},
		{Name: "calendar-day", Kind: Calendar, Span: SpanDay, Mode: Exact},
		{Name: "calendar-month", Kind: Calendar, Span: SpanMonth, Mode: Sketch},
		{Name: "all", Kind: AllTime, Mode: Sketch},
	}
}

// withDefaults fills zero fields with their defaults and resolves Auto modes.
func (c Config) withDefaults() Config {
	if c.Windows == nil {
		c.Windows = DefaultWindows()
	} else {
		c.Windows = append([]WindowConfig(nil), c.Windows...)
	}
	for i := range c.Windows {
		c.Windows[i] = c.Windows[i].resolved()
	}
	if c.K == 0 {
		c.K = 100
	}
	if c.M == 0 {
		c.M = 3
	}
	switch {
	case c.AllowedLateness == 0:
		c.AllowedLateness = 30 * time.Second
	case c.AllowedLateness < 0:
		c.AllowedLateness = -1 // "none", kept distinct from "default"
	}
	if c.Sketch.Width == 0 {
		c.Sketch.Width = sketch.DefaultWidth
	}
	if c.Sketch.Depth == 0 {
		c.Sketch.Depth = sketch.DefaultDepth
	}
	if c.CandidateCap == 0 {
		c.CandidateCap = 8 * c.M * c.K
	}
	return c
}

// resolved returns w with Auto (or empty) Mode resolved and the fields its
// Kind ignores zeroed.
func (w WindowConfig) resolved() WindowConfig {
	if w.Kind == Calendar || w.Kind == AllTime {
		w.Length, w.Bucket = 0, 0
	}
	if w.Mode == "" || w.Mode == Auto {
		w.Mode = Exact
		if (w.Kind == Sliding && w.Length > 24*time.Hour) || (w.Kind == Calendar && w.Span == SpanMonth) || w.Kind == AllTime {
			w.Mode = Sketch
		}
	}
	return w
}

// Validate reports whether c (after zero fields take their defaults) can
// build a Partition; the error wraps ErrConfig and says what to change.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.K < 1 || c.K > MaxK:
		return fmt.Errorf("%w: K %d is out of range: use 1..%d (default 100)", ErrConfig, c.K, MaxK)
	case c.M < 1 || c.M > MaxM:
		return fmt.Errorf("%w: M %d is out of range: use 1..%d (default 3)", ErrConfig, c.M, MaxM)
	case c.AllowedLateness > MaxLateness:
		return fmt.Errorf("%w: allowed lateness %s is over %s: lower it (default 30s; negative means none)", ErrConfig, c.AllowedLateness, MaxLateness)
	case c.AllowedLateness > 0 && c.AllowedLateness%time.Millisecond != 0:
		return fmt.Errorf("%w: allowed lateness %s is not a whole number of milliseconds", ErrConfig, c.AllowedLateness)
	case c.CandidateCap < c.M*c.K:
		return fmt.Errorf("%w: candidate cap %d is below M*K = %d: raise it (default 8*M*K)", ErrConfig, c.CandidateCap, c.M*c.K)
	case c.SinceDays < 0 || c.SinceDays > MaxSinceDays:
		return fmt.Errorf("%w: since days %d is out of range: use 0..%d (0 keeps no counts since a boundary)", ErrConfig, c.SinceDays, MaxSinceDays)
	case len(c.Windows) == 0:
		return fmt.Errorf("%w: no windows: configure at least one (nil means the defaults)", ErrConfig)
	case len(c.Windows) > MaxWindows:
		return fmt.Errorf("%w: %d windows: at most %d", ErrConfig, len(c.Windows), MaxWindows)
	}
	seen := make(map[string]bool, len(c.Windows))
	anySketch := false
	for _, w := range c.Windows {
		if err := w.validate(); err != nil {
			return err
		}
		if seen[w.Name] {
			return fmt.Errorf("%w: window name %q is used twice: names must be unique", ErrConfig, w.Name)
		}
		seen[w.Name] = true
		anySketch = anySketch || w.Mode == Sketch
	}
	if anySketch {
		if err := c.Sketch.Validate(); err != nil {
			return fmt.Errorf("%w: sketch: %w", ErrConfig, err)
		}
	}
	return nil
}

// validate checks one resolved window.
func (w WindowConfig) validate() error {
	if w.Name == "" || strings.TrimLeft(w.Name, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" || len(w.Name) > 64 {
		return fmt.Errorf("%w: window name %q: use 1 to 64 lowercase letters, digits, '-' or '_'", ErrConfig, w.Name)
	}
	if w.Mode != Exact && w.Mode != Sketch {
		return fmt.Errorf("%w: window %q: mode %q: use %q, %q or %q", ErrConfig, w.Name, w.Mode, Exact, Sketch, Auto)
	}
	switch w.Kind {
	case Sliding:
		if w.Span != "" {
			return fmt.Errorf("%w: window %q: a sliding window has no span (%q): remove it or make the window calendar", ErrConfig, w.Name, w.Span)
		}
		if w.Bucket != time.Minute && w.Bucket != time.Hour && w.Bucket != 24*time.Hour {
			return fmt.Errorf("%w: window %q: bucket %s: use 1m, 1h or 24h", ErrConfig, w.Name, w.Bucket)
		}
		if w.Length <= 0 || w.Length%w.Bucket != 0 {
			return fmt.Errorf("%w: window %q: length %s is not a positive whole number of %s buckets", ErrConfig, w.Name, w.Length, w.Bucket)
		}
		if n := w.Length / w.Bucket; n > MaxBuckets {
			return fmt.Errorf("%w: window %q: %d buckets of %s: at most %d: use a larger bucket", ErrConfig, w.Name, n, w.Bucket, MaxBuckets)
		}
	case Calendar:
		if w.Span != SpanHour && w.Span != SpanDay && w.Span != SpanMonth {
			return fmt.Errorf("%w: window %q: span %q: use %q, %q or %q", ErrConfig, w.Name, w.Span, SpanHour, SpanDay, SpanMonth)
		}
	case AllTime:
		if w.Span != "" {
			return fmt.Errorf("%w: window %q: an all-time window has no span (%q): remove it or make the window calendar", ErrConfig, w.Name, w.Span)
		}
	default:
		return fmt.Errorf("%w: window %q: kind %q: use %q, %q or %q", ErrConfig, w.Name, w.Kind, Sliding, Calendar, AllTime)
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
		switch w.Kind {
		case Sliding:
			fmt.Fprintf(&b, "%s:%s:%dm/%dm:%s", w.Name, w.Kind, w.Length/time.Minute, w.Bucket/time.Minute, w.Mode)
		case AllTime:
			fmt.Fprintf(&b, "%s:%s:%s", w.Name, w.Kind, w.Mode)
		default:
			fmt.Fprintf(&b, "%s:%s:%s:%s", w.Name, w.Kind, w.Span, w.Mode)
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
		if w.Mode == Sketch {
			return true
		}
	}
	return false
}

// latenessMs is the resolved allowed lateness in milliseconds.
func (c Config) latenessMs() int64 {
	if c.AllowedLateness < 0 {
		return 0
	}
	return c.AllowedLateness.Milliseconds()
}
