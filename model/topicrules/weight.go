package topicrules

import (
	"errors"
	"time"
)

// Weight defaults: a new account counts 3 tenths of a mention, an established one 10, so a
// crowd of throwaway accounts moves a list far less than real users.
const (
	// NewTenths and EstablishedTenths are what one mention counts, in tenths.
	NewTenths         = 3
	EstablishedTenths = 10
	// DefaultNewAccountAge is the age below which an account is new. The design does not
	// fix it; 30 days is the usual line for a throwaway account.
	DefaultNewAccountAge = 30 * 24 * time.Hour
	// DefaultReviewShare is the share of a listed topic's weight from new accounts above
	// which its score is cut and it goes to review.
	DefaultReviewShare = 0.6
	// DefaultReviewCut multiplies the score of such a topic: cut sharply, to a tenth.
	DefaultReviewCut = 0.1
)

// WeightConfig is the account-age weighting. Start from DefaultWeightConfig: a zero field
// means zero.
type WeightConfig struct {
	// NewAccountAge: an account younger than this is new (default 30 days). Zero means no
	// account is new: every mention weighs as an established one's. Negative is refused.
	NewAccountAge time.Duration
	// ReviewShare is the new-account share of weight that sends a topic to review, in
	// (0, 1] (default 0.6); zero is refused.
	ReviewShare float64
	// ReviewCut multiplies a reviewed topic's score, in (0, 1) (default 0.1); zero is
	// refused: to drop such topics almost entirely use a tiny positive value.
	ReviewCut float64
}

// DefaultWeightConfig returns the defaults: new below 30 days, review over a 0.6 share, cut
// to a tenth. It is the one place they live.
func DefaultWeightConfig() WeightConfig {
	return WeightConfig{NewAccountAge: DefaultNewAccountAge, ReviewShare: DefaultReviewShare, ReviewCut: DefaultReviewCut}
}

// Validate reports whether c makes sense; every error wraps ErrConfig and setting.ErrConfig
// and names the field (NewAccountAge, ReviewShare, ReviewCut).
func (c WeightConfig) Validate() error {
	var errs []error
	if c.NewAccountAge < 0 {
		errs = append(errs, invalid("NewAccountAge", "%v must not be negative: 0 makes no account new (default 30 days)", c.NewAccountAge))
	}
	if !(c.ReviewShare > 0 && c.ReviewShare <= 1) {
		errs = append(errs, invalid("ReviewShare", "%v must be in (0, 1] (default %v)", c.ReviewShare, DefaultReviewShare))
	}
	if !(c.ReviewCut > 0 && c.ReviewCut < 1) {
		errs = append(errs, invalid("ReviewCut", "%v must be in (0, 1) (default %v)", c.ReviewCut, DefaultReviewCut))
	}
	return errors.Join(errs...)
}

// IsNew reports whether an account of the given age is new. The event decoder turns the
// account-age hint into Mention.NewAccount with it.
func (c WeightConfig) IsNew(age time.Duration) bool {
	return age < c.NewAccountAge
}

// Tenths is what one mention weighs: 3 tenths from a new account, 10 from an established
// one. Counting in tenths keeps the sums exact integers in the sketches.
func Tenths(newAccount bool) uint64 {
	if newAccount {
		return NewTenths
	}
	return EstablishedTenths
}
