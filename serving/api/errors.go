package api

import "errors"

var (
	// ErrNotLoaded: the cache has not loaded the store even once, so there is nothing to serve
	// yet (503 with the store's error).
	ErrNotLoaded = errors.New("serving cache not loaded yet")
	// ErrStoreDown: the store is unreachable and the newest lists loaded are older than
	// ServeStaleFor; the API still serves them.
	ErrStoreDown = errors.New("serving store unreachable")
)
