package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store"
	"trending/serving/store/storetest"
)

func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.OpenBolt(filepath.Join(t.TempDir(), "serving.db"))
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
		if got := model.Align(c.w, ts); !got.Equal(c.want) {
			t.Errorf("Align(%s) = %v, want %v", c.w, got, c.want)
		}
		if got := model.Next(c.w, c.want); !got.Equal(c.next) {
			t.Errorf("Next(%s) = %v, want %v", c.w, got, c.next)
		}
		if model.Aligned(c.w, ts) || !model.Aligned(c.w, c.want) {
			t.Errorf("Aligned(%s) wrong", c.w)
		}
	}
}
