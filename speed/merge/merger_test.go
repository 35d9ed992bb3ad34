package merge_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/setting"
	"trending/internal/titles"
	"trending/model"
	"trending/model/topk"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	"trending/speed/merge"
)

var t0 = time.Date(2026, 11, 14, 10, 6, 0, 0, time.UTC)

func openStore(t *testing.T) store.Store {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func partial(window string, part int, asOf time.Time, items ...topk.Entry) model.Partial {
	return model.Partial{Window: window, Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Exact: true, Items: items}
}

func e(item string, n uint64) topk.Entry { return topk.Entry{Item: item, Count: n} }

// mergeConfig is merge.DefaultConfig with K, the expected partitions and the store given.
func mergeConfig(k, parts int, st store.Store) merge.Config {
	c := merge.DefaultConfig()
	c.K, c.Partitions, c.Store = k, parts, st
	return c
}

// settingFields returns the fields err's setting errors name.
func settingFields(err error) []string {
	var out []string
	for _, e := range setting.Errors(err) {
		out = append(out, e.Field)
	}
	return out
}

// TestZeroMeansZero: DefaultConfig and DefaultRunConfig hold the defaults and New takes the
// first; a zero K, Staleness or Retention, an empty Topic and a zero PublishEvery are refused
// by name instead of taking the default; a zero Partitions, BaseRefresh and Lookback are
// settings and stay zero.
func TestZeroMeansZero(t *testing.T) {
	st := openStore(t)
	if _, err := merge.New(mergeConfig(100, 0, st)); err != nil {
		t.Fatalf("New(DefaultConfig() + Store) = %v", err)
	}
	for field, zero := range map[string]func(*merge.Config){
		"K":         func(c *merge.Config) { c.K = 0 },
		"Staleness": func(c *merge.Config) { c.Staleness = 0 },
		"Retention": func(c *merge.Config) { c.Retention = 0 },
		"Store":     func(c *merge.Config) { c.Store = nil },
	} {
		c := mergeConfig(100, 0, st)
		zero(&c)
		_, err := merge.New(c)
		if got := settingFields(err); !errors.Is(err, setting.ErrConfig) || !slices.Equal(got, []string{field}) {
			t.Errorf("%s: New = %v (fields %v), want one setting error naming it", field, err, got)
		}
	}
	c := mergeConfig(100, 0, st)
	c.BaseRefresh = 0
	if _, err := merge.New(c); err != nil {
		t.Errorf("BaseRefresh 0 (every publish): %v", err)
	}

	m, _ := merge.New(mergeConfig(100, 0, st))
	kafka := eventlog.Plain("127.0.0.1:1")
	for field, zero := range map[string]func(*merge.RunConfig){
		"Topic":        func(rc *merge.RunConfig) { rc.Topic = "" },
		"PublishEvery": func(rc *merge.RunConfig) { rc.PublishEvery = 0 },
		"Lookback":     func(rc *merge.RunConfig) { rc.Lookback = -time.Second },
		"Kafka":        func(rc *merge.RunConfig) { rc.Kafka = nil },
	} {
		rc := merge.DefaultRunConfig()
		rc.Kafka = kafka
		zero(&rc)
		// Refused before anything connects: the broker at 127.0.0.1:1 is never dialled.
		err := m.Run(context.Background(), rc)
		if got := settingFields(err); !errors.Is(err, setting.ErrConfig) || !slices.Equal(got, []string{field}) {
			t.Errorf("%s: Run = %v (fields %v), want one setting error naming it", field, err, got)
		}
	}
	rc := merge.DefaultRunConfig()
	rc.Kafka, rc.Lookback = kafka, 0
	if err := rc.Validate(); err != nil {
		t.Errorf("Lookback 0 (from now): %v", err)
	}
	if got, want := merge.DefaultRunConfig().Lookback, 2*merge.DefaultConfig().Staleness+time.Minute; got != want {
		t.Errorf("DefaultRunConfig().Lookback = %s, want 2 x the default staleness + 1m = %s", got, want)
	}
}

func TestMergeExact(t *testing.T) {
	st := openStore(t)
	m, err := merge.New(mergeConfig(3, 2, st))
	if err != nil {
		t.Fatal(err)
	}
	m.Offer(partial("hour", 0, t0, e("V7", 48210), e("V1", 900), e("V2", 10)))
	m.Offer(partial("hour", 1, t0, e("V9", 5000), e("V3", 4000), e("V4", 3)))
	if err := m.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(context.Background(), model.Key{Window: "hour"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"V7", "V9", "V3"}
	// The merge is exact, but the speed layer's counts are not claimed exact: late events
	// may be missing. A live list is live.
	if len(got.Items) != 3 || got.Incomplete || got.Exact || got.Status != model.StatusLive || got.DroppedLate != 0 || got.Version != t0.UnixMilli() {
		t.Fatalf("got %+v", got)
	}
	for i, id := range want {
		if got.Items[i].ItemID != id || got.Items[i].Rank != i+1 || got.Items[i].Exact {
			t.Fatalf("rank %d: %+v, want %s, not exact", i+1, got.Items[i], id)
		}
	}
}

// calendar is a partition's list of the calendar hour starting at start.
func calendar(part int, start, asOf time.Time, final bool, dropped uint64, items ...topk.Entry) model.Partial {
	p := partial("hour", part, asOf, items...)
	p.Start, p.End, p.Final, p.DroppedLate = start, start.Add(time.Hour), final, dropped
	return p
}

// lateOnly is a partition's late-drop update of the closed hour starting at start.
func lateOnly(part int, start time.Time, dropped uint64) model.Partial {
	end := start.Add(time.Hour)
	return model.Partial{Window: "hour", Start: start, End: end, Final: true, LateOnly: true, Partition: part,
		AsOf: end, Version: end.UnixMilli(), Exact: true, DroppedLate: dropped}
}

// TestCalendarStatusAndDroppedLate: an open calendar hour is live; once every partition has
// sent its final list it is provisional, with the late drops summed over partitions, and the
// late-drop updates sent after the final lists raise the count without touching the items.
func TestCalendarStatusAndDroppedLate(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	m, _ := merge.New(mergeConfig(3, 3, st))
	h := t0.Truncate(time.Hour) // 10:00
	end := h.Add(time.Hour)
	key := model.Key{Window: "hour", Start: h}
	get := func() model.List {
		t.Helper()
		if err := m.Publish(ctx, end); err != nil {
			t.Fatal(err)
		}
		l, err := st.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	m.Offer(calendar(0, h, t0, false, 0, e("A", 10)))
	m.Offer(calendar(1, h, t0, false, 0, e("B", 8)))
	m.Offer(calendar(2, h, t0, false, 0, e("C", 5)))
	if l := get(); l.Status != model.StatusLive || l.Exact || l.DroppedLate != 0 || !l.End.Equal(end) {
		t.Fatalf("open hour: %+v", l)
	}
	// Two partitions close the hour; the third still counts in it: still live.
	m.Offer(calendar(0, h, end, true, 0, e("A", 12)))
	m.Offer(calendar(1, h, end, true, 0, e("B", 9)))
	if l := get(); l.Status != model.StatusLive {
		t.Fatalf("hour closed on 2 of 3 partitions: status %q, want live", l.Status)
	}
	m.Offer(calendar(2, h, end, true, 0, e("C", 6)))
	l := get()
	if l.Status != model.StatusProvisional || l.Exact || l.DroppedLate != 0 || l.Version != end.UnixMilli() || len(l.Items) != 3 {
		t.Fatalf("closed hour: %+v", l)
	}
	// Events too late for the hour arrive on partitions 0 and 2: updates of the count alone.
	m.Offer(lateOnly(0, h, 4))
	m.Offer(lateOnly(2, h, 1))
	m.Offer(lateOnly(0, h, 7)) // a running total: replaces 4
	m.Offer(lateOnly(0, h, 5)) // an older total, replayed: ignored
	l = get()
	if l.Status != model.StatusProvisional || l.DroppedLate != 8 || len(l.Items) != 3 || l.Items[0].ItemID != "A" || l.Items[0].Views != 12 {
		t.Fatalf("after late drops: status %q dropped_late %d items %+v, want provisional, 7+1, the final items", l.Status, l.DroppedLate, l.Items)
	}
	// The final list sent again (a restarted worker) keeps the larger count.
	m.Offer(calendar(0, h, end, true, 0, e("A", 12)))
	if l = get(); l.DroppedLate != 8 {
		t.Fatalf("re-sent final list: dropped_late %d, want 8", l.DroppedLate)
	}
	// Late drops of an hour no partition's list is held for publish nothing.
	other := h.Add(-time.Hour)
	m.Offer(lateOnly(1, other, 3))
	if err := m.Publish(ctx, end); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, model.Key{Window: "hour", Start: other}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("late drops alone published a list: %v", err)
	}
	// A partition that counted nothing in the hour but dropped late events of it.
	m2, _ := merge.New(mergeConfig(3, 0, st))
	m2.Offer(calendar(0, other, other.Add(time.Hour), true, 0, e("A", 1)))
	m2.Offer(lateOnly(1, other, 3))
	l, _, ok := m2.Build(model.Key{Window: "hour", Start: other})
	if !ok || l.Status != model.StatusProvisional || l.DroppedLate != 3 || l.Incomplete {
		t.Fatalf("late drops of a partition without a list: ok %v %+v", ok, l)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLateOnlyMessageKey(t *testing.T) {
	h := t0.Truncate(time.Hour)
	final, late := calendar(3, h, h.Add(time.Hour), true, 0), lateOnly(3, h, 1)
	if string(final.MessageKey()) == string(late.MessageKey()) {
		t.Fatalf("late-only update shares the final list's key %s: compaction would drop the list", final.MessageKey())
	}
	b, _ := late.Encode()
	got, err := model.DecodePartial(b)
	if err != nil || !got.LateOnly || got.DroppedLate != 1 || !got.Final {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
}

// TestMergeTopics checks topics partials are joined by score, not by count: a small topic
// surging (few mentions, high ratio) outranks a big usual one, the list keeps the smallest
// Limit, and the topics fields reach the store.
func TestMergeTopics(t *testing.T) {
	st := openStore(t)
	m, err := merge.New(mergeConfig(100, 2, st))
	if err != nil {
		t.Fatal(err)
	}
	w := model.TopicsKey("eu", "surge").Name()
	p0 := model.Partial{Window: w, Partition: 0, AsOf: t0, Version: t0.UnixMilli(), Limit: 2,
		Bound:    &model.Bound{MaxOvercount: 20, Probability: 0.993},
		Baseline: &model.Baseline{Days: 7, Wanted: 7, MaxOvercount: 20.2},
		Topics:   []model.Item{{ItemID: "#sport", Views: 60000, Topic: &model.Topic{Score: 1.09, Expected: 55000}}, {ItemID: "#junk", Views: 300, Topic: &model.Topic{Score: 1.01}}}}
	p1 := model.Partial{Window: w, Partition: 1, AsOf: t0, Version: t0.UnixMilli(), Limit: 2,
		Bound:    &model.Bound{MaxOvercount: 25, Probability: 0.993},
		Baseline: &model.Baseline{Days: 4, Wanted: 7, Unavailable: 3, MaxOvercount: 19.8},
		Topics:   []model.Item{{ItemID: "#marathon", Views: 4000, Topic: &model.Topic{Score: 16.2, Expected: 200, NewShare: 0.1}}}}
	m.Offer(p0)
	m.Offer(p1)
	if err := m.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(context.Background(), model.Key{Window: w})
	if err != nil {
		t.Fatal(err)
	}
	if got.Exact || got.Incomplete || got.ErrorBound == nil || got.ErrorBound.MaxOvercount != 25 || len(got.Items) != 2 {
		t.Fatalf("got %+v", got)
	}
	// The baseline is the worst partition's: partition 1 could not read 3 days from the store.
	if b := got.Baseline; b == nil || *b != (model.Baseline{Days: 4, Wanted: 7, Unavailable: 3, MaxOvercount: 20.2}) {
		t.Fatalf("baseline %+v, want the worst partition's: 4 of 7 days, 3 unavailable, bound 20.2", b)
	}
	want := []model.Item{
		{Rank: 1, ItemID: "#marathon", Views: 4000, Topic: &model.Topic{Score: 16.2, Expected: 200, NewShare: 0.1}},
		{Rank: 2, ItemID: "#sport", Views: 60000, Topic: &model.Topic{Score: 1.09, Expected: 55000}},
	}
	for i := range want {
		if !reflect.DeepEqual(got.Items[i], want[i]) {
			t.Fatalf("rank %d: %+v, want %+v", i+1, got.Items[i], want[i])
		}
	}
	// A partition's empty list replaces its old one: the topic left the list.
	p1.Topics, p1.Version, p1.AsOf = nil, t0.Add(time.Minute).UnixMilli(), t0.Add(time.Minute)
	m.Offer(p1)
	if err := m.Publish(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _ = st.Get(context.Background(), model.Key{Window: w})
	if len(got.Items) != 2 || got.Items[0].ItemID != "#sport" || got.Items[1].ItemID != "#junk" {
		t.Fatalf("after #marathon left: %+v", got.Items)
	}
}

// A crashed partition (docs/requirements.md, "Failures"): partition 1 crashes;
// at the next minute the merger reuses its last list and marks the result
// partial, so its leader does not vanish.
func TestStalePartitionReused(t *testing.T) {
	st := openStore(t)
	m, _ := merge.New(func() merge.Config { c := mergeConfig(2, 3, st); c.Staleness = 90 * time.Second; return c }())
	m.Offer(partial("hour", 0, t0, e("A", 10)))
	m.Offer(partial("hour", 1, t0, e("V7", 48210)))
	m.Offer(partial("hour", 0, t0.Add(2*time.Minute), e("A", 12)))
	m.Publish(context.Background(), t0)
	got, _ := st.Get(context.Background(), model.Key{Window: "hour"})
	if !got.Incomplete || fmt.Sprint(got.StalePartitions) != "[1 2]" || got.Exact {
		t.Fatalf("partial=%v stale=%v exact=%v, want partial, stale [1 2] (1 old, 2 missing), not exact", got.Incomplete, got.StalePartitions, got.Exact)
	}
	if got.Items[0].ItemID != "V7" {
		t.Fatalf("the stale partition's leader must stay: got %+v", got.Items)
	}
}

// A stale write (docs/requirements.md, "Serving"): a merger that paused publishes an older
// list; the store keeps the newer.
func TestStandbyCannotRegress(t *testing.T) {
	st := openStore(t)
	active, _ := merge.New(mergeConfig(2, 0, st))
	standby, _ := merge.New(mergeConfig(2, 0, st))
	active.Offer(partial("hour", 0, t0, e("NEW", 2)))
	standby.Offer(partial("hour", 0, t0.Add(-time.Minute), e("OLD", 1)))
	if err := active.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if err := standby.Publish(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Get(context.Background(), model.Key{Window: "hour"})
	if got.Items[0].ItemID != "NEW" || got.Version != t0.UnixMilli() {
		t.Fatalf("store regressed to %+v", got)
	}
	// And an older partial offered to the same merger is ignored.
	active.Offer(partial("hour", 0, t0.Add(-5*time.Minute), e("OLDER", 9)))
	l, _, _ := active.Build(model.Key{Window: "hour"})
	if l.Items[0].ItemID != "NEW" {
		t.Fatalf("older partial replaced a newer one: %+v", l.Items)
	}
}

func TestSketchBound(t *testing.T) {
	st := openStore(t)
	m, _ := merge.New(mergeConfig(2, 0, st))
	p0 := partial("month", 0, t0, e("A", 100))
	p0.Exact, p0.Bound = false, &model.Bound{MaxOvercount: 40, Probability: 0.993}
	p1 := partial("month", 1, t0, e("B", 90))
	p1.Exact, p1.Bound = false, &model.Bound{MaxOvercount: 55, Probability: 0.99}
	m.Offer(p0)
	m.Offer(p1)
	l, _, _ := m.Build(model.Key{Window: "month"})
	if l.Exact || l.ErrorBound == nil || l.ErrorBound.MaxOvercount != 55 || l.ErrorBound.Probability != 0.99 || l.Items[0].Exact {
		t.Fatalf("bound %+v exact %v", l.ErrorBound, l.Exact)
	}
}

type failingTitles struct{ fail bool }

func (f *failingTitles) Titles(_ context.Context, ids []string) (map[string]titles.Meta, error) {
	if f.fail {
		return nil, errors.New("metadata store down")
	}
	out := map[string]titles.Meta{}
	for _, id := range ids {
		out[id] = titles.Meta{Title: "Title of " + id, Thumbnail: "/img/" + id + ".jpg"}
	}
	return out, nil
}

// TestTitlesReusedOnFailure: the merger's lists, written through the store every writer
// gets (store.WithTitles over internal/titles), carry their items' titles, and keep the last
// known ones when the source fails.
func TestTitlesReusedOnFailure(t *testing.T) {
	st := openStore(t)
	src := &failingTitles{}
	tc := titles.DefaultConfig()
	tc.Source = src
	attach, err := titles.New(tc)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := merge.New(mergeConfig(2, 0, store.WithTitles(st, attach)))
	m.Offer(partial("hour", 0, t0, e("V7", 5)))
	m.Publish(context.Background(), t0)
	src.fail = true
	m.Offer(partial("hour", 0, t0.Add(time.Minute), e("V7", 6)))
	m.Publish(context.Background(), t0)
	got, _ := st.Get(context.Background(), model.Key{Window: "hour"})
	if got.Items[0].Title != "Title of V7" || got.Items[0].Thumbnail != "/img/V7.jpg" || got.Items[0].Views != 6 {
		t.Fatalf("got %+v, want the previous title and thumbnail kept on a failed lookup", got.Items[0])
	}
}

// runSuite produces partials to a real broker and checks Run publishes the merged list.
func runSuite(t *testing.T, addr string) {
	ctx := itest.Context(t, 60*time.Second)
	topic := itest.Name(t, "partials")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, BatchTimeout: 5 * time.Millisecond}
	defer w.Close()
	now := time.Now().UTC().Truncate(time.Minute)
	for part, items := range [][]topk.Entry{{e("V1", 30)}, {e("V2", 20)}} {
		p := partial("hour", part, now, items...)
		b, _ := p.Encode()
		if err := w.WriteMessages(ctx, kafka.Message{Key: p.MessageKey(), Value: b}); err != nil {
			t.Fatal(err)
		}
	}
	st := openStore(t)
	m, _ := merge.New(mergeConfig(10, 2, st))
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- m.Run(rctx, func() merge.RunConfig {
			rc := merge.DefaultRunConfig()
			rc.Kafka, rc.Topic, rc.PublishEvery = eventlog.Plain([]string{addr}...), topic, 100*time.Millisecond
			return rc
		}())
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := st.Get(ctx, model.Key{Window: "hour"})
		if err == nil && len(l.Items) == 2 && !l.Incomplete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("merged list not published: %+v %v", l, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestRunEmbedded(t *testing.T) {
	b, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	runSuite(t, b.Addr)
}

func TestRunKafka(t *testing.T) { runSuite(t, itest.Kafka(t)) }
