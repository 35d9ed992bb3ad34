package bolt_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	"trending/serving/store/storetest"
)

func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestAlign(t *testing.T) {
	ts := time.Date(2026, 11, 14, 10, 5, 12, 0, time.UTC)
	for _, c := range []struct {
		w    string
		want time.Time
		next time.Time
	}{
		{"hour", time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC), time.Date(2026, 11, 14, 11, 0, 0, 0, time.UTC)},
		{"day", time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got := model.Period(c.w).Align(ts); !got.Equal(c.want) {
			t.Errorf("Align(%s) = %v, want %v", c.w, got, c.want)
		}
		if got := model.Period(c.w).Next(c.want); !got.Equal(c.next) {
			t.Errorf("Next(%s) = %v, want %v", c.w, got, c.next)
		}
		if model.Period(c.w).Aligned(ts) || !model.Period(c.w).Aligned(c.want) {
			t.Errorf("Aligned(%s) wrong", c.w)
		}
	}
}

// TestBoltStampsReopen: a reopened file reports the stamps of the lists it holds (read from the
// file at open), and the first write after it moves only its own key's stamp.
func TestBoltStampsReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serving.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	exact := storetest.MakeList("hour", storetest.T0, 7, model.SourceBatch, 2, 5)
	for _, l := range []model.List{storetest.MakeList("hour", time.Time{}, 3, model.SourceSpeed, 2, 3), exact} {
		if err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if s, err = boltstore.Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Versions(ctx, storetest.T0)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b store.Stamp) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	want := []store.Stamp{{Key: exact.Key(), Rank: 7 + 1<<62}, {Key: model.Key{Window: "hour"}, Rank: 3}}
	if !slices.Equal(got, want) {
		t.Fatalf("stamps after reopen: %+v, want %+v", got, want)
	}
	if err := s.Put(ctx, storetest.MakeList("hour", time.Time{}, 4, model.SourceSpeed, 2, 4)); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Versions(ctx, storetest.T0)
	slices.SortFunc(got, func(a, b store.Stamp) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	want[1] = store.Stamp{Key: model.Key{Window: "hour"}, Rank: 4, Seq: 1}
	if !slices.Equal(got, want) {
		t.Fatalf("stamps after a write: %+v, want %+v", got, want)
	}
}
