package topics

import (
	"fmt"
	"math"
	"time"
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
	// Decayed ranks by exponentially decayed counts with a half-life (seed 004): a
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

// Seed 001's surge settings.
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

// SurgeConfig is the surge score's settings.
type SurgeConfig struct {
	// Smoothing is c. Default 50. Zero means the default; it must be positive, or a topic
	// with no history divides by zero.
	Smoothing float64
	// Floor is the fewest mentions in the window for a topic to be scored. Zero means the
	// default 300; negative is an error. A floor of 1 is, at mention granularity, none.
	Floor float64
	// Enter and Stay are the hysteresis thresholds. Defaults 3 and 2; Stay <= Enter.
	Enter, Stay float64
}

// DefaultSurgeConfig returns seed 001's settings: c = 50, floor 300, enter 3, stay 2.
func DefaultSurgeConfig() SurgeConfig {
	return SurgeConfig{Smoothing: DefaultSmoothing, Floor: DefaultFloor, Enter: DefaultEnter, Stay: DefaultStay}
}

// WithDefaults fills zero fields with DefaultSurgeConfig's.
func (c SurgeConfig) WithDefaults() SurgeConfig {
	d := DefaultSurgeConfig()
	if c.Smoothing == 0 {
		c.Smoothing = d.Smoothing
	}
	if c.Floor == 0 {
		c.Floor = d.Floor
	}
	if c.Enter == 0 {
		c.Enter = d.Enter
	}
	if c.Stay == 0 {
		c.Stay = d.Stay
	}
	return c
}

// Validate reports whether c (after defaults) makes sense; the error wraps ErrConfig.
func (c SurgeConfig) Validate() error {
	c = c.WithDefaults()
	switch {
	case !(c.Smoothing > 0) || math.IsInf(c.Smoothing, 0):
		return fmt.Errorf("%w: surge smoothing %v must be a positive number (default %d)", ErrConfig, c.Smoothing, DefaultSmoothing)
	case !(c.Floor >= 0) || math.IsInf(c.Floor, 0):
		return fmt.Errorf("%w: surge floor %v must be zero or more mentions (default %d)", ErrConfig, c.Floor, DefaultFloor)
	case !(c.Stay > 0) || !(c.Enter >= c.Stay):
		return fmt.Errorf("%w: hysteresis enter %v and stay %v: need 0 < stay <= enter (defaults %d and %d)",
			ErrConfig, c.Enter, c.Stay, DefaultEnter, DefaultStay)
	}
	return nil
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
	c = c.WithDefaults()
	if current < c.Floor {
		return 0, false
	}
	return SurgeRatio(current, expected, c.Smoothing), true
}

// Expected is the baseline of a window of length window: the mean of the same clock hour's
// counts over the days given (seed 001: 7), scaled from an hour to the window (a
// 15-minute window takes a quarter). Days with no data should be left out rather than
// passed as zero, or a young deployment reads every topic as surging; with no days at all
// the expected count is 0, a topic with no history.
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
