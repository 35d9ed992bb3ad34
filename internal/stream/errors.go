package stream

import "errors"

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrConfig means a Config, RunConfig or viral schedule was rejected; the
	// message says what to change.
	ErrConfig = errors.New("invalid stream config")

	// ErrTruthFormat means a truth file is not well-formed (docs/accuracy.md
	// describes the format): bad JSON, a minute that is not a whole UTC
	// minute, a minute twice or out of order, an empty item or a zero count.
	ErrTruthFormat = errors.New("malformed truth file")
)
