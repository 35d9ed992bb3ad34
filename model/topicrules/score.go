package topicrules

import (
	"errors"
	"fmt"
	"math"
	"time"

	"trending/internal/setting"
)

// Score names how a list ranks its topics. It is a per-list setting.
type Score string

const (
	// Volume ranks by the count over the list's window: what the core does for views.
	// It is the default.
	Volume Score = "volume"
	// Surge ranks by how unusual the present is: (current + c) / (expected + c), where
	// expected is the same clock hour's mean over the last 7 days scaled to the window.
	Surge Score = "surge"
	// Decayed ranks by exponentially decayed counts with a half-life: a
	// mention's weight halves every half-life instead of dropping to zero at a window edge.
	Decayed Score = "decayed"
)

// ParseScore returns the Score named s; "" is Volume.
func ParseScore(s string) (Score, error) {
	switch Score(s) {
	case "", Volume:
		return Volume, nil
	case Surge, Decayed:
		return Score(s), nil
	}
	return "", fmt.Errorf("%w: %q: use volume, surge or decayed", ErrUnknownScore, s)
}

// The surge defaults (docs/requirements.md, "Trending topics").
const (
	// DefaultSmoothing is c in (current + c) / (expected + c). A bigger c favours big
	// topics, a smaller one small topics.
	DefaultSmoothing = 50
	// DefaultFloor is the fewest mentions in the window a topic needs to be listed at all.
	// It removes tiny topics before any ratio is taken; the sketch's overcount (about 20
	// over 15 minutes) is small beside it.
	DefaultFloor = 300
	// DefaultEnter and DefaultStay are the hysteresis thresholds: a topic enters a list at
	// a score of 3 or more and stays until it falls below 2.
	DefaultEnter = 3
	DefaultStay  = 2
)

// SurgeConfig is the surge score's settings. Start from DefaultSurgeConfig: a zero field
// means zero.
type SurgeConfig struct {
	// Smoothing is c, a positive number (default 50). Zero is refused: a topic with no
	// history would divide by zero.
	Smoothing float64
	// Floor is the fewest mentions in the window for a topic to be scored (default 300).
	// Zero means no floor: every topic is scored. Negative is refused. At mention
	// granularity a floor of 1 is also none.
	Floor float64
	// Enter and Stay are the hysteresis thresholds (defaults 3 and 2): 0 < Stay <= Enter,
	// so zero is refused.
	Enter, Stay float64
}

// DefaultSurgeConfig returns the defaults: c = 50, floor 300, enter 3, stay 2. It is the one
// place they live.
func DefaultSurgeConfig() SurgeConfig {
	return SurgeConfig{Smoothing: DefaultSmoothing, Floor: DefaultFloor, Enter: DefaultEnter, Stay: DefaultStay}
}

// invalid is a setting error for field (internal/setting) that also wraps ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c makes sense; every error wraps ErrConfig and setting.ErrConfig
// and names the field (Smoothing, Floor, Enter, Stay).
func (c SurgeConfig) Validate() error {
	var errs []error
	if !(c.Smoothing > 0) || math.IsInf(c.Smoothing, 0) {
		errs = append(errs, invalid("Smoothing", "%v must be a positive number (default %d)", c.Smoothing, DefaultSmoothing))
	}
	if !(c.Floor >= 0) || math.IsInf(c.Floor, 0) {
		errs = append(errs, invalid("Floor", "%v must be zero (no floor) or more mentions (default %d)", c.Floor, DefaultFloor))
	}
	switch {
	case !(c.Stay > 0):
		errs = append(errs, invalid("Stay", "%v must be positive and at most enter %v (default %d)", c.Stay, c.Enter, DefaultStay))
	case !(c.Enter >= c.Stay):
		errs = append(errs, invalid("Enter", "%v must be at least stay %v (default %d)", c.Enter, c.Stay, DefaultEnter))
	}
	return errors.Join(errs...)
}

// SurgeRatio is the smoothed ratio (current + c) / (expected + c). With expected = 0 (a
// topic with no history) it is 1 + current/c, so such a topic trends only through a large
// current count: 3,000 mentions score 61, 5 mentions 1.1.
func SurgeRatio(current, expected, c float64) float64 {
	return (current + c) / (expected + c)
}

// Score returns the surge score of a topic with current mentions in the window against
// expected, and whether it passes the floor. Below the floor the topic is not scored at
// all (ok false): the floor applies before any ratio.
func (c SurgeConfig) Score(current, expected float64) (score float64, ok bool) {
	if current < c.Floor {
		return 0, false
	}
	return SurgeRatio(current, expected, c.Smoothing), true
}

// Expected is the baseline of a window of length window: the mean of the same clock hour's
// counts over the days given (7 by default: a week of the same hour), scaled from an hour
// to the window (a 15-minute window takes a quarter). Days with no data should be left out
// rather than passed as zero, or a young deployment reads every topic as surging; with no
// days at all the expected count is 0, a topic with no history.
func Expected(sameHour []float64, window time.Duration) float64 {
	if len(sameHour) == 0 {
		return 0
	}
	var sum float64
	for _, v := range sameHour {
		sum += v
	}
	return sum / float64(len(sameHour)) * window.Hours()
}

// DecayWeight is the weight of a mention age old under a half-life: 2^(-age/halfLife).
// A future age (clock skew) weighs 1.
func DecayWeight(age, halfLife time.Duration) float64 {
	if age <= 0 {
		return 1
	}
	return math.Exp2(-float64(age) / float64(halfLife))
}

// DecayedSum is the decayed count of per-minute counts: counts[i] is the count of the
// minute that ended i minutes before now (counts[0] is the newest, age 0), each weighed
// by DecayWeight of its age. It is the smooth alternative to a hard window edge: a minute
// does not fall out, it fades.
func DecayedSum(counts []float64, halfLife time.Duration) float64 {
	var s float64
	for i, v := range counts {
		if v != 0 {
			s += v * DecayWeight(time.Duration(i)*time.Minute, halfLife)
		}
	}
	return s
}

// Hysteresis is the state that keeps a list stable: a topic enters when its score reaches
// Enter and stays while it is at least Stay, so a topic hovering near one line does not
// flicker in and out. The zero value is not usable; call NewHysteresis.
type Hysteresis struct {
	enter, stay float64
	in          map[string]struct{}
}

// NewHysteresis returns an empty state with the given thresholds (stay <= enter).
func NewHysteresis(enter, stay float64) *Hysteresis {
	if !(stay <= enter) {
		panic(fmt.Sprintf("BUG: hysteresis stay %v above enter %v (Validate catches this)", stay, enter))
	}
	return &Hysteresis{enter: enter, stay: stay, in: map[string]struct{}{}}
}

// Update records the topic's new score and reports whether it is listed now.
func (h *Hysteresis) Update(topic string, score float64) bool {
	_, was := h.in[topic]
	now := score >= h.enter || (was && score >= h.stay)
	switch {
	case now && !was:
		h.in[topic] = struct{}{}
	case !now && was:
		delete(h.in, topic)
	}
	return now
}

// Listed reports whether the topic is listed now.
func (h *Hysteresis) Restore(listed []string) {
	for _, t := range listed {
		h.in[t] = struct{}{}
	}
}

// Listed reports whether topic is on the list.
func (h *Hysteresis) Listed(topic string) bool { _, ok := h.in[topic]; return ok }

// Retain drops every listed topic keep rejects: a topic no longer scored at all (it left
// the candidates or fell below the floor) is no longer listed either.
func (h *Hysteresis) Retain(keep func(topic string) bool) {
	for t := range h.in {
		if !keep(t) {
			delete(h.in, t)
		}
	}
}

// Topics returns the listed topics in no order.
func (h *Hysteresis) Topics() []string {
	out := make([]string, 0, len(h.in))
	for t := range h.in {
		out = append(out, t)
	}
	return out
}

// Len returns the number of listed topics.
func (h *Hysteresis) Len() int { return len(h.in) }
