package archive

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/internal/objstore"
)

// TestRetentionOnMinIO: the lifecycle rules reach MinIO (read back as they were put, any
// other rule of the bucket kept), the retention is recorded beside the archive, and the
// reader then calls an hour past it expired, and one within it not.
func TestRetentionOnMinIO(t *testing.T) {
	_, _, st := minioBucket(t)
	ctx := context.Background()
	if err := st.SetExpiry(ctx, objstore.Expiry{ID: "someone-elses", Prefix: "tmp/", Days: 3}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 17, 0, 0, 0, time.UTC)
	if _, err := ApplyRetention(ctx, st, DefaultRoot, 39, now); !errors.Is(err, ErrBadRetention) {
		t.Errorf("39 days: %v, want ErrBadRetention", err)
	}
	if _, err := ApplyRetention(ctx, st, DefaultRoot, 365, now); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyRetention(ctx, st, DefaultRoot, 400, now); err != nil { // replaces its own rules
		t.Fatal(err)
	}
	rules, err := st.Expiries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rules, func(a, b objstore.Expiry) int { return strings.Compare(a.ID, b.ID) })
	want := []objstore.Expiry{{ID: "someone-elses", Prefix: "tmp/", Days: 3}, {ID: "trending-archive-events", Prefix: "archive/views/dt=", Days: 400},
		{ID: "trending-archive-quarantine", Prefix: "archive/quarantine/", Days: 400}}
	if !slices.Equal(rules, want) {
		t.Errorf("rules %+v, want %+v", rules, want)
	}
	r := NewReader(st)
	ret, ok, err := r.Retention(ctx)
	if err != nil || !ok || ret.Days != 400 {
		t.Fatalf("recorded retention %+v %v %v", ret, ok, err)
	}
	old := now.AddDate(0, 0, -400).Truncate(time.Hour)
	if why, err := r.Expired(ctx, old, now); err != nil || !strings.Contains(why, "keeps raw events 400 days") {
		t.Errorf("an hour 400 days old: %q %v, want expired", why, err)
	}
	if why, err := r.Expired(ctx, now.AddDate(0, 0, -390), now); err != nil || why != "" {
		t.Errorf("an hour 390 days old: %q %v, want kept", why, err)
	}
}

// TestRetentionEmbedded: the embedded S3 keeps no lifecycle rules, and says so; an archive
// without a recorded retention expires nothing.
func TestRetentionEmbedded(t *testing.T) {
	st := embeddedStore(t)
	ctx := context.Background()
	if _, err := ApplyRetention(ctx, st, DefaultRoot, 365, time.Now()); !errors.Is(err, objstore.ErrNoLifecycle) {
		t.Errorf("embedded: %v, want ErrNoLifecycle", err)
	}
	if why, err := NewReader(st).Expired(ctx, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()); why != "" || err != nil {
		t.Errorf("no retention: %q %v, want nothing expired", why, err)
	}
}
