package batch_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trending/archive"
	"trending/batch"
	"trending/model"
	"trending/model/topicrules"
	"trending/serving/store"
)

// topicsWorld is a generated archive of topic mentions with regions, users and account
// ages, and every archived row once (by partition and offset): the input of the
// brute-force truth.
type topicsWorld struct {
	*fixture
	rows map[time.Time]map[[2]int64]archive.Row // hour -> (partition, offset) -> row
}

var (
	topicsH  = day0.Add(7*24*time.Hour + 10*time.Hour) // the hour listed, 7 days of baseline before
	topicsH2 = topicsH.Add(time.Hour)                  // the next hour: only 4 baseline days have data
)

func newTopicsWorld(t *testing.T) *topicsWorld {
	w := &topicsWorld{fixture: newFixture(t), rows: map[time.Time]map[[2]int64]archive.Row{}}
	for d := range 7 {
		w.hour(day0.Add(time.Duration(d)*24*time.Hour+10*time.Hour), 500, "")
	}
	for d := 3; d < 7; d++ {
		w.hour(day0.Add(time.Duration(d)*24*time.Hour+11*time.Hour), 400, "")
	}
	w.hour(topicsH, 700, "quake")
	w.hour(topicsH2, 700, "#marathon") // a usual topic, surging in eu against its baseline
	w.progress(day0.Add(30 * 24 * time.Hour))
	return w
}

var topicNames = []string{"#marathon", "#sport", "#Sport", "cheap_spam_now", "#bots", "tail1", "tail2", "tail3", "tail4"}
var regionsOf = []string{"eu", "us", "", "xx"} // xx is not configured: world only

// hour archives n mentions of hour h, half per partition, and for partition 0 also a
// retried roll covering the same offsets again (the reader and the engine count each once).
// surge, when set, is a topic mentioned a lot in eu this hour only.
func (w *topicsWorld) hour(h time.Time, n int, surge string) {
	w.t.Helper()
	for p := range int32(2) {
		first := w.next[p]
		var rows []archive.Row
		for i := range n / 2 {
			rows = append(rows, w.mention(h, p, first+int64(i), surge))
		}
		w.next[p] = first + int64(len(rows))
		w.keep(rows)
		if p == 0 {
			half := len(rows) / 2
			w.write(p, first, first+int64(half)-1, map[time.Time][]archive.Row{h: rows[:half]})
			w.write(p, first+int64(half), w.next[p]-1, map[time.Time][]archive.Row{h: rows[half:]})
		}
		w.write(p, first, w.next[p]-1, map[time.Time][]archive.Row{h: rows})
	}
}

func (w *topicsWorld) keep(rows []archive.Row) {
	for _, r := range rows {
		h := time.UnixMilli(r.TS).UTC().Truncate(time.Hour)
		if w.rows[h] == nil {
			w.rows[h] = map[[2]int64]archive.Row{}
		}
		w.rows[h][[2]int64{int64(r.Partition), r.Offset}] = r
	}
}

func (w *topicsWorld) mention(h time.Time, p int32, off int64, surge string) archive.Row {
	rng := w.rng
	ts := h.Add(time.Duration(rng.Int64N(int64(time.Hour))))
	r := archive.Row{Count: 1, TS: ts.UnixMilli(), Partition: p, Offset: off, IngestTS: ts.UnixMilli()}
	switch x := rng.IntN(100); {
	case surge != "" && x < 30:
		r.ItemID, r.Region = surge, "eu"
	case x < 45:
		r.ItemID = "#bots" // new accounts only: over the review share
	default:
		r.ItemID = topicNames[rng.IntN(len(topicNames))]
	}
	if rng.IntN(10) < 7 || r.ItemID == "#bots" {
		u := rng.IntN(60)
		r.UserID = fmt.Sprintf("u%d", u)
		if r.Region == "" {
			r.Region = regionsOf[u%len(regionsOf)]
		}
		if age := int32(u % 50); u%3 != 0 || r.ItemID == "#bots" {
			if r.ItemID == "#bots" {
				age = 1
			}
			r.AccountAgeDays = &age
		}
	} else {
		r.Count = uint32(1 + rng.IntN(3))
		r.Region = cmp.Or(r.Region, regionsOf[rng.IntN(len(regionsOf))])
	}
	return r
}

// truthCounts is the brute force of one hour: list -> topic -> (tenths, new tenths).
func (w *topicsWorld) truthCounts(h time.Time) (map[string]map[string][2]uint64, uint64) {
	rows := make([]archive.Row, 0, len(w.rows[h]))
	for _, r := range w.rows[h] {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b archive.Row) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	out := map[string]map[string][2]uint64{}
	seen := map[string]bool{}
	var total uint64
	for _, r := range rows {
		if r.ItemID == "cheap_spam_now" { // the blocklist holds "spam"
			continue
		}
		if r.UserID != "" {
			k := fmt.Sprintf("%s\x00%s\x00%d", r.UserID, r.ItemID, r.TS/(15*60*1000))
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		isNew := r.AccountAgeDays != nil && *r.AccountAgeDays < 30
		wt := uint64(10)
		if isNew {
			wt = 3
		}
		if r.UserID == "" {
			wt *= uint64(r.Count)
		}
		lists := []string{"world"}
		if r.Region == "eu" || r.Region == "us" {
			lists = append(lists, r.Region)
		}
		for _, l := range lists {
			if out[l] == nil {
				out[l] = map[string][2]uint64{}
			}
			c := out[l][r.ItemID]
			c[0] += wt
			if isNew {
				c[1] += wt
			}
			out[l][r.ItemID] = c
		}
		total += wt
	}
	return out, total
}

// truthList is the expected list of hour h: floor 10, eu by surge, the others by volume,
// review share 0.6 and cut 0.1, 8 items.
func (w *topicsWorld) truthList(h time.Time, list string) []model.Item {
	cur, _ := w.truthCounts(h)
	var days []map[string][2]uint64
	for d := 1; d <= 7; d++ {
		c, total := w.truthCounts(h.Add(-time.Duration(d) * 24 * time.Hour))
		if total > 0 {
			days = append(days, c[list])
		}
	}
	var out []model.Item
	for topic, c := range cur[list] {
		m := float64(c[0]) / 10
		if m < 10 {
			continue
		}
		var exp float64
		for _, d := range days {
			exp += float64(d[topic][0]) / 10
		}
		if len(days) > 0 {
			exp /= float64(len(days))
		}
		it := model.Item{ItemID: topic, Views: (c[0] + 5) / 10, Exact: true, Topic: &model.Topic{Expected: exp, Score: m, NewShare: float64(c[1]) / float64(c[0])}}
		if list == "eu" {
			it.Score = (m + 50) / (exp + 50)
			if it.Score < 3 {
				continue
			}
		}
		if it.NewShare > 0.6 {
			it.Score, it.Review = it.Score*0.1, true
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b model.Item) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ItemID, b.ItemID))
	})
	out = out[:min(8, len(out))]
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

func topicsConfig(t *testing.T) batch.TopicsConfig {
	t.Helper()
	bl := filepath.Join(t.TempDir(), "blocklist.txt")
	if err := os.WriteFile(bl, []byte("spam\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := batch.DefaultTopicsConfig()
	c.Regions, c.Scores, c.Blocklist, c.ListSize = []string{"eu", "us"}, map[string]topicrules.Score{"eu": topicrules.Surge}, bl, 8
	c.Surge.Floor = 10
	return c
}

// topicsEngine is an exact engine that also keeps the topics rollups.
type topicsEngine interface {
	batch.Engine
	batch.TopicsEngine
}

// topicsEngines runs fn against both engines, as engines does.
func topicsEngines(t *testing.T, fn func(t *testing.T, open func(t *testing.T) topicsEngine)) {
	t.Run("clickhouse", func(t *testing.T) {
		fn(t, func(t *testing.T) topicsEngine { e, _, _ := openCH(t); return e })
	})
	t.Run("native", func(t *testing.T) {
		fn(t, func(t *testing.T) topicsEngine { return nativeEngine(t) })
	})
	t.Run("clickhouse-cluster", func(t *testing.T) {
		fn(t, func(t *testing.T) topicsEngine { e, _, _ := openCHCluster(t); return e })
	})
}

func newTopics(t *testing.T, w *topicsWorld, eng topicsEngine, st store.Store, cfg batch.TopicsConfig) *batch.Topics {
	t.Helper()
	r := newRunner(t, w.fixture, eng, st, topicsH2.Add(3*time.Hour), nil)
	tp, err := batch.NewTopics(r, eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func nativeEngine(t *testing.T) *batch.Native {
	t.Helper()
	e, err := batch.OpenNative(filepath.Join(t.TempDir(), "rollups.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func checkTopics(t *testing.T, w *topicsWorld, st store.Store, h time.Time) {
	t.Helper()
	for _, list := range []string{"world", "eu", "us"} {
		score := "volume"
		if list == "eu" {
			score = "surge"
		}
		k := model.Key{Window: model.TopicsList, Group: list, Score: score, Start: h}
		l, err := st.Get(context.Background(), k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if l.Source != model.SourceBatch || !l.Exact || !l.End.Equal(h.Add(time.Hour)) {
			t.Fatalf("%s: source %s exact %v end %s", k, l.Source, l.Exact, l.End)
		}
		want := w.truthList(h, list)
		if len(want) == 0 {
			t.Fatalf("%s: the generated truth is empty; the test would prove nothing", k)
		}
		if len(l.Items) != len(want) {
			t.Fatalf("%s: %d items, want %d:\ngot  %+v\nwant %+v", k, len(l.Items), len(want), l.Items, want)
		}
		for i := range want {
			g, e := l.Items[i], want[i]
			if g.ItemID != e.ItemID || g.Views != e.Views || g.Rank != e.Rank || g.Review != e.Review || !g.Exact ||
				!near(g.Score, e.Score) || !near(g.Expected, e.Expected) || !near(g.NewShare, e.NewShare) {
				t.Fatalf("%s rank %d:\ngot  %+v\nwant %+v", k, i+1, g, e)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func built(rep batch.Report) []string {
	var out []string
	for _, o := range rep.Outcomes {
		if o.Built && o.Window.Level == batch.TopicsRollup {
			out = append(out, o.Window.String())
		}
	}
	slices.Sort(out)
	return out
}

func published(rep batch.Report) []string {
	var out []string
	for _, o := range rep.Outcomes {
		if o.Published {
			out = append(out, o.Window.String())
		}
	}
	slices.Sort(out)
	return out
}

// TestTopicsExactAgainstTruth: the regional lists of two closed hours equal a brute force
// with the same rules (dedupe per user, topic and 15-minute slot; new-account weight;
// blocklist; unconfigured regions to world only; floor; surge against the same-hour mean
// of the days with data; review cut), despite retried rolls in the archive; the speed
// list of the hour is replaced with a reconciliation; a rerun does nothing; late data
// rebuilds only its hour and republishes only the lists that depend on it.
func TestTopicsExactAgainstTruth(t *testing.T) {
	topicsEngines(t, testTopicsExact)
}

func testTopicsExact(t *testing.T, open func(t *testing.T) topicsEngine) {
	ctx := context.Background()
	w := newTopicsWorld(t)
	eng, st := open(t), boltStore(t)
	speed := model.List{Window: model.TopicsList, Group: "eu", Score: "surge", Start: topicsH, End: topicsH.Add(time.Hour), AsOf: topicsH.Add(time.Hour),
		Version: 5, Source: model.SourceSpeed, Status: model.StatusProvisional, ComputedAt: topicsH,
		Items: []model.Item{{Rank: 1, ItemID: "quake", Views: 9999, Topic: &model.Topic{Score: 40}}, {Rank: 2, ItemID: "nothing", Views: 10, Topic: &model.Topic{Score: 1}}}}
	if err := st.Put(ctx, speed); err != nil {
		t.Fatal(err)
	}
	hours := []batch.Window{{Level: batch.Hour, Start: topicsH}, {Level: batch.Hour, Start: topicsH2}}

	rep, err := newTopics(t, w, eng, st, topicsConfig(t)).Recompute(ctx, hours)
	if err != nil {
		t.Fatal(err)
	}
	// The two hours and their baseline days (7 + 7, of which 4 + 7 hold data).
	if got := built(rep); len(got) != 16 {
		t.Fatalf("built %d hour rollups, want 16: %v", len(got), got)
	}
	if got := published(rep); len(got) != 6 {
		t.Fatalf("published %v, want 3 lists of 2 hours", got)
	}
	checkTopics(t, w, st, topicsH)
	checkTopics(t, w, st, topicsH2)
	eu, err := st.Get(ctx, model.Key{Window: "topics/eu/surge", Start: topicsH})
	if err != nil {
		t.Fatal(err)
	}
	if eu.Items[0].ItemID != "quake" {
		t.Fatalf("eu surge list %+v: the eu-only surge should top it", eu.Items)
	}
	r := eu.Reconciliation
	wantRecall := 1.0 // quake is the exact top; "nothing" is not listed
	if len(eu.Items) > 1 {
		wantRecall = 0.5
	}
	if r == nil || r.SpeedVersion != 5 || r.RecallAtK != wantRecall || r.MaxAbsError != 9999-eu.Items[0].Views {
		t.Fatalf("reconciliation %+v, want speed version 5, recall %v, max abs error %d", r, wantRecall, 9999-eu.Items[0].Views)
	}

	t.Run("rerun is idempotent", func(t *testing.T) {
		rep, err := newTopics(t, w, eng, st, topicsConfig(t)).Recompute(ctx, hours)
		if err != nil {
			t.Fatal(err)
		}
		if b, p := built(rep), published(rep); len(b) != 0 || len(p) != 0 {
			t.Fatalf("rerun built %v and published %v, want nothing", b, p)
		}
		again, _ := st.Get(ctx, model.Key{Window: "topics/eu/surge", Start: topicsH})
		if again.Version != eu.Version || again.Reconciliation == nil || *again.Reconciliation != *eu.Reconciliation {
			t.Fatalf("rerun changed the list: version %d -> %d", eu.Version, again.Version)
		}
	})

	t.Run("late data", func(t *testing.T) {
		late := day0.Add(3*24*time.Hour + 10*time.Hour) // a baseline day of topicsH only
		first := w.next[1]
		var rows []archive.Row
		for i := range 300 {
			rows = append(rows, w.mention(late, 1, first+int64(i), "#marathon"))
		}
		w.next[1] = first + int64(len(rows))
		w.keep(rows)
		w.write(1, first, w.next[1]-1, map[time.Time][]archive.Row{late: rows})
		w.progress(day0.Add(30 * 24 * time.Hour))

		rep, err := newTopics(t, w, eng, st, topicsConfig(t)).Recompute(ctx, hours)
		if err != nil {
			t.Fatal(err)
		}
		wantBuilt := []string{batch.Window{Level: batch.TopicsRollup, Start: late}.String()}
		if got := built(rep); !slices.Equal(got, wantBuilt) {
			t.Fatalf("built %v, want only %v", got, wantBuilt)
		}
		for _, p := range published(rep) {
			if !strings.HasSuffix(p, topicsH.Format("2006-01-02T15Z")) {
				t.Fatalf("published %v: %s does not depend on the late hour", published(rep), p)
			}
		}
		checkTopics(t, w, st, topicsH)
		checkTopics(t, w, st, topicsH2)
	})

	t.Run("blocklist change rebuilds", func(t *testing.T) {
		cfg := topicsConfig(t)
		if err := os.WriteFile(cfg.Blocklist, []byte("spam\nnothing\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := newTopics(t, w, eng, st, cfg).Recompute(ctx, hours[:1])
		if err != nil {
			t.Fatal(err)
		}
		if got := built(rep); len(got) != 8 {
			t.Fatalf("built %v after a blocklist change, want the hour and its 7 baseline days", got)
		}
	})
}

// TestTopicsOpenHourRefused: an hour whose end plus the lateness has not passed is refused
// before any work.
func TestTopicsOpenHourRefused(t *testing.T) {
	w := &topicsWorld{fixture: newFixture(t)}
	eng, st := nativeEngine(t), boltStore(t)
	r := newRunner(t, w.fixture, eng, st, topicsH.Add(30*time.Minute), nil)
	tp, err := batch.NewTopics(r, eng, topicsConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tp.Recompute(context.Background(), []batch.Window{{Level: batch.Hour, Start: topicsH}})
	if !errors.Is(err, batch.ErrWindowOpen) {
		t.Fatalf("open hour: %v, want ErrWindowOpen", err)
	}
}

// TestTopicsSchedule: the built-in scheduler publishes the topics lists of the hours that
// closed within its lookback, exactly.
func TestTopicsSchedule(t *testing.T) {
	w := newTopicsWorld(t)
	eng, st := nativeEngine(t), boltStore(t)
	tp := newTopics(t, w, eng, st, topicsConfig(t))
	r := newRunner(t, w.fixture, eng, st, topicsH2.Add(3*time.Hour), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sc := batch.DefaultScheduleConfig()
	sc.Every, sc.Lookback, sc.NightlyAt, sc.Topics = 20*time.Millisecond, 4*time.Hour, -1, tp
	go func() { done <- r.Schedule(ctx, sc) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for _, h := range []time.Time{topicsH, topicsH2} {
		for _, k := range []model.Key{{Window: "topics/world/volume", Start: h}, {Window: "topics/eu/surge", Start: h}, {Window: "topics/us/volume", Start: h}} {
			for {
				if _, err := st.Get(context.Background(), k); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s never published", k)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		checkTopics(t, w, st, h)
	}
}

// TestTopicsHeld: a topic the review queue holds is kept off the exact lists, and the queue's
// decisions are inputs of the list fingerprint: a hold made after a list was published
// recomputes it without the topic, an approval recomputes it with the topic, and lists the
// topic is not in (us) stay current throughout.
func TestTopicsHeld(t *testing.T) {
	ctx := context.Background()
	w := newTopicsWorld(t)
	eng, st := nativeEngine(t), boltStore(t)
	var held atomic.Bool
	cfg := topicsConfig(t)
	cfg.Held = func(topic string) bool { return held.Load() && topic == "quake" }
	tp := newTopics(t, w, eng, st, cfg)
	hour := []batch.Window{{Level: batch.Hour, Start: topicsH}}
	has := func(window string) bool {
		t.Helper()
		l, err := st.Get(ctx, model.Key{Window: window, Start: topicsH})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(l.Items, func(it model.Item) bool { return it.ItemID == "quake" })
	}
	run := func(want ...string) {
		t.Helper()
		rep, err := tp.Recompute(ctx, hour)
		if err != nil {
			t.Fatal(err)
		}
		if got := published(rep); !slices.Equal(got, want) {
			t.Fatalf("published %v, want %v", got, want)
		}
	}
	name := func(window string) string { return batch.Window{Level: window, Start: topicsH}.String() }
	eu, world := name("topics/eu/surge"), name("topics/world/volume")
	all := []string{eu, name("topics/us/volume"), world}
	slices.Sort(all)

	run(all...)
	if !has("topics/eu/surge") || !has("topics/world/volume") {
		t.Fatal("quake, surging in eu, is not listed: the test would prove nothing")
	}
	held.Store(true) // held since: the published lists holding it are recomputed without it
	run(eu, world)
	if has("topics/eu/surge") || has("topics/world/volume") {
		t.Fatal("a held topic is on an exact list")
	}
	run() // the same decisions: every list current
	held.Store(false)
	run(eu, world)
	if !has("topics/eu/surge") || !has("topics/world/volume") {
		t.Fatal("an approved topic is not listed")
	}
}
