package frequent

import "errors"

// Sentinel errors callers branch on with errors.Is. Every error returned by
// this package wraps exactly one of them.
var (
	// ErrIncompatible means two summaries cannot be merged: their capacities
	// differ (or one is nil). A merge of summaries of different capacities
	// would still hold its bound, but of the smaller capacity, which a
	// window that states the larger one must not silently serve.
	ErrIncompatible = errors.New("frequent: incompatible summaries")

	// ErrOverflow means Add or Merge would push the total past 2^64-1. The
	// receiver is unchanged.
	ErrOverflow = errors.New("frequent: counter overflow")

	// ErrCorrupt means UnmarshalBinary was given bytes that are not a
	// well-formed summary of a format version this build reads. The
	// receiver is unchanged.
	ErrCorrupt = errors.New("frequent: corrupt encoding")

	// ErrConfig means a Config was rejected by Validate; the message says
	// which field to change.
	ErrConfig = errors.New("frequent: invalid config")
)
