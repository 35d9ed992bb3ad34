package window

import "errors"

// Sentinel errors callers branch on with errors.Is. Every error this package
// returns wraps exactly one of them.
var (
	// ErrConfig means a Config was rejected by Validate; the message says
	// which field to change.
	ErrConfig = errors.New("window: invalid config")

	// ErrUnknownWindow means Top was asked for a window name the Config does
	// not define.
	ErrUnknownWindow = errors.New("window: unknown window")

	// ErrCorrupt means Restore was given bytes that are not a well-formed
	// snapshot of a format version this build reads: bad magic, unknown
	// version, bad checksum, truncated, non-canonical, or state that breaks
	// the partition's invariants.
	ErrCorrupt = errors.New("window: corrupt snapshot")

	// ErrConfigMismatch means a snapshot was taken under different window or
	// sketch settings than the Config it is restored with, so its buckets do
	// not mean what the Config says. Keep the old settings, or drop the
	// snapshot and rebuild the state by replaying the log.
	ErrConfigMismatch = errors.New("window: snapshot config differs")
)
