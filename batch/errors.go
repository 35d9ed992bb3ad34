package batch

import "errors"

var (
	// ErrWindowOpen: the window has not closed yet (its end plus the allowed lateness is in
	// the future) or the archive does not hold all of it yet. --force overrides.
	ErrWindowOpen = errors.New("window still open")
	// ErrWindowExpired: the archive's retention has deleted (or is about to delete) the
	// window's raw events, so it cannot be recomputed; its published list stays. --force
	// does not override it.
	ErrWindowExpired = errors.New("window past the archive's retention")
	// ErrNoRollup: the engine never built the requested rollup.
	ErrNoRollup = errors.New("no rollup")
	// ErrBadRange: a window range that selects nothing or runs backwards.
	ErrBadRange = errors.New("bad window range")
)
