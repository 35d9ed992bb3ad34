package sketch

import "errors"

// Sentinel errors callers branch on with errors.Is. Every error returned by
// this package wraps exactly one of them.
var (
	// ErrIncompatible means two sketches cannot be combined cell by cell:
	// their Width, Depth or Seed differ (or one of them is nil), so cell
	// (i, j) does not count the same set of keys in both.
	ErrIncompatible = errors.New("sketch: incompatible sketches")

	// ErrUnderflow means Subtract would drive a counter or the total below
	// zero: the subtracted sketch was never merged into the receiver (a
	// wrong bucket, or one subtracted twice). The receiver is unchanged.
	ErrUnderflow = errors.New("sketch: subtraction underflow")

	// ErrOverflow means Merge would push the total past 2^64-1. The
	// receiver is unchanged.
	ErrOverflow = errors.New("sketch: counter overflow")

	// ErrConservativeSubtract means Subtract was called with a sketch that
	// uses conservative update on either side. Conservative cells are not
	// the sum of their buckets, so subtracting a bucket can push an
	// estimate below the truth. Sliding windows must use standard update
	// for every sketch that takes part in a Subtract.
	ErrConservativeSubtract = errors.New("sketch: subtract on a conservative-update sketch")

	// ErrCorrupt means UnmarshalBinary was given bytes that are not a
	// well-formed sketch of a format version this build reads (bad magic,
	// unknown version or flags, impossible shape, bad checksum, truncated or
	// non-canonical counters). The receiver is unchanged.
	ErrCorrupt = errors.New("sketch: corrupt encoding")

	// ErrConfig means a Config was rejected by Validate; the message says
	// which field to change.
	ErrConfig = errors.New("sketch: invalid config")
)
