package batch_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
	"trending/model/moderation"
)

// TestModerationExact: on both engines, a run's lists are the top K of the truth without the
// removed items (K long: the next items move up), their counts stay in the rollups, the next
// run after a change publishes again the lists it considers (the fingerprint names the
// removed set) and a restore brings an item back with its count.
func TestModerationExact(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		const k = 10
		f := newFixture(t)
		f.generate()
		eng, st := open(t), boltStore(t)
		now := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
		var removed atomic.Pointer[moderation.Set]
		r := newRunner(t, f, eng, st, now, func(c *batch.Config) { c.K, c.Removed = k, removed.Load })
		ctx := context.Background()
		hour := day0.Add(10 * time.Hour)
		ws := []batch.Window{{Level: batch.Hour, Start: hour}, {Level: batch.Day, Start: day0}}
		truthTop := func(c map[string]uint64, s *moderation.Set) []model.Item {
			top := moderation.Top(rank(c), s, k, func(it model.Item) string { return it.ItemID })
			for i := range top {
				top[i].Rank = i + 1
			}
			return top
		}
		check := func(s *moderation.Set) {
			t.Helper()
			for _, c := range []struct {
				key   model.Key
				truth map[string]uint64
			}{{model.Key{Window: "hour", Start: hour}, f.truthOf(hour)}, {model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...)}} {
				l, err := st.Get(ctx, c.key)
				if err != nil {
					t.Fatal(err)
				}
				if want := truthTop(c.truth, s); !slices.Equal(l.Items, want) {
					t.Fatalf("%s with %v removed: %v, want %v", c.key, s.Items(), l.Items, want)
				}
				if s.Len() > 0 && !strings.Contains(l.Fingerprint, "+removed:"+s.Digest()) {
					t.Fatalf("%s: fingerprint %q does not name the removed set", c.key, l.Fingerprint)
				}
			}
		}
		if _, err := r.Recompute(ctx, ws); err != nil {
			t.Fatal(err)
		}
		check(nil)
		// Remove three of the day's leaders and one item of the hour's list.
		day := rank(f.truthOf(hoursOf(day0, 24)...))
		hr := rank(f.truthOf(hour))
		s := moderation.NewSet(day[0].ItemID, day[2].ItemID, day[5].ItemID, hr[1].ItemID)
		removed.Store(s)
		if _, err := r.Recompute(ctx, ws); err != nil {
			t.Fatal(err)
		}
		check(s)
		got, err := eng.Counts(ctx, batch.Day, day0, "", []string{day[0].ItemID})
		if err != nil || got[day[0].ItemID] != day[0].Views {
			t.Fatalf("the removed item's count in the rollup: %v, %v; want %d (nothing is deleted)", got, err, day[0].Views)
		}
		// Restore one: the plan calls the lists dirty (their fingerprint names another set)
		// and the next run brings it back.
		s2 := moderation.NewSet(day[2].ItemID, day[5].ItemID, hr[1].ItemID)
		removed.Store(s2)
		st2, err := r.Status(ctx, []string{batch.Hour}, hour, hour.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(st2) != 1 || st2[0].State != batch.StateDirty {
			t.Fatalf("status after a restore: %+v, want the hour dirty", st2)
		}
		if _, err := r.Recompute(ctx, ws); err != nil {
			t.Fatal(err)
		}
		check(s2)
	})
}
