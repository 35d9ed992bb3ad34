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

// WithDefaults fills zero fields with the defaults.
func (c WeightConfig) WithDefaults() WeightConfig {
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
	c = c.WithDefaults()
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
	return age < c.WithDefaults().NewAccountAge
}

// Tenths is what one mention weighs: 3 tenths from a new account, 10 from an established
// one. Counting in tenths keeps the sums exact integers in the sketches.
func Tenths(newAccount bool) uint64 {
	if newAccount {
		return NewTenths
	}
	return EstablishedTenths
}
