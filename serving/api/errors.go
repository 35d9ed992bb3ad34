package api

import "errors"

var (
	// ErrNotLoaded: the cache has not loaded the store even once, so there is nothing to serve
	// yet (503 with the store's error).
	ErrNotLoaded = errors.New("serving cache not loaded yet")
	// ErrStoreDown: the store has been unreachable for longer than the stale grace; the API
	// still serves the last lists it loaded.
	ErrStoreDown = errors.New("serving store unreachable")
)
