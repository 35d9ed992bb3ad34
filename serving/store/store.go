// Package store is the serving store: the finished, precomputed top-K lists that the serving
// API reads, one key per window. The speed layer's merger and the batch layer write it; the
// API only reads it (through its cache).
//
// Every implementation keeps the same rules (Admit):
//   - versions only move forward: a write older than the stored list is refused
//     (ErrStaleVersion), so a paused or standby merger cannot regress a list;
//   - an exact list from the batch layer is never replaced by the speed layer's approximate
//     one for the same calendar window (ErrSuperseded);
//   - every list says what it is (model.Status): live, provisional or exact, and only an exact
//     list claims exact counts;
//   - a reader sees a whole list or the previous one, never a mix.
//
// Two implementations: Bolt (a single file, the embedded default) and ClickHouse (production).
package store

import (
	"context"
	"fmt"
	"time"

	"trending/model"
)

// Admit decides whether next may replace cur (nil when the key is empty). Both
// implementations call it inside their atomic update, so the rules live in one place.
func Admit(cur *model.List, next model.List) error {
	if err := next.Validate(); err != nil {
		return err
	}
	if cur == nil {
		return nil
	}
	if !next.Start.IsZero() && cur.Source == model.SourceBatch && next.Source == model.SourceSpeed {
		return fmt.Errorf("%s: %w (batch version %d)", next.Key(), ErrSuperseded, cur.Version)
	}
	if !next.Start.IsZero() && next.Source == model.SourceBatch && cur.Source == model.SourceSpeed {
		return nil // a calendar window's exact list always supersedes the approximate one
	}
	// Live lists (including the batch's all-time list) are ordered by version alone: the
	// newest as-of wins, exact or not.
	if next.Version < cur.Version {
		return fmt.Errorf("%s: version %d older than stored %d: %w", next.Key(), next.Version, cur.Version, ErrStaleVersion)
	}
	return nil
}

// Store holds the served lists. Implementations are safe for concurrent use.
type Store interface {
	// Put writes a list if Admit allows it, atomically.
	Put(ctx context.Context, l model.List) error
	// Get returns the list under key, or ErrNotFound.
	Get(ctx context.Context, k model.Key) (model.List, error)
	// Range returns the calendar lists of one list name (model.Key.Name: "hour", or
	// "topics/eu/surge") whose start is in [from, to), in start order.
	Range(ctx context.Context, window string, from, to time.Time) ([]model.List, error)
	// Since returns every live list and every calendar list whose start is at or after
	// since: what the serving cache loads.
	Since(ctx context.Context, since time.Time) ([]model.List, error)
	Close() error
}
