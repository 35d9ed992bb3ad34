package topicrules

import "errors"

// Sentinel errors callers branch on with errors.Is. Every error this package returns wraps
// exactly one of them.
var (
	// ErrConfig means a Config was rejected by Validate; the message says which field to
	// change.
	ErrConfig = errors.New("topics: invalid config")

	// ErrUnknownRegion means a list was asked for a region that is not configured. The API
	// maps it to 400.
	ErrUnknownRegion = errors.New("topics: unknown region")

	// ErrUnknownScore means a score name is not volume, surge or decayed.
	ErrUnknownScore = errors.New("topics: unknown score")

	// ErrNotHeld means Approve or Reject named a topic that is not in the review queue.
	ErrNotHeld = errors.New("topics: topic is not held for review")

	// ErrCorrupt means a snapshot or a review queue's bytes are not a well-formed encoding
	// this build reads: bad magic, unknown version, bad checksum or truncated.
	ErrCorrupt = errors.New("topics: corrupt snapshot")

	// ErrConfigMismatch means a snapshot was taken under different regions or sketch
	// shapes than the Config it is restored with. Keep the old settings, or drop the
	// snapshot and rebuild by replaying the log.
	ErrConfigMismatch = errors.New("topics: snapshot config differs")
)
