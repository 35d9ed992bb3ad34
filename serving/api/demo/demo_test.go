package demo

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	boltstore "trending/serving/store/bolt"
)

func TestListsAreValidAndStorable(t *testing.T) {
	now := time.Date(2026, 11, 14, 10, 30, 0, 0, time.UTC)
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := Seed(context.Background(), st, now); err != nil {
		t.Fatal(err)
	}
	ls, err := st.Since(context.Background(), now.AddDate(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 + 22 + 8 + 4; len(ls) != want {
		t.Fatalf("stored %d lists, want %d", len(ls), want)
	}
	seen := map[string]bool{}
	for _, it := range Lists(now)[0].Items {
		if seen[it.ItemID] {
			t.Fatalf("duplicate item id %s", it.ItemID)
		}
		seen[it.ItemID] = true
	}
}
