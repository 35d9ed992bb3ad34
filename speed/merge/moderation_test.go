package merge_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"trending/model"
	"trending/model/moderation"
	"trending/model/topk"
	"trending/speed/merge"
)

// TestModerationDropsAndRestores: removed items leave the merged list at the next publish
// after ModerationChanged, the list still holds K items (the next ones move up, from every
// partition's top M x K), and a restore brings an item back with its count; the truth is the
// top K of the union without the removed items, at random.
func TestModerationDropsAndRestores(t *testing.T) {
	const k, m, parts = 5, 3, 4
	r := rand.New(rand.NewPCG(3, 4))
	st := openStore(t)
	var removed atomic.Pointer[moderation.Set]
	removed.Store(moderation.NewSet())
	cfg := mergeConfig(k, parts, st)
	cfg.Removed = removed.Load
	mg, err := merge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Every partition holds distinct items with distinct counts; each sends its top M x K.
	var all []topk.Entry
	for p := range parts {
		var items []topk.Entry
		for i := range 40 {
			items = append(items, e(string(rune('a'+p))+string(rune('A'+i)), uint64(r.IntN(100000))))
		}
		slices.SortFunc(items, topk.Compare)
		all = append(all, items...)
		mg.Offer(partial("hour", p, t0, items[:m*k]...))
	}
	slices.SortFunc(all, topk.Compare)
	want := func(s *moderation.Set) []string {
		var out []string
		for _, e := range all {
			if len(out) < k && !s.Has(e.Item) {
				out = append(out, e.Item)
			}
		}
		return out
	}
	check := func(s *moderation.Set) {
		t.Helper()
		if err := mg.Publish(ctx, t0); err != nil {
			t.Fatal(err)
		}
		l, err := st.Get(ctx, model.Key{Window: "hour"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range l.Items {
			got = append(got, it.ItemID)
		}
		if w := want(s); !slices.Equal(got, w) {
			t.Fatalf("removed %v: list %v, want %v", s.Items(), got, w)
		}
	}
	check(removed.Load())
	for range 10 {
		// Remove up to 2K of the current leaders (at most (M-1) x K in any partition's list).
		var items []string
		for _, e := range all[:3*k] {
			if r.IntN(2) == 0 {
				items = append(items, e.Item)
			}
		}
		s := moderation.NewSet(items[:min(len(items), 2*k)]...)
		removed.Store(s)
		mg.ModerationChanged()
		check(s)
	}
	removed.Store(moderation.NewSet())
	mg.ModerationChanged()
	check(moderation.NewSet())
}
