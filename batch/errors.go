package batch

import "errors"

var (
	// ErrWindowOpen: the window has not closed yet (its end plus the allowed lateness is in
	// the future) or the archive does not hold all of it yet. --force overrides.
	ErrWindowOpen = errors.New("window still open")
	// ErrNoRollup: the engine never built the requested rollup.
	ErrNoRollup = errors.New("no rollup")
	// ErrBadRange: a window range that selects nothing or runs backwards.
	ErrBadRange = errors.New("bad window range")
)
