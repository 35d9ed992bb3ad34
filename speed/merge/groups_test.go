package merge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"trending/model"
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
	if !got.Partial || fmt.Sprint(got.StalePartitions) != "[3]" {
		t.Fatalf("eu: partial %v stale %v, want [3]", got.Partial, got.StalePartitions)
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
	if !got.Partial || fmt.Sprint(got.StalePartitions) != "[2]" || got.Items[0].Views != 4 {
		t.Fatalf("us: partial %v stale %v items %+v, want partition 2 missing (GroupsFull)", got.Partial, got.StalePartitions, got.Items)
	}
	all, _ := st.Get(context.Background(), model.Key{Window: "hour"})
	if all.Partial {
		t.Fatalf("the list of all items is whole: stale %v", all.StalePartitions)
	}
}
