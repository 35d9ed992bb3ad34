package objstore

import "errors"

var (
	// ErrNotFound: the key (or bucket) does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrExists: a conditional create (PutIfAbsent) found the key already there.
	ErrExists = errors.New("object already exists")
)
