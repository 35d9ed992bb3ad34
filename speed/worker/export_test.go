package worker

import (
	"context"
	"time"
)

// HourStore is hourStore for the external tests.
type HourStore interface {
	Put(ctx context.Context, topic string, partition int, hour int64, body []byte) error
	Get(ctx context.Context, topic string, partition int, hour int64) ([]byte, error)
	Prune(ctx context.Context, topic string, partition int, before int64) (int, error)
}

// SetHourStore makes w keep its hourly topic sketches in s, retrying a failed load after
// retry: a test's store that can be down.
func SetHourStore(w *Worker, s HourStore, retry time.Duration) { w.hours, w.hourRetry = s, retry }
