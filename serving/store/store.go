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
// Both are also Versioners, so a reader can poll often without loading bodies, and Bolt is a
// Notifier, so a reader in the same process learns of a write at once.
//
// In detail (DESIGN.md's file map has the line): the serving table's contract for its two
// writers (the merger and the batch) and the API: `titles.go`: `WithTitles`, the writers'
// store, which attaches every list's item metadata before its write (below, "One source of
// titles"); the version and source rules (`Admit`, `Rank`), a conformance suite both
// backends pass; the backends live apart, `serving/store/bolt` (embedded, bbolt) and
// `serving/store/clickhouse` (`ParseDSN`, `Options`), so an importer of the contract links
// no driver it does not use (`go list -deps ./speed/merge` holds neither;
// `TestContractLinksNoDriver`), and only the command that opens a store picks one
// (`cmd/trending/storeopen.go`); both report each key's `Stamp` without its body
// (`Versioner`: bbolt from memory, ClickHouse from the key columns), and bbolt tells
// readers in its process of each stored write (`Notifier`: a channel closed by the next
// write)
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

// Rank is the order reads serve the versions of one key in: the version, lifted above every
// speed version for the batch's exact list of a calendar window (which Admit lets supersede
// the approximate one whatever its version).
func Rank(l model.List) uint64 {
	r := uint64(l.Version)
	if l.Source == model.SourceBatch && !l.Start.IsZero() {
		r += BatchPriority
	}
	return r
}

// BatchPriority lifts an exact list of a calendar window above every speed version; a
// version must stay below it.
const BatchPriority = uint64(1) << 62

// Stamp identifies the stored list of one key without its body: it changes whenever a write
// that reads would return is stored, so a reader that remembers the stamps it last saw loads
// only the lists whose stamp moved.
type Stamp struct {
	Key  model.Key
	Rank uint64 // Rank of the list a Get returns now
	// Seq tells apart two writes of the same Rank (an idempotent rewrite, or a second writer
	// of the same version): ClickHouse's row sequence; bbolt's count of this process's writes.
	Seq uint64
}

// Versioner is a store that reports the stamps of the lists it holds, cheaply: no list body is
// read. Versions covers what Since covers: every live list and every calendar list whose start
// is at or after since, in no particular order. Safe for concurrent use.
type Versioner interface {
	Versions(ctx context.Context, since time.Time) ([]Stamp, error)
}

// Notifier is a store that tells readers in the same process that a write was stored, so
// they need not poll. Changed returns a channel that is closed by the next successful Put
// (every caller of one generation gets the same channel): a reader takes the channel before
// it reads the store, so no write after its read can go unnoticed, and however many writes
// happen before it looks again it wakes once. Nothing is buffered per reader. Safe for
// concurrent use.
type Notifier interface {
	Changed() <-chan struct{}
}
