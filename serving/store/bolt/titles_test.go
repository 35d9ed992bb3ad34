package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store"
)

var t0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

func list(window string, start time.Time, src model.Source, status model.Status, exact bool) model.List {
	l := model.List{Window: window, Start: start, AsOf: t0, Version: 1, Source: src, Status: status, Exact: exact,
		Items: []model.Item{{Rank: 1, ItemID: "V1", Views: 3, Exact: exact}}}
	if !start.IsZero() {
		l.End = model.Period(window).Next(start)
	}
	return l
}

// prefixTitler titles every item "T <id>" and counts its calls.
type prefixTitler struct{ calls int }

func (p *prefixTitler) Attach(_ context.Context, l *model.List) {
	p.calls++
	for i := range l.Items {
		l.Items[i].Title, l.Items[i].Thumbnail = "T "+l.Items[i].ItemID, "/img/"+l.Items[i].ItemID
	}
}

// TestWithTitles: every list written through the wrapper, whatever its source and status (a
// live speed list, a closed hour's provisional list, then its exact batch list), is stored
// with its items' metadata; the caller's list is not changed; the store's refusals pass
// through; reads pass through.
func TestWithTitles(t *testing.T) {
	raw, err := Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tt := &prefixTitler{}
	st := store.WithTitles(raw, tt)
	ctx := context.Background()
	hour := t0.Add(-time.Hour)
	lists := []model.List{
		list("hour", time.Time{}, model.SourceSpeed, model.StatusLive, false),
		list("hour", hour, model.SourceSpeed, model.StatusProvisional, false),
		list("hour", hour, model.SourceBatch, model.StatusExact, true),
	}
	for _, l := range lists {
		if err := st.Put(ctx, l); err != nil {
			t.Fatalf("%s: %v", l.Key(), err)
		}
		if l.Items[0].Title != "" {
			t.Fatalf("%s: the caller's list was changed: %+v", l.Key(), l.Items[0])
		}
		for _, r := range []store.Store{raw, st} {
			got, err := r.Get(ctx, l.Key())
			if err != nil {
				t.Fatal(err)
			}
			if it := got.Items[0]; it.Title != "T V1" || it.Thumbnail != "/img/V1" || got.Source != l.Source {
				t.Fatalf("%s (%s): stored %+v from %s, want the item's metadata", l.Key(), l.Source, it, got.Source)
			}
		}
	}
	newer := lists[0]
	newer.Version = 5
	if err := st.Put(ctx, newer); err != nil {
		t.Fatal(err)
	}
	stale := lists[0]
	stale.Version = 4
	if err := st.Put(ctx, stale); !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("an older version through the wrapper: %v, want ErrStaleVersion", err)
	}
	if tt.calls != len(lists)+2 {
		t.Fatalf("%d attaches, want one per Put (%d)", tt.calls, len(lists)+2)
	}
}
