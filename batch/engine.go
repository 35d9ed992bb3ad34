package batch

import (
	"context"
	"time"

	"trending/archive"
	"trending/internal/objstore"
	"trending/model/windowset"

	"trending/model/topk"
)

// Archive is the archive as the batch layer reads it; *archive.Reader implements it.
type Archive interface {
	// ListHour returns the hour's Parquet objects.
	ListHour(ctx context.Context, hour time.Time) ([]objstore.Object, error)
	// Fingerprint identifies the hour's contents; it changes when late data lands.
	Fingerprint(ctx context.Context, hour time.Time) (string, error)
	// Incomplete says why the hour is not closed in the archive yet (some partition of the
	// topic has not archived past its end plus allowedLateness, or has no progress at all),
	// or "" when it is.
	Incomplete(ctx context.Context, hour time.Time, allowedLateness time.Duration) (string, error)
	// Dirty lists the late-data markers: hours that received events after the archive's
	// progress had passed them. ClearDirty deletes markers once their hours are recomputed.
	Dirty(ctx context.Context) ([]archive.Dirty, error)
	ClearDirty(ctx context.Context, keys []string) error
	// ReadHour calls fn for every event of the hour, deduplicated by (partition, offset).
	ReadHour(ctx context.Context, hour time.Time, fn func(archive.Row) error) error
}

// Built names one rollup to build and the fingerprint of its inputs, recorded with it.
type Built struct {
	Start       time.Time
	Fingerprint string
	// Through is where the rollup's inputs end: the window's end, or earlier for the month
	// to date.
	Through time.Time
	// Groups are the group values whose own rows an hour rollup keeps beside every item's
	// (BuildHours: the events of a value Groups.Accepts also count under it); a day or month
	// rollup sums whatever rows the level below holds. The zero value keeps none.
	Groups windowset.Groups
	// Cap, when positive, is the per-account cap of an hour rollup (BuildHours): an event's
	// account (its user_id) adds at most Cap views to an item in the hour, of every item's
	// rows and of each group value's (docs/moderation.md#per-account-caps): the views are
	// sum(least(views of the (item, account), Cap)), an event without an account uncapped.
	// 0: no cap.
	Cap uint32
}

// GroupViews is one group value of a rollup and its views.
type GroupViews struct {
	Group string
	Views uint64
}

// Meta is what an engine recorded about one rollup.
type Meta struct {
	Fingerprint string
	Version     int64     // build time, Unix milliseconds
	Through     time.Time // inputs end here (exclusive)
	InputRows   uint64    // hour: events loaded after dedup; above: rows summed
	Items       uint64    // distinct items (of all items: a group value's rows are not counted)
	Views       uint64    // total views (likewise)
}

// Engine computes exact rollups and answers top-K from them. The unit of atomic
// replacement is one call: a reader of the engine sees the rollups before the call or
// after it, never a mix. Implementations are safe for concurrent use by calls on different
// days (BuildHours), months (BuildDays) and years (BuildMonths).
type Engine interface {
	// BuildHours replaces the rollups of the given hours, all in the UTC day day, with exact
	// counts read from src (deduplicated by partition and offset), recording each
	// Fingerprint. Other hours of the day keep their rollups.
	BuildHours(ctx context.Context, src Archive, day time.Time, hours []Built) ([]Meta, error)
	// BuildDays replaces the given days' rollups, all in one UTC month, with the sum of
	// their hour rollups.
	BuildDays(ctx context.Context, month time.Time, days []Built) error
	// BuildMonths replaces the given months' rollups, all in one UTC year, with the sum of
	// their day rollups from each month's start up to its Through.
	BuildMonths(ctx context.Context, year time.Time, months []Built) error
	// Meta returns what was recorded for a rollup, or ErrNoRollup.
	Meta(ctx context.Context, level string, start time.Time) (Meta, error)
	// TopK returns the k items with the most views in a rollup (level All: summed over
	// every month), by views descending then item id ascending, and the rollup's total
	// views and distinct items: of every event with group "", of one group value's events
	// (a value the rollup keeps rows of) otherwise.
	TopK(ctx context.Context, level string, start time.Time, group string, k int) (top []topk.Entry, views, items uint64, err error)
	// Counts returns the exact views of the given items in a rollup (0 when absent), of
	// every event or of one group value's, as TopK.
	Counts(ctx context.Context, level string, start time.Time, group string, items []string) (map[string]uint64, error)
	// Groups returns the group values a rollup keeps rows of, with their views, by views
	// descending then value ascending.
	Groups(ctx context.Context, level string, start time.Time) ([]GroupViews, error)
	// Months lists the starts of every month rollup, ascending: what All sums.
	Months(ctx context.Context) ([]time.Time, error)
	Close() error
}
