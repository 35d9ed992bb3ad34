package accuracy

import (
	"fmt"
	"math"
	"time"

	"trending/internal/stream"
	"trending/speed/window"
)

// MonthSketchRatio is the month sketch's bound over its K-th count (docs/requirements.md): (e/2^18) x
// 4.7e9 / 1e6 = 4.86%.
const MonthSketchRatio = 0.0486

// Config configures a Run. Zero fields mean their documented defaults.
type Config struct {
	// Stream is the stream: Items, Zipf, Seed, Servers, Start, Viral, Late
	// and LateBy are used; Rate and Duration are set from Views and Span,
	// and Malformed is ignored (the harness feeds events, not bytes).
	// Defaults: loadgen's (1e6 items, Zipf 1.1, 500 servers, no viral, no
	// late events), but Start defaults to 2026-01-20, so that a calendar
	// month closes inside the default span.
	Stream stream.Config
	// Views is the number of views in the stream. Default 4,000,000.
	Views int64
	// Span is the event time the stream covers, a whole number of seconds.
	// Default 35 days: the sliding month fills and slides, and the calendar
	// month of January closes.
	Span time.Duration
	// Partitions is the number of partitions (Kafka's hash of the item id
	// picks one). Default 4.
	Partitions int
	// Window configures every partition. Default window.DefaultConfig()
	// (the default windows, K 100, M 3), except that a zero Sketch.Width
	// means ScaledWidth: the month sketch's error ratio at this stream's size.
	Window window.Config
	// Points is how many evenly spaced points of the stream every window is
	// compared at (the last is the end). Default 4.
	Points int
	// TargetRatio is the bound over K-th count that ScaledWidth aims for.
	// Default MonthSketchRatio.
	TargetRatio float64
}

// DefaultStart is the default stream start: the calendar month of January
// closes 12 days into the default 35-day span.
var DefaultStart = time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)

func (c Config) withDefaults() Config {
	if c.Views == 0 {
		c.Views = 4_000_000
	}
	if c.Span == 0 {
		c.Span = 35 * 24 * time.Hour
	}
	if c.Partitions == 0 {
		c.Partitions = 4
	}
	if c.Points == 0 {
		c.Points = 4
	}
	if c.TargetRatio == 0 {
		c.TargetRatio = MonthSketchRatio
	}
	if c.Stream.Start.IsZero() {
		c.Stream.Start = DefaultStart
	}
	c.Stream.Malformed = 0
	if c.Span > 0 {
		c.Stream.Duration = c.Span
		c.Stream.Rate = float64(c.Views) / c.Span.Seconds()
	}
	d := stream.DefaultConfig()
	if c.Stream.Items == 0 {
		c.Stream.Items = d.Items
	}
	if c.Stream.Zipf == 0 {
		c.Stream.Zipf = d.Zipf
	}
	if c.Stream.Servers == 0 {
		c.Stream.Servers = d.Servers
	}
	if c.Stream.LateBy == 0 {
		c.Stream.LateBy = d.LateBy
	}
	if c.Stream.ItemPrefix == "" {
		c.Stream.ItemPrefix = d.ItemPrefix
	}
	wd := window.DefaultConfig()
	if c.Window.Windows == nil {
		c.Window.Windows = wd.Windows
	}
	if c.Window.K == 0 {
		c.Window.K = wd.K
	}
	if c.Window.M == 0 {
		c.Window.M = wd.M
	}
	if c.Window.AllowedLateness == 0 {
		c.Window.AllowedLateness = wd.AllowedLateness
	}
	if c.Window.Sketch.Depth == 0 {
		c.Window.Sketch.Depth = wd.Sketch.Depth
	}
	if c.Window.Sketch.Width == 0 {
		c.Window.Sketch.Width = ScaledWidth(c.Stream.Items, c.Stream.Zipf, c.Window.K, c.Partitions, c.TargetRatio)
	}
	return c
}

// Validate reports whether c can run; errors wrap ErrConfig (or the
// stream's or window's own config errors) and say what to change.
func (c Config) Validate() error {
	switch {
	case c.Views < 0:
		return fmt.Errorf("%w: views %d: must be positive", ErrConfig, c.Views)
	case c.Span < 0 || c.Span%time.Second != 0:
		return fmt.Errorf("%w: span %s: use a positive whole number of seconds, such as 35d or 6h", ErrConfig, c.Span)
	case c.Partitions < 0 || c.Partitions > 1024:
		return fmt.Errorf("%w: partitions %d: use 1..1024", ErrConfig, c.Partitions)
	case c.Points < 0 || c.Points > 1000:
		return fmt.Errorf("%w: points %d: use 1..1000", ErrConfig, c.Points)
	case c.TargetRatio < 0 || math.IsNaN(c.TargetRatio):
		return fmt.Errorf("%w: target ratio %g: must be positive (the month sizing's: %g)", ErrConfig, c.TargetRatio, MonthSketchRatio)
	}
	c = c.withDefaults()
	if c.Stream.Rate > stream.MaxRate {
		return fmt.Errorf("%w: %d views over %s is %g a second: over %d; lengthen the span", ErrConfig, c.Views, c.Span, c.Stream.Rate, stream.MaxRate)
	}
	if err := c.Stream.Validate(); err != nil {
		return err
	}
	return c.Window.Validate()
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
