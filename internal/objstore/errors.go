package objstore

import "errors"

var (
	// ErrNotFound: the key (or bucket) does not exist.
	ErrNotFound = errors.New("object not found")
	// ErrExists: a conditional create (PutIfAbsent) found the key already there.
	ErrExists = errors.New("object already exists")
	// ErrChanged: a conditional replace (PutIfMatch) found the object changed since it was
	// read; read it again and retry.
	ErrChanged = errors.New("object changed since it was read")
)
