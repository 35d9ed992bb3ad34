package topics

import (
	"fmt"
	"time"
)

// Weight defaults (seed 001).
const (
	// NewTenths and EstablishedTenths are what one mention counts, in tenths.
	NewTenths         = 3
	EstablishedTenths = 10
	// DefaultNewAccountAge is the age below which an account is new. The seed does not
	// fix it; 30 days is the usual line for a throwaway account.
	DefaultNewAccountAge = 30 * 24 * time.Hour
	// DefaultReviewShare is the share of a listed topic's weight from new accounts above
	// which its score is cut and it goes to review.
	DefaultReviewShare = 0.6
	// DefaultReviewCut multiplies the score of such a topic: cut sharply, to a tenth.
	DefaultReviewCut = 0.1
)

// WeightConfig is the account-age weighting.
type WeightConfig struct {
	// NewAccountAge: an account younger than this is new. Zero means 30 days.
	NewAccountAge time.Duration
	// ReviewShare is the new-account share of weight that sends a topic to review,
	// in (0, 1]. Zero means 0.6.
	ReviewShare float64
	// ReviewCut multiplies a reviewed topic's score, in [0, 1). Zero means 0.1; to drop
	// such topics entirely use a tiny positive value.
	ReviewCut float64
}

func (c WeightConfig) withDefaults() WeightConfig {
	if c.NewAccountAge == 0 {
		c.NewAccountAge = DefaultNewAccountAge
	}
	if c.ReviewShare == 0 {
		c.ReviewShare = DefaultReviewShare
	}
	if c.ReviewCut == 0 {
		c.ReviewCut = DefaultReviewCut
	}
	return c
}

// Validate reports whether c (after defaults) makes sense; the error wraps ErrConfig.
func (c WeightConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.NewAccountAge < 0:
		return fmt.Errorf("%w: new-account age %v must be positive (default 30 days)", ErrConfig, c.NewAccountAge)
	case !(c.ReviewShare > 0 && c.ReviewShare <= 1):
		return fmt.Errorf("%w: review share %v must be in (0, 1] (default 0.6)", ErrConfig, c.ReviewShare)
	case !(c.ReviewCut > 0 && c.ReviewCut < 1):
		return fmt.Errorf("%w: review cut %v must be in (0, 1) (default 0.1)", ErrConfig, c.ReviewCut)
	}
	return nil
}

// IsNew reports whether an account of the given age is new. The event decoder turns the
// account-age hint into Mention.NewAccount with it.
func (c WeightConfig) IsNew(age time.Duration) bool {
	return age < c.withDefaults().NewAccountAge
}

// Tenths is what one mention weighs: 3 tenths from a new account, 10 from an established
// one. Counting in tenths keeps the sums exact integers in the sketches.
func Tenths(newAccount bool) uint64 {
	if newAccount {
		return NewTenths
	}
	return EstablishedTenths
}

// Share tracks, for one candidate topic, the weight from new accounts and the total over
// the last Minutes minutes, in a ring of per-minute sums: its memory is fixed (24 bytes a
// minute) and a minute falls out exactly when it leaves the window. The zero value is not
// usable; call NewShare.
type Share struct {
	minute []int64 // the Unix minute each slot holds, or -1
	newW   []uint64
	total  []uint64
}

// NewShare returns an empty tracker over a window of the given minutes (>= 1).
func NewShare(minutes int) *Share {
	if minutes < 1 {
		panic(fmt.Sprintf("BUG: share window of %d minutes", minutes))
	}
	s := &Share{minute: make([]int64, minutes), newW: make([]uint64, minutes), total: make([]uint64, minutes)}
	for i := range s.minute {
		s.minute[i] = -1
	}
	return s
}

// Add records tenths of weight at minute, from a new account or not. A minute older than
// the ring holds is ignored.
func (s *Share) Add(minute int64, tenths uint64, newAccount bool) {
	n := int64(len(s.minute))
	i := minute % n
	if i < 0 {
		i += n
	}
	switch {
	case s.minute[i] == minute:
	case s.minute[i] < minute:
		s.minute[i], s.newW[i], s.total[i] = minute, 0, 0
	default:
		return // older than the slot's minute: out of the window
	}
	s.total[i] += tenths
	if newAccount {
		s.newW[i] += tenths
	}
}

// Value returns the new-account share of the weight in the window ending at minute now
// (inclusive), and the total weight in tenths. The share of an empty window is 0.
func (s *Share) Value(now int64) (share float64, total uint64) {
	var nw uint64
	n := int64(len(s.minute))
	for i, m := range s.minute {
		if m >= 0 && m <= now && m > now-n {
			nw += s.newW[i]
			total += s.total[i]
		}
	}
	if total == 0 {
		return 0, 0
	}
	return float64(nw) / float64(total), total
}
