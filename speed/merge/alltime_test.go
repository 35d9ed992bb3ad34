package merge_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"trending/model"
	"trending/model/moderation"
	"trending/model/topk"
	"trending/speed/merge"
)

var boundary = time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)

func ranked(c map[string]uint64) []topk.Entry {
	var out []topk.Entry
	for id, v := range c {
		if v > 0 {
			out = append(out, topk.Entry{Item: id, Count: v})
		}
	}
	slices.SortFunc(out, func(a, b topk.Entry) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Item, b.Item)) })
	return out
}

// baseList is the batch's base: the top n of before with the cutoff.
func baseList(before map[string]uint64, n int, version int64) model.List {
	r := ranked(before)
	l := model.List{Window: model.BaseWindow, AsOf: boundary, Boundary: boundary, Version: version, Source: model.SourceBatch, Status: model.StatusExact, Exact: true}
	if len(r) > n {
		l.Cutoff, r = r[n].Count, r[:n]
	}
	for i, e := range r {
		l.Items = append(l.Items, model.Item{Rank: i + 1, ItemID: e.Item, Views: e.Count, Exact: true})
	}
	return l
}

// sincePartial is what a partition reports: its top mk since B, the base items it holds,
// the cutoff.
func sincePartial(part int, asOf time.Time, counts map[string]uint64, mk int, base model.List) model.Partial {
	r := ranked(counts)
	p := model.Partial{Window: model.SinceWindow, Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Exact: true,
		Boundary: base.Boundary, From: base.Boundary.AddDate(0, 0, -3), BaseVersion: base.Version}
	if len(r) >= mk {
		p.Cutoff, r = r[mk-1].Count, r[:mk]
	}
	p.Items = r
	listed := map[string]bool{}
	for _, e := range r {
		listed[e.Item] = true
	}
	for _, it := range base.Items {
		if c := counts[it.ItemID]; c > 0 && !listed[it.ItemID] {
			p.Base = append(p.Base, topk.Entry{Item: it.ItemID, Count: c})
		}
	}
	return p
}

// TestHybridAgainstTruth: random all-time totals split at B, items hashed to partitions, and for
// odd seeds two of the leaders removed by moderation (the truth is then without them); the
// merged live all list is exact (equal to the truth) whenever it says so, its counts are never
// low nor higher than the bound, no unlisted item exceeds its cutoff, and both outcomes occur
// (a long base proves exactness, a short one cannot).
func TestHybridAgainstTruth(t *testing.T) {
	const k, m, parts = 5, 2, 3
	exacts, inexacts := 0, 0
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 3))
		before, after := map[string]uint64{}, map[string]uint64{}
		nItems := 20 + r.IntN(60)
		for i := range nItems {
			id := fmt.Sprintf("V%03d", i)
			before[id] = uint64(r.IntN(1000) * r.IntN(3))
			after[id] = uint64(r.IntN(100) * r.IntN(2))
			if r.IntN(10) == 0 {
				after[id] += 1500 // a new item going viral since B
			}
		}
		baseLen := []int{k, 3 * k, 10 * k, 1000}[r.IntN(4)]
		base := baseList(before, baseLen, 7+int64(seed))
		st := openStore(t)
		if err := st.Put(context.Background(), base); err != nil {
			t.Fatal(err)
		}
		truth := map[string]uint64{}
		for id := range before {
			truth[id] = before[id] + after[id]
		}
		// Odd seeds remove the first and third items of the truth (moderation): the list is
		// then the truth without them, and says exact only when it is.
		var removed *moderation.Set
		if seed%2 == 1 {
			all := ranked(truth)
			removed = moderation.NewSet(all[0].Item, all[2].Item)
			for _, id := range removed.Items() {
				delete(truth, id)
			}
		}
		cfg := mergeConfig(k, parts, st)
		cfg.Removed = func() *moderation.Set { return removed }
		mg, err := merge.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		asOf := boundary.Add(30 * time.Hour)
		for p := range parts {
			counts := map[string]uint64{}
			for id, c := range after {
				if int(id[len(id)-1])%parts == p {
					counts[id] = c
				}
			}
			mg.Offer(sincePartial(p, asOf, counts, m*k, base))
		}
		if err := mg.Publish(context.Background(), asOf); err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(context.Background(), model.Key{Window: "all"})
		if err != nil {
			t.Fatal(err)
		}
		want := ranked(truth)[:k]
		if !got.Boundary.Equal(boundary) || got.Incomplete || got.Source != model.SourceSpeed || got.Version != asOf.UnixMilli() {
			t.Fatalf("seed %d: %+v", seed, got)
		}
		listed := map[string]bool{}
		for _, it := range got.Items {
			if removed.Has(it.ItemID) {
				t.Fatalf("seed %d: removed %s listed", seed, it.ItemID)
			}
			listed[it.ItemID] = true
			over := uint64(0)
			if got.ErrorBound != nil {
				over = uint64(got.ErrorBound.MaxOvercount)
			}
			if it.Views < truth[it.ItemID] || it.Views > truth[it.ItemID]+over || (it.Exact && it.Views != truth[it.ItemID]) {
				t.Fatalf("seed %d: %s listed at %d (exact %t), truth %d, bound %d", seed, it.ItemID, it.Views, it.Exact, truth[it.ItemID], over)
			}
		}
		for id, v := range truth {
			if !listed[id] && v > got.Cutoff {
				t.Fatalf("seed %d: unlisted %s has %d, over the cutoff %d", seed, id, v, got.Cutoff)
			}
		}
		if got.Exact {
			exacts++
			if got.ErrorBound != nil || len(got.Items) != k {
				t.Fatalf("seed %d: exact list with bound %+v and %d items", seed, got.ErrorBound, len(got.Items))
			}
			for i, it := range got.Items {
				if it.ItemID != want[i].Item || it.Views != want[i].Count {
					t.Fatalf("seed %d: exact list rank %d is %s %d, truth %s %d", seed, i+1, it.ItemID, it.Views, want[i].Item, want[i].Count)
				}
			}
		} else {
			inexacts++
			if got.ErrorBound == nil {
				t.Fatalf("seed %d: inexact list without a bound", seed)
			}
		}
	}
	if exacts == 0 || inexacts == 0 {
		t.Fatalf("%d exact and %d inexact lists: both must occur", exacts, inexacts)
	}
	t.Logf("%d exact, %d with a bound", exacts, inexacts)
}

// TestHybridFallbackAndMismatch: without a base the speed layer's own "all" list serves; a
// partition still counting from an older boundary makes the list partial and inexact; the
// SinceWindow partials are never a served list of their own.
func TestHybridFallbackAndMismatch(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	mg, err := merge.New(func() merge.Config { c := mergeConfig(2, 2, st); c.BaseRefresh = time.Nanosecond; return c }())
	if err != nil {
		t.Fatal(err)
	}
	asOf := boundary.Add(2 * time.Hour)
	sk := partial("all", 0, asOf, e("A", 900), e("B", 800))
	sk.Exact, sk.Bound = false, &model.Bound{MaxOvercount: 40, Probability: 0.99}
	mg.Offer(sk)
	base := baseList(map[string]uint64{"A": 500, "B": 400, "C": 300}, 10, 1)
	mg.Offer(sincePartial(0, asOf, map[string]uint64{"A": 400, "B": 350}, 4, base))
	mg.Offer(sincePartial(1, asOf, map[string]uint64{"C": 10}, 4, base))
	if err := mg.Publish(ctx, asOf); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, model.Key{Window: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Exact || got.ErrorBound == nil || got.ErrorBound.MaxOvercount != 40 || !got.Boundary.IsZero() {
		t.Fatalf("before any base: %+v, want the sketch list", got)
	}
	if _, err := st.Get(ctx, model.Key{Window: model.SinceWindow}); err == nil {
		t.Fatal("the since partials were published as a list")
	}

	// The base arrives: exact, A 900, B 750.
	if err := st.Put(ctx, base); err != nil {
		t.Fatal(err)
	}
	later := asOf.Add(time.Minute)
	mg.Offer(sincePartial(0, later, map[string]uint64{"A": 400, "B": 350}, 4, base))
	mg.Offer(sincePartial(1, later, map[string]uint64{"C": 10}, 4, base))
	if err := mg.Publish(ctx, later); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Get(ctx, model.Key{Window: "all"})
	if !got.Exact || got.Incomplete || len(got.Items) != 2 || got.Items[0].Views != 900 || got.Items[1].Views != 750 || !got.Boundary.Equal(boundary) {
		t.Fatalf("with the base: %+v", got)
	}

	// Partition 1 still counts from the day before: partial and inexact.
	old := sincePartial(1, later.Add(time.Minute), map[string]uint64{"C": 10}, 4, base)
	old.Boundary = boundary.AddDate(0, 0, -1)
	mg.Offer(old)
	mg.Offer(sincePartial(0, later.Add(time.Minute), map[string]uint64{"A": 400, "B": 350}, 4, base))
	if err := mg.Publish(ctx, later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Get(ctx, model.Key{Window: "all"})
	if got.Exact || !got.Incomplete || !slices.Equal(got.StalePartitions, []int{1}) {
		t.Fatalf("with a partition on another boundary: %+v", got)
	}
}

// TestHybridGivesWayToFresherOwnList: when the partitions stop sending their counts since B
// (a worker restarted without the base) the speed layer's own all-time list takes over
// once the hybrid's counts are stale.
func TestHybridGivesWayToFresherOwnList(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	mg, err := merge.New(func() merge.Config { c := mergeConfig(1, 1, st); c.Staleness = time.Minute; return c }())
	if err != nil {
		t.Fatal(err)
	}
	base := baseList(map[string]uint64{"A": 500}, 10, 1)
	if err := st.Put(ctx, base); err != nil {
		t.Fatal(err)
	}
	asOf := boundary.Add(time.Hour)
	mg.Offer(sincePartial(0, asOf, map[string]uint64{"A": 4}, 2, base))
	mg.Offer(partial("all", 0, asOf, e("A", 504)))
	if err := mg.Publish(ctx, asOf); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Get(ctx, model.Key{Window: "all"}); !got.Exact || got.Boundary.IsZero() {
		t.Fatalf("hybrid: %+v", got)
	}
	later := asOf.Add(5 * time.Minute)
	own := partial("all", 0, later, e("A", 600))
	own.Exact, own.Bound = false, &model.Bound{MaxOvercount: 3, Probability: 0.99}
	mg.Offer(own)
	if err := mg.Publish(ctx, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Get(ctx, model.Key{Window: "all"}); got.Version != later.UnixMilli() || !got.Boundary.IsZero() || got.Items[0].Views != 600 {
		t.Fatalf("after the since counts stopped: %+v", got)
	}
}

// TestBaseRefreshZero: BaseRefresh 0 re-reads the base at every Publish, even one at the
// same instant, instead of the default 30s.
func TestBaseRefreshZero(t *testing.T) {
	for _, tc := range []struct {
		refresh time.Duration
		exact   bool // the base, put between two publishes at the same instant, is used
	}{{0, true}, {merge.DefaultConfig().BaseRefresh, false}} {
		ctx := context.Background()
		st := openStore(t)
		c := mergeConfig(2, 2, st)
		c.BaseRefresh = tc.refresh
		mg, err := merge.New(c)
		if err != nil {
			t.Fatal(err)
		}
		asOf := boundary.Add(2 * time.Hour)
		sk := partial("all", 0, asOf, e("A", 900), e("B", 800))
		sk.Exact, sk.Bound = false, &model.Bound{MaxOvercount: 40, Probability: 0.99}
		mg.Offer(sk)
		base := baseList(map[string]uint64{"A": 500, "B": 400, "C": 300}, 10, 1)
		if err := mg.Publish(ctx, asOf); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, base); err != nil {
			t.Fatal(err)
		}
		later := asOf.Add(time.Minute)
		mg.Offer(sincePartial(0, later, map[string]uint64{"A": 400, "B": 350}, 4, base))
		mg.Offer(sincePartial(1, later, map[string]uint64{"C": 10}, 4, base))
		if err := mg.Publish(ctx, asOf); err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(ctx, model.Key{Window: "all"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Exact != tc.exact {
			t.Errorf("BaseRefresh %s: all-time list exact %v, want %v", tc.refresh, got.Exact, tc.exact)
		}
	}
}

// TestHybridUnderShortStaleness is the merger of trending up (staleness 3 s): the partitions'
// counts since B reach their last closed minute, which trails their running all-time lists'
// newest event by the lateness and more, while their versions are those newest event times.
// The hybrid serves, as of the closed minute, exact only while every partition's counts reach
// the same minute.
func TestHybridUnderShortStaleness(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	c := mergeConfig(2, 2, st)
	c.Staleness, c.BaseRefresh = 3*time.Second, 0
	mg, err := merge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	base := baseList(map[string]uint64{"A": 500, "B": 400, "C": 3}, 2, 1)
	if err := st.Put(ctx, base); err != nil {
		t.Fatal(err)
	}
	minute := boundary.Add(5 * time.Hour)
	newest := minute.Add(95 * time.Second) // 30 s of lateness and the open minute
	since := func(part int, asOf time.Time, counts map[string]uint64) model.Partial {
		p := sincePartial(part, asOf, counts, 2, base)
		p.Version = newest.UnixMilli()
		return p
	}
	for part, counts := range []map[string]uint64{{"A": 40}, {"B": 30}} {
		own := partial("all", part, newest, e([]string{"A", "B"}[part], 999))
		own.Exact, own.Bound = false, &model.Bound{MaxOvercount: 9, Probability: 0.99}
		mg.Offer(own)
		mg.Offer(since(part, minute, counts))
	}
	if err := mg.Publish(ctx, newest); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, model.Key{Window: "all"})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || !got.Boundary.Equal(boundary) || !got.AsOf.Equal(minute) || got.Incomplete ||
		len(got.Items) != 2 || got.Items[0].ItemID != "A" || got.Items[0].Views != 540 || got.Items[1].Views != 430 {
		t.Fatalf("hybrid beside fresher running lists: %+v, want A 540 and B 430 exact as of %s with boundary %s", got, minute, boundary)
	}
	// Partition 1 closes the next minute first: each count is exact, but not as of one span.
	newest = newest.Add(time.Second)
	mg.Offer(since(1, minute.Add(time.Minute), map[string]uint64{"B": 31}))
	if err := mg.Publish(ctx, newest); err != nil {
		t.Fatal(err)
	}
	if got, _ = st.Get(ctx, model.Key{Window: "all"}); got.Exact || !got.AsOf.Equal(minute.Add(time.Minute)) || got.Boundary.IsZero() {
		t.Fatalf("partitions as of different minutes: %+v, want a hybrid that is not exact", got)
	}
	newest = newest.Add(time.Second)
	mg.Offer(since(0, minute.Add(time.Minute), map[string]uint64{"A": 41}))
	if err := mg.Publish(ctx, newest); err != nil {
		t.Fatal(err)
	}
	if got, _ = st.Get(ctx, model.Key{Window: "all"}); !got.Exact || got.Items[0].Views != 541 || got.Items[1].Views != 431 {
		t.Fatalf("both at the next minute: %+v, want exact A 541, B 431", got)
	}
}
