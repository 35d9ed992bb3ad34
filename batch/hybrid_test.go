package batch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"trending/archive"
	"trending/batch"
	"trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/serving/store"
	"trending/speed/merge"
	"trending/speed/sketch"
	"trending/speed/window"
)

// hybridRig is the whole all-time path over simulated days: an archive (the fixture) and two
// speed partitions fed the same events, partitioned by item as Kafka's key does, a merger and
// the batch, all on one serving store.
type hybridRig struct {
	t     *testing.T
	f     *fixture
	parts [2]*window.Partition
	st    store.Store
	mg    *merge.Merger
	k     int
}

func newHybridRig(t *testing.T, f *fixture, k int) *hybridRig {
	wc := window.DefaultConfig()
	wc.K, wc.M, wc.SinceDays, wc.Sketch = k, 2, 7, sketch.Config{Width: 1 << 10, Depth: 4}
	wc.Windows = []window.WindowConfig{{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch}}
	r := &hybridRig{t: t, f: f, st: boltStore(t), k: k}
	for i := range r.parts {
		p, err := window.New(wc)
		if err != nil {
			t.Fatal(err)
		}
		r.parts[i] = p
	}
	mc := merge.DefaultConfig()
	mc.K, mc.Partitions, mc.Store, mc.BaseRefresh = k, 2, r.st, time.Nanosecond
	mg, err := merge.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	r.mg = mg
	return r
}

// feed generates n events per partition spread over [from, from+span), archives them and
// counts them in the speed partitions, in event-time order. Item Vi lives in partition i%2.
func (r *hybridRig) feed(from time.Time, span time.Duration, n int) {
	for p := range int32(2) {
		first := r.f.next[p]
		byHour := map[time.Time][]archive.Row{}
		var evs []event.Event
		for i := range n {
			ts := from.Add(time.Duration(r.f.rng.Int64N(int64(span)))).Truncate(time.Millisecond)
			id := fmt.Sprintf("V%d", 2*r.f.rng.IntN(20)+int(p)) // a flat catalog of 40 items
			c := uint32(1 + r.f.rng.IntN(5))
			row := archive.Row{ItemID: id, Count: c, TS: ts.UnixMilli(), Partition: p, Offset: first + int64(i), IngestTS: ts.UnixMilli()}
			h := ts.Truncate(time.Hour)
			byHour[h] = append(byHour[h], row)
			if r.f.truth[h] == nil {
				r.f.truth[h] = map[string]uint64{}
			}
			r.f.truth[h][id] += uint64(c)
			evs = append(evs, event.Event{ItemID: id, Count: c, TS: ts})
		}
		r.f.next[p] = first + int64(n)
		r.f.write(p, first, first+int64(n)-1, byHour)
		slices.SortFunc(evs, func(a, b event.Event) int { return a.TS.Compare(b.TS) })
		for _, ev := range evs {
			r.parts[p].Add(ev)
		}
	}
}

// tick moves both partitions' watermark to t without counting anything.
func (r *hybridRig) tick(t time.Time) {
	for _, p := range r.parts {
		p.AdvanceTo(t)
	}
}

// publish does what the workers and the merger do at a publish tick: each partition reads the
// base, moves its boundary and reports its counts since it (and its sketch all-time list);
// the merger merges and writes the live all list, which it returns.
func (r *hybridRig) publish() model.List {
	r.t.Helper()
	ctx := context.Background()
	base, err := r.st.Get(ctx, model.Key{Window: model.BaseWindow})
	hasBase := err == nil
	var ids []string
	for _, it := range base.Items {
		ids = append(ids, it.ItemID)
	}
	for i, p := range r.parts {
		l, err := p.Top("all")
		if err != nil {
			r.t.Fatal(err)
		}
		b := sketch.BoundFor(1<<10, 4, l.Total)
		r.mg.Offer(model.Partial{Window: "all", Partition: i, AsOf: l.AsOf, Version: l.AsOf.UnixMilli(), Exact: l.Exact,
			Bound: &model.Bound{MaxOvercount: b.MaxOvercount, Probability: b.Probability}, Total: l.Total, Items: l.Items})
		if !hasBase {
			continue
		}
		if err := p.SetBoundary(base.Boundary); err != nil {
			r.t.Fatal(err)
		}
		sl, _ := p.Since(ids)
		r.mg.Offer(model.Partial{Window: model.SinceWindow, Partition: i, AsOf: sl.AsOf, Version: sl.AsOf.UnixMilli(), Exact: true,
			Total: sl.Total, Items: sl.Items, Boundary: sl.Boundary, From: sl.From, BaseVersion: base.Version, Base: sl.Base, Cutoff: sl.Cutoff})
	}
	if err := r.mg.Publish(ctx, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	l, err := r.st.Get(ctx, model.Key{Window: "all"})
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// check compares the live all list with the truth of every event before asOf: exact lists
// must equal it; others must carry a bound that holds.
func (r *hybridRig) check(l model.List, asOf time.Time) {
	r.t.Helper()
	truth := r.f.truthBefore(asOf)
	want := rank(truth)[:r.k]
	if l.Exact {
		if l.ErrorBound != nil || l.Incomplete || !slices.Equal(l.Items, want) {
			r.t.Fatalf("exact all-time list as of %s:\n got %v\nwant %v", l.AsOf, l.Items, want)
		}
		return
	}
	if l.ErrorBound == nil {
		r.t.Fatalf("an inexact all-time list without a bound: %+v", l)
	}
	for _, it := range l.Items {
		if v := truth[it.ItemID]; it.Views < v || float64(it.Views-v) > l.ErrorBound.MaxOvercount {
			r.t.Fatalf("%s listed at %d, truth %d, bound %v", it.ItemID, it.Views, v, l.ErrorBound.MaxOvercount)
		}
	}
}

// TestAllTimeHybridAgainstTruth: over four simulated days on both engines, the live all-time
// list is the speed layer's sketch list with its bound before any batch run, exact against
// the truth after the nightly run (the batch's base through B plus the partitions' counts
// since B), still exact after the next night's run moves B a day forward (the partitions drop
// the day the base now holds), and only bounded when the base is too short for the threshold
// test.
func TestAllTimeHybridAgainstTruth(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		const k = 4
		rig := newHybridRig(t, f, k)
		eng := open(t)
		ctx := context.Background()
		d0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) // across the month's end
		d := func(n int) time.Time { return d0.AddDate(0, 0, n) }
		rig.feed(d0, 2*24*time.Hour+12*time.Hour, 2000) // Nov 29 to Dec 1 noon
		asOf := d(2).Add(13 * time.Hour)
		rig.tick(asOf)

		// No batch yet: the sketch list, inexact, with its bound.
		l := rig.publish()
		if l.Exact || l.ErrorBound == nil || !l.Boundary.IsZero() {
			t.Fatalf("before any batch run: %+v", l)
		}
		rig.check(l, asOf)

		runs := 0
		nightly := func(date time.Time, factor int) {
			t.Helper()
			f.progress(asOf)
			runs++ // each run a minute later: its version is newer
			now := asOf.Add(time.Duration(runs) * time.Minute)
			r := newRunner(t, f, eng, rig.st, now, func(c *batch.Config) { c.K, c.BaseFactor, c.LookbackDays = k, factor, 3 })
			if _, err := r.Nightly(ctx, date); err != nil {
				t.Fatal(err)
			}
		}
		// The nightly run for Nov 30: B = Dec 1, the base from November's rollup.
		nightly(d(1), 10)
		l = rig.publish()
		if !l.Exact || !l.Boundary.Equal(d(2)) || l.Source != model.SourceSpeed {
			t.Fatalf("after the nightly run: exact %t boundary %s (want %s) bound %+v cutoff %d", l.Exact, l.Boundary, d(2), l.ErrorBound, l.Cutoff)
		}
		rig.check(l, asOf)

		// Later: more events, then the nightly run for Dec 1 moves B to Dec 2, with the
		// since-B counts spanning Dec 1 and 2 until then.
		rig.feed(d(2).Add(13*time.Hour), 20*time.Hour, 1000) // Dec 1 13:00 to Dec 2 09:00
		asOf = d(3).Add(10 * time.Hour)
		rig.tick(asOf)
		l = rig.publish()
		if !l.Exact || !l.Boundary.Equal(d(2)) {
			t.Fatalf("before the next night: exact %t boundary %s", l.Exact, l.Boundary)
		}
		rig.check(l, asOf)
		nightly(d(2), 10)
		l = rig.publish()
		if !l.Exact || !l.Boundary.Equal(d(3)) {
			t.Fatalf("after the next night: exact %t boundary %s bound %+v", l.Exact, l.Boundary, l.ErrorBound)
		}
		rig.check(l, asOf)
		for _, p := range rig.parts {
			if sl, _ := p.Since(nil); !sl.Boundary.Equal(d(3)) || sl.Total != sum(f.truthBefore(asOf))-sum(f.truthBefore(d(3)))-partOther(rig, p, asOf) {
				t.Fatalf("since counts after B moved: boundary %s total %d", sl.Boundary, sl.Total)
			}
		}

		// A base of only the top K: the threshold test cannot prove the list.
		nightly(d(2), 1)
		l = rig.publish()
		if l.Exact || l.ErrorBound == nil || l.Cutoff == 0 {
			t.Fatalf("with a base of K items: exact %t bound %+v cutoff %d, want a bounded list", l.Exact, l.ErrorBound, l.Cutoff)
		}
		rig.check(l, asOf)
	})
}

// partOther is the truth since the partition's boundary held by the other partition.
func partOther(r *hybridRig, p *window.Partition, asOf time.Time) uint64 {
	sl, _ := p.Since(nil)
	var n uint64
	for h, items := range r.f.truth {
		if h.Before(sl.Boundary) || !h.Before(asOf) {
			continue
		}
		for id, c := range items {
			if (r.parts[0] == p) != (itemPart(id) == 0) {
				n += c
			}
		}
	}
	return n
}

func itemPart(id string) int {
	var n int
	fmt.Sscanf(id, "V%d", &n)
	return n % 2
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
