// Package storetest is the conformance suite every serving store implementation passes: the
// version, source, status and atomicity rules of package store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store"
)

// T0 is the calendar hour the suite writes around.
var T0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

// MakeList builds a valid list of n items whose views all equal base (so a torn read, mixing
// two versions, shows as unequal views).
func MakeList(window string, start time.Time, version int64, src model.Source, n int, base uint64) model.List {
	l := model.List{Window: window, Start: start, AsOf: T0.Add(time.Duration(version) * time.Minute), Version: version,
		Source: src, Exact: src == model.SourceBatch, ComputedAt: T0}
	if !start.IsZero() {
		l.End = model.Period(window).Next(start)
	}
	switch {
	case src == model.SourceBatch:
		l.Status = model.StatusExact
	case !start.IsZero() && !l.AsOf.Before(l.End):
		l.Status = model.StatusProvisional
	default:
		l.Status = model.StatusLive
	}
	for i := 0; i < n; i++ {
		l.Items = append(l.Items, model.Item{Rank: i + 1, ItemID: fmt.Sprintf("V%d", i), Views: base, Exact: l.Exact})
	}
	if !l.Exact {
		l.ErrorBound = &model.Bound{MaxOvercount: 12.5, Probability: 0.993}
	}
	return l
}

// Run runs the suite; open returns a fresh, empty store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store)
	}{
		{"missing", testMissing},
		{"round trip", testRoundTrip},
		{"all-time base", testAllTimeBase},
		{"topics lists", testTopicsLists},
		{"group lists", testGroupLists},
		{"decayed list", testDecayedList},
		{"status and dropped late", testStatusAndDroppedLate},
		{"stale version refused", testStaleVersionRefused},
		{"batch never replaced by speed", testBatchNeverReplacedBySpeed},
		{"invalid refused", testInvalidRefused},
		{"range and since", testRangeAndSince},
		{"readers never see a mix", testReadersNeverSeeAMix},
		{"versions", testVersions},
		{"change notification", testChangeNotification},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, context.Background(), open) })
	}
}

func testMissing(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	if _, err := s.Get(ctx, model.Key{Window: "hour"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
}

func testRoundTrip(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	want := MakeList("hour", T0, 5, model.SourceSpeed, 3, 100)
	want.Incomplete, want.StalePartitions = true, []int{12}
	if err := s.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, want.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 5 || len(got.Items) != 3 || got.Items[2].ItemID != "V2" || !got.Incomplete || len(got.StalePartitions) != 1 || got.StalePartitions[0] != 12 ||
		got.ErrorBound == nil || got.ErrorBound.MaxOvercount != 12.5 || !got.Start.Equal(T0) || !got.End.Equal(T0.Add(time.Hour)) || got.Source != model.SourceSpeed {
		t.Fatalf("round trip: got %+v", got)
	}
}

func testAllTimeBase(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	b := T0.Truncate(24 * time.Hour)
	base := MakeList(model.BaseWindow, time.Time{}, b.UnixMilli(), model.SourceBatch, 3, 50)
	base.AsOf, base.Boundary, base.Cutoff = b, b, 49
	if err := s.Put(ctx, base); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, model.Key{Window: model.BaseWindow})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Boundary.Equal(b) || got.Cutoff != 49 || len(got.Items) != 3 {
		t.Fatalf("base round trip: got %+v", got)
	}
	speed := base
	speed.Source, speed.Exact, speed.Version = model.SourceSpeed, false, base.Version+1
	if err := s.Put(ctx, speed); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("speed-written base: %v, want ErrInvalid", err)
	}
	mid := base
	mid.Boundary, mid.Version = b.Add(time.Hour), base.Version+1
	if err := s.Put(ctx, mid); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("base with a boundary inside a day: %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctx, model.Key{Window: "all"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the base must not be the live all list: %v", err)
	}
}

// testGroupLists: a group value's lists (live and calendar) are keys of their own beside the
// list of all items, each a single read; a range of the lists of all items never returns a
// group's, even one whose value sorts like a time, and a group's range returns only its own.
func testGroupLists(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	groups := []string{"eu", "2026-11-14T10:30:00Z.x", "us west"}
	for i, g := range append([]string{""}, groups...) {
		for _, start := range []time.Time{{}, T0, T0.Add(time.Hour)} {
			l := MakeList("hour", start, int64(10+i), model.SourceSpeed, 2, uint64(100*(i+1)))
			l.Group = g
			if err := s.Put(ctx, l); err != nil {
				t.Fatalf("put %q %s: %v", g, start, err)
			}
		}
	}
	for i, g := range append([]string{""}, groups...) {
		got, err := s.Get(ctx, model.Key{Window: "hour", Group: g})
		if err != nil || got.Group != g || got.Window != "hour" || got.Items[0].Views != uint64(100*(i+1)) {
			t.Fatalf("get %q: %+v, %v", g, got, err)
		}
		name := model.Key{Window: "hour", Group: g}.Name()
		r, err := s.Range(ctx, name, T0.Add(-time.Hour), T0.Add(3*time.Hour))
		if err != nil || len(r) != 2 {
			t.Fatalf("range %s: %d lists, %v; want its 2", name, len(r), err)
		}
		for _, l := range r {
			if l.Group != g || l.Items[0].Views != uint64(100*(i+1)) {
				t.Fatalf("range %s returned %s's list", name, l.Key())
			}
		}
	}
	since, err := s.Since(ctx, T0)
	if err != nil || len(since) != 3*(len(groups)+1) {
		t.Fatalf("since: %d lists, %v", len(since), err)
	}
}

func testTopicsLists(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	eu := model.List{Window: model.TopicsList, Group: "eu", Score: "surge", AsOf: T0, Version: 7, Source: model.SourceSpeed, Status: model.StatusLive, ComputedAt: T0,
		ErrorBound: &model.Bound{MaxOvercount: 20, Probability: 0.993},
		Items: []model.Item{
			{Rank: 1, ItemID: "#marathon", Views: 3700, Topic: &model.Topic{Score: 15.1, Expected: 198, NewShare: 0.02}},
			{Rank: 2, ItemID: "#quake", Views: 3000, Topic: &model.Topic{Score: 61 * 0.1, NoHistory: true, Review: true, NewShare: 0.9}},
		}}
	world := eu
	world.Group, world.Items = "world", eu.Items[:1]
	for _, l := range []model.List{eu, world} {
		if err := s.Put(ctx, l); err != nil {
			t.Fatalf("put %s: %v", l.Window, err)
		}
	}
	got, err := s.Get(ctx, model.TopicsKey("eu", "surge"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 2 || !reflect.DeepEqual(got.Items, eu.Items) || got.Key() != eu.Key() {
		t.Fatalf("topics items: got %+v\nwant %+v", got.Items, eu.Items)
	}
	all, err := s.Since(ctx, T0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, l := range all {
		seen[l.Key().Name()] = len(l.Items)
	}
	if seen["topics/eu/surge"] != 2 || seen["topics/world/surge"] != 1 {
		t.Fatalf("since: %v, want both regions' lists", seen)
	}
	bad := eu
	bad.Version = 8
	bad.Items = []model.Item{eu.Items[1], eu.Items[0]}
	bad.Items[0].Rank, bad.Items[1].Rank = 1, 2
	if err := s.Put(ctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("topics list not sorted by score: %v, want ErrInvalid", err)
	}
	for _, k := range []model.Key{{Window: model.TopicsList, Group: "eu"}, {Window: model.TopicsList, Score: "surge"},
		model.TopicsKey("eu", "hot"), model.TopicsKey("e/u", "surge"), {Window: "hour", Group: "eu"}} {
		l := eu
		l.SetKey(k)
		l.Version = 9
		if err := s.Put(ctx, l); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("key %+v: %v, want ErrInvalid", k, err)
		}
	}
	// A calendar topics list is one UTC hour (the batch layer's exact list of it).
	cal := eu
	cal.Start, cal.Version = T0.Add(30*time.Minute), 10
	if err := s.Put(ctx, cal); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("calendar topics list at %s: %v, want ErrInvalid (not a UTC hour)", cal.Start, err)
	}
	cal.Start, cal.End = T0, T0.Add(time.Hour)
	if err := s.Put(ctx, cal); err != nil {
		t.Fatalf("calendar topics list of an hour: %v", err)
	}
	exact := cal
	exact.Source, exact.Status, exact.Exact, exact.Version = model.SourceBatch, model.StatusExact, true, 11
	if err := s.Put(ctx, exact); err != nil {
		t.Fatalf("batch topics list over the speed one: %v", err)
	}
	late := cal
	late.Version = 12
	if err := s.Put(ctx, late); !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("speed topics list after the batch one: %v, want ErrSuperseded", err)
	}
	hourKey := model.TopicsKey("eu", "surge")
	hourKey.Start = T0
	got, err = s.Get(ctx, hourKey)
	if err != nil || got.Source != model.SourceBatch || got.Version != 11 {
		t.Fatalf("calendar topics list: got %+v, %v; want the batch list", got, err)
	}
	if got, err := s.Get(ctx, model.TopicsKey("eu", "surge")); err != nil || got.Version != 7 {
		t.Fatalf("live topics list after calendar writes: version %d, %v; want 7", got.Version, err)
	}
	rs, err := s.Range(ctx, "topics/eu/surge", T0, T0.Add(time.Hour))
	if err != nil || len(rs) != 1 || rs[0].Version != 11 {
		t.Fatalf("range of topics hours: %d lists, %v; want the batch list", len(rs), err)
	}
}

func testStatusAndDroppedLate(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	// A closed calendar hour from the speed layer: provisional, with its late drops.
	prov := MakeList("hour", T0, 60, model.SourceSpeed, 2, 30)
	prov.DroppedLate = 17
	if prov.Status != model.StatusProvisional {
		t.Fatalf("MakeList: status %q, want provisional", prov.Status)
	}
	openHour := MakeList("hour", T0.Add(time.Hour), 61, model.SourceSpeed, 2, 30) // as of 11:01, hour 11 openHour
	live := MakeList("day", time.Time{}, 62, model.SourceSpeed, 2, 30)
	for _, l := range []model.List{prov, openHour, live} {
		if err := s.Put(ctx, l); err != nil {
			t.Fatalf("put %s: %v", l.Key(), err)
		}
	}
	for _, want := range []model.List{prov, openHour, live} {
		got, err := s.Get(ctx, want.Key())
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want.Status || got.DroppedLate != want.DroppedLate || got.Exact || got.Items[0].Exact {
			t.Errorf("%s: status %q dropped_late %d exact %v/%v, want %q %d false", want.Key(), got.Status, got.DroppedLate, got.Exact, got.Items[0].Exact, want.Status, want.DroppedLate)
		}
	}
	rs, err := s.Range(ctx, "hour", T0, T0.Add(2*time.Hour))
	if err != nil || len(rs) != 2 || rs[0].Status != model.StatusProvisional || rs[0].DroppedLate != 17 || rs[1].Status != model.StatusLive {
		t.Fatalf("range: %+v, %v", rs, err)
	}
	// More late drops: the same final list again, same version, a larger count.
	prov.DroppedLate = 20
	if err := s.Put(ctx, prov); err != nil {
		t.Fatalf("same version, more drops: %v", err)
	}
	if got, _ := s.Get(ctx, prov.Key()); got.DroppedLate != 20 {
		t.Fatalf("dropped_late %d after the update, want 20", got.DroppedLate)
	}
	// The batch's exact list replaces it.
	exact := MakeList("hour", T0, 5, model.SourceBatch, 2, 31)
	if err := s.Put(ctx, exact); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, prov.Key()); got.Status != model.StatusExact || !got.Exact || !got.Items[0].Exact {
		t.Fatalf("after the batch: status %q exact %v", got.Status, got.Exact)
	}
	// Lists that do not say what they are, or say something false, are refused.
	for name, mut := range map[string]func(*model.List){
		"no status":               func(l *model.List) { l.Status = "" },
		"unknown status":          func(l *model.List) { l.Status = "approximate" },
		"speed says exact":        func(l *model.List) { l.Status = model.StatusExact; l.Exact = true },
		"exact flag, provisional": func(l *model.List) { l.Exact = true },
		"exact item":              func(l *model.List) { l.Items[0].Exact = true },
		"batch not exact":         func(l *model.List) { l.Source = model.SourceBatch },
		"live key provisional":    func(l *model.List) { l.Start, l.End = time.Time{}, time.Time{}; l.DroppedLate = 0 },
		"dropped late on live":    func(l *model.List) { l.Start, l.End, l.Status = time.Time{}, time.Time{}, model.StatusLive },
	} {
		l := MakeList("hour", T0.Add(2*time.Hour), 200, model.SourceSpeed, 2, 3)
		l.DroppedLate = 1
		mut(&l)
		if err := s.Put(ctx, l); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func testStaleVersionRefused(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	for _, k := range []time.Time{{}, T0} {
		if err := s.Put(ctx, MakeList("hour", k, 10, model.SourceSpeed, 2, 50)); err != nil {
			t.Fatal(err)
		}
		err := s.Put(ctx, MakeList("hour", k, 9, model.SourceSpeed, 2, 40))
		if !errors.Is(err, store.ErrStaleVersion) {
			t.Fatalf("older write: %v, want ErrStaleVersion", err)
		}
		got, _ := s.Get(ctx, model.Key{Window: "hour", Start: k})
		if got.Version != 10 || got.Items[0].Views != 50 {
			t.Fatalf("after refused write: version %d views %d, want 10 and 50", got.Version, got.Items[0].Views)
		}
		if err := s.Put(ctx, MakeList("hour", k, 11, model.SourceSpeed, 2, 60)); err != nil {
			t.Fatalf("newer write: %v", err)
		}
	}
}

func testBatchNeverReplacedBySpeed(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	if err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 100, model.SourceSpeed, 2, 5)); err != nil {
		t.Fatal(err)
	}
	// The batch's version (its run time) may even be lower: exact wins regardless.
	if err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 7, model.SourceBatch, 2, 6)); err != nil {
		t.Fatalf("batch over speed: %v", err)
	}
	err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 1000, model.SourceSpeed, 2, 9))
	if !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("speed over batch: %v, want ErrSuperseded", err)
	}
	// Rerunning the batch (newer run) replaces it; an older batch run does not.
	if err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 8, model.SourceBatch, 2, 6)); err != nil {
		t.Fatalf("batch rerun: %v", err)
	}
	if err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 7, model.SourceBatch, 2, 6)); !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("older batch run: %v, want ErrStaleVersion", err)
	}
	got, _ := s.Get(ctx, model.Key{Window: "day", Start: T0.Truncate(24 * time.Hour)})
	if got.Source != model.SourceBatch || got.Version != 8 || !got.Exact {
		t.Fatalf("got %s v%d exact=%v, want batch v8 exact", got.Source, got.Version, got.Exact)
	}
}

func testInvalidRefused(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	bad := MakeList("hour", T0.Add(time.Minute), 1, model.SourceSpeed, 1, 1) // unaligned
	if err := s.Put(ctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("unaligned: %v, want ErrInvalid", err)
	}
}

func testRangeAndSince(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	for i := 0; i < 5; i++ {
		if err := s.Put(ctx, MakeList("hour", T0.Add(time.Duration(i)*time.Hour), 1, model.SourceSpeed, 1, uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, MakeList("day", T0.Truncate(24*time.Hour), 1, model.SourceSpeed, 1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, MakeList("hour", time.Time{}, 3, model.SourceSpeed, 1, 1)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Range(ctx, "hour", T0.Add(time.Hour), T0.Add(4*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Start.Equal(T0.Add(time.Hour)) || !got[2].Start.Equal(T0.Add(3*time.Hour)) {
		t.Fatalf("range: got %d lists %v", len(got), starts(got))
	}
	since, err := s.Since(ctx, T0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// live hour + hours 3 and 4; the day (starts before) is excluded.
	if len(since) != 3 {
		t.Fatalf("since: got %d lists %v, want 3", len(since), starts(since))
	}
}

func testReadersNeverSeeAMix(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	if err := s.Put(ctx, MakeList("hour", time.Time{}, 1, model.SourceSpeed, 100, 1)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := s.Get(ctx, model.Key{Window: "hour"})
			if err != nil {
				errc <- err
				return
			}
			for _, it := range l.Items {
				if it.Views != uint64(l.Version) {
					errc <- fmt.Errorf("torn read: version %d holds views %d", l.Version, it.Views)
					return
				}
			}
		}
	}()
	for v := int64(2); v <= 30; v++ {
		if err := s.Put(ctx, MakeList("hour", time.Time{}, v, model.SourceSpeed, 100, uint64(v))); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
}

func testVersions(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	v, ok := s.(store.Versioner)
	if !ok {
		t.Skipf("%T is not a store.Versioner", s)
	}
	stamps := func() map[string]store.Stamp {
		t.Helper()
		got, err := v.Versions(ctx, T0)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]store.Stamp{}
		for _, st := range got {
			if _, dup := out[st.Key.String()]; dup {
				t.Fatalf("versions: %s twice", st.Key)
			}
			out[st.Key.String()] = st
		}
		return out
	}
	put := func(l model.List) {
		t.Helper()
		if err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	live := MakeList("hour", time.Time{}, 3, model.SourceSpeed, 2, 3)
	topics := model.List{Window: model.TopicsList, Group: "eu", Score: "surge", AsOf: T0, Version: 4, Source: model.SourceSpeed,
		Status: model.StatusLive, ComputedAt: T0, Items: []model.Item{{Rank: 1, ItemID: "#a", Views: 9, Topic: &model.Topic{Score: 2}}}}
	hour := MakeList("hour", T0, 5, model.SourceSpeed, 2, 5)
	put(live)
	put(topics)
	put(hour)
	put(MakeList("hour", T0.Add(-time.Hour), 5, model.SourceSpeed, 2, 5)) // before since
	first := stamps()
	want := map[string]uint64{"live/hour": 3, "live/topics/eu/surge": 4, "hour/2026-11-14T10:00:00Z": 5}
	if len(first) != len(want) {
		t.Fatalf("versions since %s: %v, want the keys of %v", T0.Format(time.RFC3339), first, want)
	}
	for k, rank := range want {
		if st, ok := first[k]; !ok || st.Rank != rank {
			t.Fatalf("versions: %s is %+v, want rank %d", k, first[k], rank)
		}
	}
	if k := first["live/topics/eu/surge"].Key; k != topics.Key() {
		t.Fatalf("versions: topics key %+v, want %+v", k, topics.Key())
	}
	if k := first["hour/2026-11-14T10:00:00Z"].Key; !k.Start.Equal(T0) || k.Window != "hour" {
		t.Fatalf("versions: calendar key %+v", k)
	}

	// A refused write changes no stamp; a rewrite of the same version does; the batch's
	// exact list of a calendar window ranks above every speed version.
	if err := s.Put(ctx, MakeList("hour", time.Time{}, 2, model.SourceSpeed, 2, 2)); !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("stale put: %v", err)
	}
	if got := stamps()["live/hour"]; got != first["live/hour"] {
		t.Fatalf("a refused write moved the stamp: %+v, was %+v", got, first["live/hour"])
	}
	put(live)
	if got := stamps()["live/hour"]; got.Rank != 3 || got.Seq == first["live/hour"].Seq {
		t.Fatalf("a rewrite of version 3: stamp %+v, was %+v (want rank 3, another seq)", got, first["live/hour"])
	}
	exact := MakeList("hour", T0, 2, model.SourceBatch, 2, 5)
	put(exact)
	if got := stamps()["hour/2026-11-14T10:00:00Z"]; got.Rank != store.Rank(exact) || got.Rank != 2+1<<62 {
		t.Fatalf("batch over speed: stamp %+v, want rank %d", got, store.Rank(exact))
	}
	if got := stamps()["live/topics/eu/surge"]; got != first["live/topics/eu/surge"] {
		t.Fatalf("an untouched key's stamp moved: %+v, was %+v", got, first["live/topics/eu/surge"])
	}
}

func testChangeNotification(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	n, ok := s.(store.Notifier)
	if !ok {
		t.Skipf("%T is not a store.Notifier", s)
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := n.Changed()
	if n.Changed() != ch || closed(ch) {
		t.Fatal("Changed: want one open channel until a write")
	}
	if err := s.Put(ctx, MakeList("hour", time.Time{}, 3, model.SourceSpeed, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("a stored write did not close the channel")
	}
	next := n.Changed()
	if closed(next) {
		t.Fatal("the next generation's channel is closed before a write")
	}
	if err := s.Put(ctx, MakeList("hour", time.Time{}, 2, model.SourceSpeed, 1, 2)); !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("stale put: %v", err)
	}
	if closed(next) {
		t.Fatal("a refused write closed the channel")
	}
}

func starts(ls []model.List) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Key().String())
	}
	return out
}

// testDecayedList: a decayed list (half-life, each item's score beside its views) comes back
// as written, scores bit for bit, with its kind; a decayed list the batch claims, or one that
// says it is of another kind, is refused.
func testDecayedList(t *testing.T, ctx context.Context, open func(t *testing.T) store.Store) {
	s := open(t)
	want := MakeList("now", time.Time{}, 5, model.SourceSpeed, 0, 0)
	want.Kind, want.HalfLifeSeconds = model.ListScored, 3600
	for i, sc := range []float64{1233.5000000000002, 86.625, 0.1 + 0.2, 1e-3} {
		want.Items = append(want.Items, model.Item{Rank: i + 1, ItemID: fmt.Sprintf("V%d", i), Views: model.DecayedViews(sc), DecayedScore: sc})
	}
	if err := s.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, model.Key{Window: "now"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Items, want.Items) || got.HalfLifeSeconds != 3600 || got.Kind != model.ListScored {
		t.Fatalf("decayed list:\n got %+v\nwant %+v", got, want)
	}
	mislabelled := want
	mislabelled.Version, mislabelled.Kind = 6, model.ListItems
	if err := s.Put(ctx, mislabelled); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a decayed list of kind items: %v, want ErrInvalid", err)
	}
	bad := want
	bad.Version, bad.Source, bad.Status, bad.Exact = 6, model.SourceBatch, model.StatusExact, true
	if err := s.Put(ctx, bad); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a batch decayed list: %v, want ErrInvalid", err)
	}
}
