package merge_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/merge"
)

// TestGroupLists: a group value's list merges the partitions that sent one; a partition that
// sent none is missing from it only when its list of all items is missing or stale, or it
// ran out of group values (GroupsFull), not because it never saw the value. Lists of
// unconfigured values are dropped.
func TestGroupLists(t *testing.T) {
	st := openStore(t)
	c := mergeConfig(3, 4, st)
	c.Staleness = 90 * time.Second
	c.Windows.Groups = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
	m, err := merge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	eu, us := model.Key{Window: "hour", Group: "eu"}.Name(), model.Key{Window: "hour", Group: "us"}.Name()
	now := t0.Add(5 * time.Minute)
	m.Offer(partial("hour", 0, now, e("A", 10), e("B", 9)))
	m.Offer(partial("hour", 1, now, e("C", 8)))
	m.Offer(partial("hour", 2, now, e("D", 7)))
	m.Offer(partial("hour", 3, t0, e("E", 6))) // stale: 5 minutes behind
	m.Offer(partial(eu, 0, now, e("A", 4)))
	m.Offer(partial(eu, 1, now, e("C", 5)))
	m.Offer(partial(us, 0, now, e("B", 3)))
	m.Offer(partial(model.Key{Window: "hour", Group: "apac"}.Name(), 0, now, e("A", 1)))
	if err := m.Publish(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(context.Background(), model.Key{Window: "hour", Group: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%s %d %s", got.Items[0].ItemID, got.Items[0].Views, got.Items[1].ItemID) != "C 5 A" || got.Group != "eu" || got.Window != "hour" {
		t.Fatalf("eu list %+v", got)
	}
	// Partition 2 sent a fresh list of all items and nothing for eu: it saw no eu events.
	// Partition 3 is stale everywhere.
	if !got.Incomplete || fmt.Sprint(got.StalePartitions) != "[3]" {
		t.Fatalf("eu: partial %v stale %v, want [3]", got.Incomplete, got.StalePartitions)
	}
	if _, err := st.Get(context.Background(), model.Key{Window: "hour", Group: "apac"}); err == nil {
		t.Fatal("a list of an unconfigured group value was stored")
	}
	// Partition 2 ran out of group values: its counts of us may be missing.
	later := now.Add(time.Second)
	full := partial("hour", 2, later, e("D", 8))
	full.GroupsFull = true
	m.Offer(full)
	m.Offer(partial("hour", 3, later, e("E", 7)))
	m.Offer(partial(us, 0, later, e("B", 4)))
	if err := m.Publish(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Get(context.Background(), model.Key{Window: "hour", Group: "us"})
	if !got.Incomplete || fmt.Sprint(got.StalePartitions) != "[2]" || got.Items[0].Views != 4 {
		t.Fatalf("us: partial %v stale %v items %+v, want partition 2 missing (GroupsFull)", got.Incomplete, got.StalePartitions, got.Items)
	}
	all, _ := st.Get(context.Background(), model.Key{Window: "hour"})
	if all.Incomplete {
		t.Fatalf("the list of all items is whole: stale %v", all.StalePartitions)
	}
}

// TestGroupListsTwoLevels: through a two-level merge a region's list is what one level gives:
// a salted item's shares summed, and only the partitions that may miss the region's counts
// marked (a partition that ran out of group values, carried by its shard merger's members),
// not those that never saw the region.
func TestGroupListsTwoLevels(t *testing.T) {
	regions := func(c *merge.Config) {
		c.Windows.Groups = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
	}
	eu, us := model.Key{Window: "hour", Group: "eu"}.Name(), model.Key{Window: "hour", Group: "us"}.Name()
	now := t0.Add(5 * time.Minute)
	salted := func(p model.Partial, n uint64) model.Partial {
		p.Salted = []model.SaltedCount{{Item: "HOT", Count: n}}
		return p
	}
	full := partial("hour", 2, now, e("C", 8))
	full.GroupsFull = true
	ps := []model.Partial{
		partial("hour", 0, now, e("A", 10)), partial("hour", 1, now, e("B", 9)), full, partial("hour", 3, now, e("D", 7)),
		salted(partial(eu, 0, now, e("A", 4), e("HOT", 3)), 3), salted(partial(eu, 1, now, e("B", 2)), 5), salted(partial(eu, 3, now, e("D", 1)), 4),
		partial(us, 0, now, e("A", 6)),
	}
	lists := map[string]model.List{}
	for name, offer := range map[string]func(*merge.Merger){
		"one level": func(m *merge.Merger) {
			for _, p := range ps {
				m.Offer(p)
			}
		},
		"two levels": func(m *merge.Merger) {
			for _, p := range twoLevels(t, 3, 2, ps, now, regions) {
				m.Offer(p)
			}
		},
	} {
		st := openStore(t)
		c := mergeConfig(3, 4, st)
		c.Staleness = 90 * time.Second
		regions(&c)
		m, err := merge.New(c)
		if err != nil {
			t.Fatal(err)
		}
		offer(m)
		if err := m.Publish(context.Background(), now); err != nil {
			t.Fatal(err)
		}
		for _, r := range []string{"eu", "us"} {
			l, err := st.Get(context.Background(), model.Key{Window: "hour", Group: r})
			if err != nil {
				t.Fatalf("%s: %s: %v", name, r, err)
			}
			lists[name+" "+r] = l
		}
	}
	for _, name := range []string{"one level", "two levels"} {
		e, u := lists[name+" eu"], lists[name+" us"]
		// HOT: 3 + 5 + 4 over three partitions, each under its partition's top.
		if fmt.Sprint(entriesOf(e)) != "[{HOT 12} {A 4} {B 2}]" || fmt.Sprint(e.StalePartitions) != "[2]" {
			t.Errorf("%s: eu %v stale %v, want HOT 12 first and partition 2 (out of group values) missing", name, entriesOf(e), e.StalePartitions)
		}
		if fmt.Sprint(entriesOf(u)) != "[{A 6}]" || fmt.Sprint(u.StalePartitions) != "[2]" {
			t.Errorf("%s: us %v stale %v, want partition 2 only (1 and 3 never saw us)", name, entriesOf(u), u.StalePartitions)
		}
	}
}

// TestGroupDecayedList: a region's list of a decayed window merges as the list of all items
// does: scores brought to the newest as-of, the half-life checked, served as a decayed list of
// the region.
func TestGroupDecayedList(t *testing.T) {
	st := openStore(t)
	c := mergeConfig(3, 2, st)
	var err error
	if c.Windows, err = windowset.Parse("hour=sliding:1h/1m,now=decayed:1h:exact"); err != nil {
		t.Fatal(err)
	}
	c.Windows.Groups = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu"}}
	m, err := merge.New(c)
	if err != nil {
		t.Fatal(err)
	}
	name := model.Key{Window: "now", Group: "eu"}.Name()
	dec := func(window string, part int, at time.Time, hl int64, s ...topk.Scored) model.Partial {
		return model.Partial{Window: window, Partition: part, AsOf: at, Version: at.UnixMilli(), Exact: true, HalfLifeSeconds: hl, Scored: s}
	}
	m.Offer(dec("now", 0, t0, 3600, topk.Scored{Item: "a", Score: 10}))
	m.Offer(dec("now", 1, t0, 3600, topk.Scored{Item: "c", Score: 9}))
	m.Offer(dec(name, 0, t0, 3600, topk.Scored{Item: "a", Score: 6}))
	m.Offer(dec(name, 1, t0.Add(-time.Minute), 3600, topk.Scored{Item: "c", Score: 8}))
	m.Offer(dec(name, 1, t0.Add(-30*time.Second), 60, topk.Scored{Item: "x", Score: 99})) // another half-life: dropped
	if err := m.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	l, err := st.Get(context.Background(), model.Key{Window: "now", Group: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	c8 := 8 * math.Exp2(-1.0/60)
	if l.HalfLifeSeconds != 3600 || l.Group != "eu" || len(l.Items) != 2 || l.Items[0].ItemID != "c" || math.Abs(l.Items[0].DecayedScore-c8) > 1e-9 ||
		l.Items[1].ItemID != "a" || l.Items[1].DecayedScore != 6 || l.Incomplete {
		t.Fatalf("eu's decayed list %+v", l)
	}
}
