package merge_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/serving/store"
	"trending/speed/merge"
)

// world is a random stream's counts as the partitions hold them: every unsalted item on the
// partition its id hashes to, every salted item's count split over several partitions (its
// own among them, as sub-key 0 is its own key), each partition knowing which salted items it
// holds.
type world struct {
	parts  int
	counts []map[string]uint64 // per partition
	salted []map[string]bool   // per partition: the salted items it holds
	truth  map[string]uint64
}

func home(item string, parts int) int {
	h := fnv.New32a()
	h.Write([]byte(item))
	return int(h.Sum32() % uint32(parts))
}

// newWorld spreads a Zipf stream over parts partitions. Salted items get ways sub-keys on
// distinct partitions, and part of their count (events from before the salting) on their own.
func newWorld(r *rand.Rand, parts, items, events int, hot []string, ways int) *world {
	w := &world{parts: parts, truth: map[string]uint64{}}
	for range parts {
		w.counts = append(w.counts, map[string]uint64{})
		w.salted = append(w.salted, map[string]bool{})
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(items-1))
	add := func(part int, item string, n uint64) {
		w.counts[part][item] += n
		w.truth[item] += n
	}
	for range events {
		add(0, "", 0)
		id := fmt.Sprintf("v%04d", zipf.Uint64())
		add(home(id, parts), id, 1+uint64(r.IntN(5)))
	}
	delete(w.truth, "")
	for _, c := range w.counts {
		delete(c, "")
	}
	for _, id := range hot {
		h := home(id, parts)
		add(h, id, uint64(r.IntN(200))) // before the salting: on its own partition
		subs := []int{h}
		for _, p := range r.Perm(parts) {
			if len(subs) == min(ways, parts) {
				break
			}
			if p != h {
				subs = append(subs, p)
			}
		}
		for _, p := range subs {
			add(p, id, 50+uint64(r.IntN(150))) // each share under the partitions' leaders
			w.salted[p][id] = true
		}
	}
	return w
}

// partial is partition part's list of window: its best mk counts and, beside them, every
// salted item it holds.
func (w *world) partial(window string, part, mk int, asOf time.Time) model.Partial {
	var all []topk.Entry
	for id, n := range w.counts[part] {
		all = append(all, topk.Entry{Item: id, Count: n})
	}
	topk.Sort(all)
	p := partial(window, part, asOf, all[:min(mk, len(all))]...)
	for id := range w.salted[part] {
		p.Salted = append(p.Salted, model.SaltedCount{Item: id, Count: w.counts[part][id]})
	}
	slices.SortFunc(p.Salted, func(a, b model.SaltedCount) int { return int(b.Count) - int(a.Count) })
	return p
}

func (w *world) top(k int) []topk.Entry {
	var all []topk.Entry
	for id, n := range w.truth {
		all = append(all, topk.Entry{Item: id, Count: n})
	}
	topk.Sort(all)
	return all[:min(k, len(all))]
}

func entriesOf(l model.List) []topk.Entry {
	out := make([]topk.Entry, len(l.Items))
	for i, it := range l.Items {
		out[i] = topk.Entry{Item: it.ItemID, Count: it.Views}
	}
	return out
}

// twoLevels merges ps through groups shard mergers (partition p to group p mod groups) and
// returns the partials they emit, through the wire; mods change the mergers' config.
func twoLevels(t *testing.T, k, groups int, ps []model.Partial, now time.Time, mods ...func(*merge.Config)) []model.Partial {
	t.Helper()
	var out []model.Partial
	gms := make([]*merge.Merger, groups)
	for g := range gms {
		cfg := merge.DefaultConfig()
		for _, mod := range mods {
			mod(&cfg)
		}
		cfg.K, cfg.Shard = k, merge.DefaultShard(g)
		cfg.Shard.Emit = func(_ context.Context, ps []model.Partial) error {
			for _, p := range ps {
				b, err := p.Encode()
				if err != nil {
					return err
				}
				q, err := model.DecodePartial(b)
				if err != nil {
					return err
				}
				out = append(out, q)
			}
			return nil
		}
		m, err := merge.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		gms[g] = m
	}
	for _, p := range ps {
		gms[p.Partition%groups].Offer(p)
	}
	for _, m := range gms {
		if err := m.Publish(context.Background(), now); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestMergeSaltedExact: on random streams where a few hot items are salted over several
// partitions, each share ranking under its partition's top m x K, the merged list equals the
// truth's top K, through one merger and through two levels of mergers, and each salted item
// is counted whole.
func TestMergeSaltedExact(t *testing.T) {
	const k, mk = 10, 30
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		parts := 2 + r.IntN(30)
		hot := []string{"HOT-a", "HOT-b", "HOT-c"}[:1+r.IntN(3)]
		w := newWorld(r, parts, 300, 20_000, hot, 2+r.IntN(8))
		want := w.top(k)
		var ps []model.Partial
		for part := range parts {
			ps = append(ps, w.partial("hour", part, mk, t0))
		}
		one, err := merge.New(mergeConfig(k, parts, openStore(t)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			one.Offer(p)
		}
		l, _, _ := one.Build(model.Key{Window: "hour"})
		if got := entriesOf(l); !slices.Equal(got, want) {
			t.Fatalf("seed %d, %d partitions, one level:\n got %v\nwant %v", seed, parts, got, want)
		}
		groups := 1 + r.IntN(min(parts, 8))
		top, err := merge.New(mergeConfig(k, parts, openStore(t)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range twoLevels(t, k, groups, ps, t0) {
			top.Offer(p)
		}
		l2, _, _ := top.Build(model.Key{Window: "hour"})
		if !reflect.DeepEqual(l2, l) {
			t.Fatalf("seed %d, %d partitions in %d groups: two levels\n%+v\none level\n%+v", seed, parts, groups, l2, l)
		}
	}
}

// TestSaltedSharesUnderTheTop is the case salting must get right: a salted item whose every
// share ranks under its partition's reported top, while its sum leads. Without the salted
// counts the merge would miss it.
func TestSaltedSharesUnderTheTop(t *testing.T) {
	m, _ := merge.New(mergeConfig(2, 3, openStore(t)))
	for part := range 3 {
		p := partial("hour", part, t0, e(fmt.Sprintf("A%d", part), 100), e(fmt.Sprintf("B%d", part), 90))
		p.Salted = []model.SaltedCount{{Item: "HOT", Count: 80}}
		m.Offer(p)
	}
	l, _, _ := m.Build(model.Key{Window: "hour"})
	if got := fmt.Sprint(entriesOf(l)); got != "[{HOT 240} {A0 100}]" {
		t.Fatalf("merged %s, want HOT with its three shares first", got)
	}
	// A partition that lists the item among its best (without knowing it is salted) counts
	// it once, not twice.
	p := partial("hour", 1, t0.Add(time.Second), e("HOT", 80), e("A1", 100))
	p.Salted = []model.SaltedCount{{Item: "HOT", Count: 80}}
	m.Offer(p)
	q := partial("hour", 2, t0.Add(time.Second), e("A2", 100), e("HOT", 80))
	m.Offer(q)
	l, _, _ = m.Build(model.Key{Window: "hour"})
	if got := fmt.Sprint(entriesOf(l)); got != "[{HOT 240} {A0 100}]" {
		t.Fatalf("merged %s, want HOT counted once per partition", got)
	}
}

// TestSaltedSketchBound: in a sketch window a salted item's count is a sum of estimates, so
// the list states the sum of their bounds (and the union of their failure chances) when it is
// listed, and the worst partition's bound otherwise; two levels state the same.
func TestSaltedSketchBound(t *testing.T) {
	sk := func(part int, over float64, items ...topk.Entry) model.Partial {
		p := partial("month", part, t0, items...)
		p.Exact, p.Bound = false, &model.Bound{MaxOvercount: over, Probability: 1 - math.Exp(-5)}
		return p
	}
	p0 := sk(0, 40, e("A", 2000))
	p0.Salted = []model.SaltedCount{{Item: "HOT", Count: 400}}
	p1 := sk(1, 55, e("B", 900))
	p1.Salted = []model.SaltedCount{{Item: "HOT", Count: 350}}
	p2 := sk(2, 30, e("C", 800), e("HOT", 300)) // lists it, does not know it is salted
	ps := []model.Partial{p0, p1, p2}
	fail := math.Exp(-5)
	for _, c := range []struct {
		k         int
		over, pr  float64
		hotListed bool
	}{{3, 125, 1 - 3*fail, true}, {1, 55, 1 - fail, false}} {
		one, _ := merge.New(mergeConfig(c.k, 3, openStore(t)))
		for _, p := range ps {
			one.Offer(p)
		}
		l, _, _ := one.Build(model.Key{Window: "month"})
		if l.ErrorBound == nil || l.ErrorBound.MaxOvercount != c.over || math.Abs(l.ErrorBound.Probability-c.pr) > 1e-12 {
			t.Fatalf("K=%d: bound %+v, want %g at %g", c.k, l.ErrorBound, c.over, c.pr)
		}
		if listed := slices.ContainsFunc(l.Items, func(it model.Item) bool { return it.ItemID == "HOT" && it.Views == 1050 }); listed != c.hotListed {
			t.Fatalf("K=%d: items %+v, HOT at 1050 listed: %v, want %v", c.k, l.Items, listed, c.hotListed)
		}
		for _, groups := range []int{2, 3} {
			top, _ := merge.New(mergeConfig(c.k, 3, openStore(t)))
			for _, p := range twoLevels(t, c.k, groups, ps, t0) {
				top.Offer(p)
			}
			l2, _, _ := top.Build(model.Key{Window: "month"})
			if !reflect.DeepEqual(l2, l) {
				t.Fatalf("K=%d, %d groups: two levels\n%+v\none level\n%+v", c.k, groups, l2, l)
			}
		}
	}
}

// TestTwoLevelsSameAsOne: random partials of every kind (live lists, calendar lists open,
// final and amended by late drops, stale and missing partitions, topics lists, the counts
// since the all-time boundary with the base) give the same served lists through G shard
// mergers and a top merger as through one merger.
func TestTwoLevelsSameAsOne(t *testing.T) {
	ctx := context.Background()
	h := t0.Truncate(time.Hour)
	boundary := t0.Truncate(24 * time.Hour)
	base := model.List{Window: model.BaseWindow, Source: model.SourceBatch, Status: model.StatusExact, Exact: true, Version: 5,
		AsOf: boundary, Boundary: boundary, Cutoff: 40}
	for i := range 20 {
		// Mostly items that rank under the partitions' best: a shard merger cuts them from Items
		// and must keep them in Base. The base's own counts lead, so they make the list.
		base.Items = append(base.Items, model.Item{Rank: i + 1, ItemID: fmt.Sprintf("v%04d", 1+i*7), Views: uint64(100000 - 10*i), Exact: true})
	}
	baseIDs := map[string]bool{}
	for _, it := range base.Items {
		baseIDs[it.ItemID] = true
	}
	for seed := uint64(1); seed <= 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 9))
		parts := 3 + r.IntN(20)
		groups := 2 + r.IntN(min(parts-1, 6))
		k := 5 + r.IntN(10)
		w := newWorld(r, parts, 200, 5000, []string{"HOT"}, 2+r.IntN(4))
		var ps []model.Partial
		for part := range parts {
			if r.IntN(8) == 0 {
				continue // a missing partition
			}
			asOf := t0
			if r.IntN(6) == 0 {
				asOf = t0.Add(-10 * time.Minute) // stale
			}
			ps = append(ps, w.partial("hour", part, 3*k, asOf))
			c := w.partial("hour", part, 3*k, asOf)
			c.Start, c.End = h, h.Add(time.Hour)
			if r.IntN(2) == 0 {
				c.Final, c.DroppedLate = true, uint64(r.IntN(5))
			}
			ps = append(ps, c)
			if r.IntN(3) == 0 {
				l := lateOnly(part, h.Add(-time.Hour), uint64(1+r.IntN(9)))
				ps = append(ps, l)
			}
			sk := w.partial("month", part, 3*k, asOf)
			sk.Exact, sk.Bound = false, &model.Bound{MaxOvercount: float64(10 + r.IntN(50)), Probability: 0.99}
			ps = append(ps, sk)
			tw := model.TopicsKey("eu", "volume").Name()
			tp := model.Partial{Window: tw, Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Limit: 4 + r.IntN(3),
				Topics: []model.Item{{ItemID: fmt.Sprintf("#t%d", part), Views: uint64(r.IntN(100)), Topic: &model.Topic{Score: float64(r.IntN(1000)) / 10}}}}
			ps = append(ps, tp)
			// Counts since B: the partition's best, every base item it holds, its salted ones.
			sp := w.partial(model.SinceWindow, part, 3*k, asOf)
			sp.Boundary, sp.From, sp.BaseVersion = boundary, boundary, base.Version
			if len(sp.Items) == 3*k {
				sp.Cutoff = sp.Items[3*k-1].Count
			}
			for id, n := range w.counts[part] {
				if baseIDs[id] {
					sp.Base = append(sp.Base, topk.Entry{Item: id, Count: n})
				}
			}
			topk.Sort(sp.Base)
			if r.IntN(10) == 0 {
				sp.Boundary = boundary.Add(-24 * time.Hour) // not moved to the base's yet
			}
			ps = append(ps, sp)
		}
		r.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		newMerger := func() *merge.Merger {
			st := openStore(t)
			if err := st.Put(ctx, base); err != nil {
				t.Fatal(err)
			}
			c := mergeConfig(k, parts, st)
			c.Staleness = 5 * time.Minute
			m, err := merge.New(c)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		one, top := newMerger(), newMerger()
		for _, p := range ps {
			one.Offer(p)
		}
		for _, p := range twoLevels(t, k, groups, ps, t0) {
			top.Offer(p)
		}
		// Publish reads the base, then the lists are built.
		for _, m := range []*merge.Merger{one, top} {
			if err := m.Publish(ctx, t0); err != nil {
				t.Fatal(err)
			}
		}
		keys := []model.Key{{Window: "hour"}, {Window: "hour", Start: h}, {Window: "hour", Start: h.Add(-time.Hour)}, {Window: "month"},
			{Window: "all"}, model.TopicsKey("eu", "volume")}
		for _, key := range keys {
			want, wstale, wok := one.Build(key)
			got, gstale, gok := top.Build(key)
			if gok != wok || !reflect.DeepEqual(got, want) || !slices.Equal(gstale, wstale) {
				t.Fatalf("seed %d, %d partitions in %d groups, %s:\ntwo levels (%v) %+v\none level  (%v) %+v", seed, parts, groups, key, gok, got, wok, want)
			}
		}
	}
}

// TestTwoLevelsNoRegress: the top merger drops a shard partial older than the one it holds
// (a paused shard merger waking, or a standby behind), so the served list never goes back;
// a shard merger restarted from the partials' lookback emits its shard's newest again.
func TestTwoLevelsNoRegress(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	top, _ := merge.New(mergeConfig(2, 4, st))
	at := func(d time.Duration, leader string) []model.Partial {
		var ps []model.Partial
		for part := range 4 {
			ps = append(ps, partial("hour", part, t0.Add(d), e(fmt.Sprintf("%s%d", leader, part), uint64(100+part)+uint64(d/time.Second))))
		}
		return ps
	}
	old := twoLevels(t, 2, 2, at(0, "OLD"), t0)
	fresh := twoLevels(t, 2, 2, at(time.Minute, "NEW"), t0.Add(time.Minute))
	for _, p := range fresh {
		top.Offer(p)
	}
	if err := top.Publish(ctx, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The paused shard merger wakes and publishes its older partials.
	for _, p := range old {
		top.Offer(p)
	}
	if err := top.Publish(ctx, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, model.Key{Window: "hour"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != t0.Add(time.Minute).UnixMilli() || got.Items[0].ItemID != "NEW3" || got.Incomplete {
		t.Fatalf("served after the old shard partials: version %d items %+v partial %v", got.Version, got.Items, got.Incomplete)
	}
	// A restarted shard merger that has reread only part of its partitions' lists emits a
	// partial whose missing members the top merger marks stale; its version is the newest
	// member's, never older than what is served.
	restarted := twoLevels(t, 2, 2, at(2*time.Minute, "NEW")[:3], t0.Add(2*time.Minute))
	for _, p := range restarted {
		top.Offer(p)
	}
	l, stale, _ := top.Build(model.Key{Window: "hour"})
	if l.Version != t0.Add(2*time.Minute).UnixMilli() || fmt.Sprint(stale) != "[3]" {
		t.Fatalf("after a partial shard: version %d stale %v, want the newest and partition 3 missing", l.Version, stale)
	}
	if err := st.Put(ctx, func() model.List { l := got; l.Version--; return l }()); err == nil {
		t.Fatal("the store took an older version")
	}
	_ = store.ErrStaleVersion
}

// TestShardSinceKeepsBaseAndCutoff: a shard merger's counts since the boundary keep its best
// M x K items, every base item (summed over its members) and every salted one, and raise the
// cutoff to the best item it leaves out, so the top merger's unseen bound still holds.
func TestShardSinceKeepsBaseAndCutoff(t *testing.T) {
	b := t0.Truncate(24 * time.Hour)
	var got []model.Partial
	cfg := merge.DefaultConfig()
	cfg.K, cfg.Shard = 1, &merge.Shard{Index: 3, M: 2, Emit: func(_ context.Context, ps []model.Partial) error { got = append(got, ps...); return nil }}
	g, err := merge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	since := func(part int, cutoff uint64, items, base []topk.Entry, salted ...model.SaltedCount) model.Partial {
		p := partial(model.SinceWindow, part, t0.Add(time.Duration(part)*time.Second), items...)
		p.Boundary, p.From, p.BaseVersion, p.Base, p.Cutoff, p.Salted = b, b, 7, base, cutoff, salted
		return p
	}
	g.Offer(since(3, 5, []topk.Entry{e("A", 100), e("BASE", 60), e("C", 50)}, []topk.Entry{e("BASE", 60)}, model.SaltedCount{Item: "HOT", Count: 4}))
	g.Offer(since(7, 9, []topk.Entry{e("D", 90), e("E", 70)}, []topk.Entry{e("BASE2", 2)}, model.SaltedCount{Item: "HOT", Count: 6}))
	if err := g.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("emitted %d partials, want 1", len(got))
	}
	p := got[0]
	if fmt.Sprint(p.Items) != "[{A 100} {D 90}]" || fmt.Sprint(p.Base) != "[{BASE 60} {BASE2 2}]" || fmt.Sprint(p.Salted) != "[{HOT 10 0 0}]" ||
		p.Cutoff != 70 || p.Partition != 3 || p.BaseVersion != 7 || !p.Boundary.Equal(b) || p.Version != t0.Add(7*time.Second).UnixMilli() ||
		fmt.Sprint(p.Members) != fmt.Sprint([]model.Member{{Partition: 3, Version: t0.Add(3 * time.Second).UnixMilli(), AsOf: t0.Add(3 * time.Second)},
			{Partition: 7, Version: t0.Add(7 * time.Second).UnixMilli(), AsOf: t0.Add(7 * time.Second)}}) {
		t.Fatalf("shard since partial %+v", p)
	}
}

// TestSaltedDecayed: in a decayed window a salted item's scores are summed too (a decayed
// score is a sum over views), each brought to the list's as-of first; one level and two give
// the same list, and in a sketch window the listed salted item's bound is the sum of its
// parts'.
func TestSaltedDecayed(t *testing.T) {
	ws, err := windowset.Parse("now=decayed:1h:exact,sk-now=decayed:30m:sketch")
	if err != nil {
		t.Fatal(err)
	}
	withWindows := func(c *merge.Config) { c.Windows = ws }
	const parts = 6
	for _, win := range []struct {
		name string
		hl   int64
		over float64
	}{{"now", 3600, 0}, {"sk-now", 1800, 2.5}} {
		var ps []model.Partial
		want := 0.0
		for part := range parts {
			at := t0.Add(-time.Duration(part) * 20 * time.Second) // partitions behind by up to 100 s
			p := model.Partial{Window: win.name, Partition: part, AsOf: at, Version: at.UnixMilli(), Exact: win.over == 0, HalfLifeSeconds: win.hl,
				Scored: []topk.Scored{{Item: fmt.Sprintf("A%d", part), Score: 100}, {Item: fmt.Sprintf("B%d", part), Score: 90}}}
			if win.over > 0 {
				p.Bound = &model.Bound{MaxOvercount: win.over, Probability: 1 - math.Exp(-5)}
			}
			if part == 3 {
				p.Scored = append(p.Scored, topk.Scored{Item: "HOT", Score: 40}) // lists it without knowing it is salted
			} else {
				p.SaltedScored = []model.SaltedScore{{Item: "HOT", Score: 40}}
			}
			want += 40 * math.Exp2(-float64(t0.Sub(at).Milliseconds())/float64(win.hl*1000))
			ps = append(ps, p)
		}
		one, err := merge.New(func() merge.Config { c := mergeConfig(2, parts, openStore(t)); withWindows(&c); return c }())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			one.Offer(p)
		}
		l, _, _ := one.Build(model.Key{Window: win.name})
		if len(l.Items) != 2 || l.Items[0].ItemID != "HOT" || math.Abs(l.Items[0].DecayedScore-want) > 1e-9*want || l.Items[1].ItemID != "A0" {
			t.Fatalf("%s: items %+v, want HOT at %v, then A0", win.name, l.Items, want)
		}
		switch {
		case win.over == 0 && l.ErrorBound != nil:
			t.Fatalf("%s: exact scores with a bound %+v", win.name, l.ErrorBound)
		case win.over > 0 && (l.ErrorBound == nil || math.Abs(l.ErrorBound.MaxOvercount-parts*win.over) > 1e-9 || math.Abs(l.ErrorBound.Probability-(1-parts*math.Exp(-5))) > 1e-12):
			t.Fatalf("%s: bound %+v, want %d x %v at 1 - %d e^-5", win.name, l.ErrorBound, parts, win.over, parts)
		}
		for _, groups := range []int{2, 4} {
			top, _ := merge.New(func() merge.Config { c := mergeConfig(2, parts, openStore(t)); withWindows(&c); return c }())
			for _, p := range twoLevels(t, 2, groups, ps, t0, withWindows) {
				top.Offer(p)
			}
			l2, _, _ := top.Build(model.Key{Window: win.name})
			if len(l2.Items) != len(l.Items) || !reflect.DeepEqual(l2.ErrorBound, l.ErrorBound) || l2.HalfLifeSeconds != l.HalfLifeSeconds {
				t.Fatalf("%s, %d groups: two levels %+v, one %+v", win.name, groups, l2, l)
			}
			for i := range l.Items {
				a, b := l.Items[i], l2.Items[i]
				if a.ItemID != b.ItemID || math.Abs(a.DecayedScore-b.DecayedScore) > 1e-12*a.DecayedScore {
					t.Fatalf("%s, %d groups: rank %d two levels %+v, one %+v", win.name, groups, i+1, b, a)
				}
			}
		}
	}
}
