package store

import (
	"errors"

	"trending/model"
)

var (
	// ErrNotFound: nobody computed the requested list.
	ErrNotFound = model.ErrNotFound
	// ErrStaleVersion: the store holds a newer version of the list (seed 000 step 10: a
	// merger that paused and woke late must not overwrite a fresh list with an old one).
	ErrStaleVersion = errors.New("stale version")
	// ErrSuperseded: a speed-layer (approximate) list was offered for a calendar window that
	// already has the batch layer's exact list.
	ErrSuperseded = errors.New("window already exact")
	// ErrInvalid: the list itself is malformed (a bug in the writer): model.ErrInvalid.
	ErrInvalid = model.ErrInvalid
)
