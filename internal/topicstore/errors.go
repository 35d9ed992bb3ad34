package topicstore

import "errors"

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrReviewContended means SyncReview lost the race for the shared queue object too many
	// times in a row; the next sync retries.
	ErrReviewContended = errors.New("topicstore: shared review queue contended")
)
