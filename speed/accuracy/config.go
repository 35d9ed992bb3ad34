package accuracy

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"trending/internal/setting"
	"trending/internal/stream"
	"trending/speed/window"
)

// MonthSketchRatio is the month sketch's bound over its K-th count (docs/requirements.md): (e/2^18) x
// 4.7e9 / 1e6 = 4.86%.
const MonthSketchRatio = 0.0486

// Config configures a Run. Start from DefaultConfig, which holds every
// default: a zero field means zero, and a zero count (Views, Span,
// Partitions, Points, TargetRatio) is refused by its name. Two fields are
// derived: the stream's Rate and Duration (from Views and Span), and a zero
// Window.Sketch.Width (ScaledWidth).
type Config struct {
	// Stream is the stream: Items, Zipf, Seed, Servers, Start, Viral, Late,
	// LateBy and ItemPrefix are used; Rate and Duration are set from Views
	// and Span, and Malformed is ignored (the harness feeds events, not
	// bytes). Default: stream.DefaultConfig() (1e6 items, Zipf 1.1, 500
	// servers, no viral, no late events) with Start DefaultStart, so that a
	// calendar month closes inside the default span.
	Stream stream.Config
	// Views is the number of views in the stream, at least 1. Default
	// 4,000,000.
	Views int64
	// Span is the event time the stream covers, a positive whole number of
	// seconds. Default 35 days: the sliding month fills and slides, and the
	// calendar month of January closes.
	Span time.Duration
	// Partitions is the number of partitions (Kafka's hash of the item id
	// picks one), 1..1024. Default 4.
	Partitions int
	// Window configures every partition. Default window.DefaultConfig()
	// (the default windows, K 100, M 3) with Sketch.Width 0: a zero
	// Sketch.Width means ScaledWidth, the month sketch's error ratio at this
	// stream's size.
	Window window.Config
	// Points is how many evenly spaced points of the stream every window is
	// compared at (the last is the end), 1..1000. Default 4.
	Points int
	// TargetRatio is the bound over K-th count that ScaledWidth aims for,
	// positive. Default MonthSketchRatio.
	TargetRatio float64
	// Progress, when set, is called after every hour of event time fed, with how much of
	// the span is done; nil for none.
	Progress func(done, total time.Duration)
}

// DefaultStart is the default stream start: the calendar month of January
// closes 12 days into the default 35-day span.
var DefaultStart = time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)

// DefaultConfig returns the documented defaults. It is the one place they
// live.
func DefaultConfig() Config {
	sc := stream.DefaultConfig()
	sc.Start = DefaultStart
	wc := window.DefaultConfig()
	wc.Sketch.Width = 0 // scaled
	return Config{
		Stream:      sc,
		Views:       4_000_000,
		Span:        35 * 24 * time.Hour,
		Partitions:  4,
		Window:      wc,
		Points:      4,
		TargetRatio: MonthSketchRatio,
	}
}

// derived returns c with the fields Run derives set: the stream's Rate and
// Duration from Views and Span, no malformed messages, no counts since the
// all-time boundary (the harness measures the windows, not the boundary),
// and a zero Window.Sketch.Width scaled (ScaledWidth). It fills in no
// default.
func (c Config) derived() Config {
	c.Stream.Malformed = 0
	c.Window.SinceDays = 0
	if c.Span > 0 {
		c.Stream.Duration = c.Span
		c.Stream.Rate = float64(c.Views) / c.Span.Seconds()
	}
	if c.Window.Sketch.Width == 0 {
		c.Window.Sketch.Width = ScaledWidth(c.Stream.Items, c.Stream.Zipf, c.Window.K, c.Partitions, c.TargetRatio)
	}
	return c
}

// invalid is a setting error for field (internal/setting) that also wraps
// ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// nest names each setting error in err (a nested config's) as a field of
// parent ("Window.K"), wrapping ErrConfig; an err without setting errors is
// wrapped as it is.
func nest(parent string, err error) error {
	es := setting.Errors(err)
	if len(es) == 0 {
		return fmt.Errorf("%w: %s: %w", ErrConfig, strings.ToLower(parent), err)
	}
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = invalid(parent+"."+e.Field, "%s", e.Problem)
	}
	return errors.Join(out...)
}

// Validate reports whether c can run; every error wraps ErrConfig, names
// the field where it is one setting's ("Views", "Window.K", "Stream.Zipf")
// and says what to change.
func (c Config) Validate() error {
	var errs []error
	if c.Views < 1 {
		errs = append(errs, invalid("Views", "views %d: must be positive (default %d)", c.Views, DefaultConfig().Views))
	}
	if c.Span <= 0 || c.Span%time.Second != 0 {
		errs = append(errs, invalid("Span", "span %s: use a positive whole number of seconds, such as 35d or 6h", c.Span))
	}
	if c.Partitions < 1 || c.Partitions > 1024 {
		errs = append(errs, invalid("Partitions", "partitions %d: use 1..1024 (default %d)", c.Partitions, DefaultConfig().Partitions))
	}
	if c.Points < 1 || c.Points > 1000 {
		errs = append(errs, invalid("Points", "points %d: use 1..1000 (default %d)", c.Points, DefaultConfig().Points))
	}
	if !(c.TargetRatio > 0) {
		errs = append(errs, invalid("TargetRatio", "target ratio %g: must be positive (the month sizing's: %g)", c.TargetRatio, MonthSketchRatio))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	scaled := c.Window.Sketch.Width == 0
	c = c.derived()
	if c.Stream.Rate > stream.MaxRate {
		return fmt.Errorf("%w: %d views over %s is %g a second: over %d; lengthen the span", ErrConfig, c.Views, c.Span, c.Stream.Rate, stream.MaxRate)
	}
	if err := c.Stream.Validate(); err != nil {
		if scaled {
			return nest("Stream", err) // the scaled width is the stream's: no use checking it
		}
		errs = append(errs, nest("Stream", err))
	}
	if err := c.Window.Validate(); err != nil {
		errs = append(errs, nest("Window", err))
	}
	return errors.Join(errs...)
}

// ScaledWidth returns the count-min width that gives a Zipf(s) stream over
// items items the bound-to-K-th-count ratio target with partitions
// partitions: the power of two nearest, in log scale, to
// e / (target · partitions · p_K), where p_K is the K-th item's share of
// views (see the package comment). The result is within the sketch
// package's limits (at least 16 columns).
func ScaledWidth(items int, s float64, k, partitions int, target float64) int {
	return widthFor(stream.ZipfProb(items, s, min(k, items)), partitions, target)
}

// widthFor is ScaledWidth for a K-th item's share pk of views.
func widthFor(pk float64, partitions int, target float64) int {
	if !(pk > 0) || partitions < 1 || !(target > 0) {
		return 1 << 18
	}
	w := math.E / (target * float64(partitions) * pk)
	e := int(math.Round(math.Log2(w)))
	return 1 << min(max(e, 4), 26)
}

// Ratio returns the bound over K-th count that width gives (the inverse of
// ScaledWidth before rounding).
func Ratio(width, items int, s float64, k, partitions int) float64 {
	pk := stream.ZipfProb(items, s, min(k, items))
	return math.E / (float64(width) * float64(partitions) * pk)
}
