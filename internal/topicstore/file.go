package topicstore

import (
	"trending/model/topicrules"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ReadReviewFile reads a local review queue file (the queue's JSON encoding, as
// WriteReviewFile writes it): the offline alternative to the shared queue in the bucket
// (ReviewKey). A missing file is an error that wraps os.ErrNotExist.
func ReadReviewFile(path string) (*topicrules.Review, error) {
	r := topicrules.NewReview(0)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read review queue: %w", err)
	}
	if err := r.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("read review queue %s: %w", path, err)
	}
	return r, nil
}

// WriteReviewFile writes r to path as indented JSON and replaces the file atomically: a
// temporary file in the same directory, synced, then renamed over the old one, so a reader
// sees the old queue or the new one, never a part.
func WriteReviewFile(path string, r *topicrules.Review) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode review queue: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".review-*.json")
	if err != nil {
		return fmt.Errorf("write review queue: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write review queue %s: %w", path, err)
	}
	return nil
}
