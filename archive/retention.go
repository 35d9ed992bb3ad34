package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"trending/internal/objstore"
)

// Retention is how long the archive keeps raw events: the lifecycle rules ApplyRetention
// put on the bucket, recorded beside the archive (views/_retention.json) so the batch can
// tell an expired hour from an empty one.
type Retention struct {
	// Days after which the object store deletes an archived Parquet file and a quarantine
	// file (seed 004: about a year).
	Days int `json:"days"`
	// Applied is when the rules were put on the bucket.
	Applied time.Time `json:"applied"`
}

// MinRetentionDays is the shortest retention ApplyRetention takes: a month and the batch's
// nightly lookback (35 days) stay recomputable.
const MinRetentionDays = 40

// retentionKey is where the retention is recorded.
func (l layout) retentionKey() string { return l.viewsPrefix() + "_retention.json" }

// expiryRules are the lifecycle rules of a retention of days: the Parquet files (under
// views/dt=, not the progress markers, the manifest or the late-data marks beside them,
// which live as long as the archive does) and the quarantine.
func (l layout) expiryRules(days int) []objstore.Expiry {
	return []objstore.Expiry{
		{ID: "trending-archive-events", Prefix: l.viewsPrefix() + "dt=", Days: days},
		{ID: "trending-archive-quarantine", Prefix: l.root + "/quarantine/", Days: days},
	}
}

// ApplyRetention puts the lifecycle rules that delete the archive's raw events days after
// they were written on the bucket (S3 and MinIO apply them daily), and records the retention.
// Checkpoints are not covered: the speed workers prune their own (KeepCheckpoints), and a
// quiet partition's newest checkpoint must outlive any age.
func ApplyRetention(ctx context.Context, store *objstore.Client, root string, days int, now time.Time) (Retention, error) {
	if days < MinRetentionDays {
		return Retention{}, fmt.Errorf("%w: %d days: at least %d, so a month and the nightly lookback stay recomputable", ErrBadRetention, days, MinRetentionDays)
	}
	lay := layout{root: root}
	if err := store.SetExpiry(ctx, lay.expiryRules(days)...); err != nil {
		return Retention{}, err
	}
	r := Retention{Days: days, Applied: now.UTC()}
	b, _ := json.Marshal(r)
	if _, err := store.Put(ctx, lay.retentionKey(), b); err != nil {
		return Retention{}, fmt.Errorf("record the retention: %w", err)
	}
	return r, nil
}

// ErrBadRetention is a retention ApplyRetention refuses.
var ErrBadRetention = errors.New("bad retention")

// Retention returns the archive's recorded retention; ok is false when none was applied
// (the archive keeps everything).
func (r *Reader) Retention(ctx context.Context) (ret Retention, ok bool, err error) {
	b, err := r.store.Get(ctx, r.lay.retentionKey())
	if errors.Is(err, objstore.ErrNotFound) {
		return Retention{}, false, nil
	}
	if err != nil {
		return Retention{}, false, fmt.Errorf("read the archive's retention: %w", err)
	}
	if err := json.Unmarshal(b, &ret); err != nil {
		return Retention{}, false, fmt.Errorf("%w: %s: %v", ErrBadObject, r.lay.retentionKey(), err)
	}
	return ret, true, nil
}

// Expired says why the archive no longer holds the hour's events ("" when it may): the hour
// ended longer ago than the retention, so its files were (or are about to be) deleted by the
// bucket's lifecycle rules. A day of margin covers the store's daily sweep.
func (r *Reader) Expired(ctx context.Context, hour time.Time, now time.Time) (string, error) {
	ret, ok, err := r.Retention(ctx)
	if err != nil || !ok {
		return "", err
	}
	horizon := now.UTC().AddDate(0, 0, -(ret.Days - 1))
	if hour.Add(time.Hour).After(horizon) {
		return "", nil
	}
	return fmt.Sprintf("the archive keeps raw events %d days (trending archive retention, applied %s): the events of %s are expired or about to be",
		ret.Days, ret.Applied.Format(time.DateOnly), hour.UTC().Format("2006-01-02T15Z")), nil
}
