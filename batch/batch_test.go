package batch_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"trending/batch"
	"trending/model"
	"trending/serving/store"
	chstore "trending/serving/store/clickhouse"
)

const bigK = 1000 // longer than the catalog: lists then hold every item and compare whole

func newRunner(t *testing.T, f *fixture, eng batch.Engine, st store.Store, now time.Time, mod func(*batch.Config)) *batch.Runner {
	t.Helper()
	cfg := batch.DefaultConfig()
	cfg.K, cfg.Now, cfg.Parallel = bigK, clock(now), 2
	if mod != nil {
		mod(&cfg)
	}
	r, err := batch.NewRunner(cfg, eng, f.arc, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func spans(t *testing.T, level string, from, to time.Time) []batch.Window {
	t.Helper()
	ws, err := batch.Span(level, from, to)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// checkList compares a served list with the truth.
func checkList(t *testing.T, st store.Store, k model.Key, want map[string]uint64) model.List {
	t.Helper()
	l, err := st.Get(context.Background(), k)
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	if l.Source != model.SourceBatch || !l.Exact {
		t.Fatalf("%s: source %s exact %v, want batch exact", k, l.Source, l.Exact)
	}
	w := rank(want)
	if !slices.Equal(l.Items, w) {
		t.Fatalf("%s: %d items, want %d; first got %v want %v", k, len(l.Items), len(w), head(l.Items), head(w))
	}
	return l
}

func head(it []model.Item) []model.Item { return it[:min(3, len(it))] }

// TestExactAgainstTruth: every hour, day and the month equal the truth exactly, despite
// duplicated offsets in the archive, on both engines.
func TestExactAgainstTruth(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		f.generate()
		eng, st := open(t), boltStore(t)
		now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
		f.progress(now) // the archive has passed the month's end
		r := newRunner(t, f, eng, st, now, nil)
		ctx := context.Background()
		ws := append(spans(t, batch.Hour, day0, day0.Add(48*time.Hour)), spans(t, batch.Day, day0, day0.Add(48*time.Hour))...)
		ws = append(ws, batch.Window{Level: batch.Month, Start: model.Month.Align(day0)}, batch.Window{Level: batch.All})
		rep, err := r.Recompute(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Published() == 0 {
			t.Fatal("nothing published")
		}
		for _, h := range hoursOf(day0, 48) {
			if len(f.truth[h]) == 0 {
				if _, err := st.Get(ctx, model.Key{Window: "hour", Start: h}); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("hour %s without events: %v, want no list", h, err)
				}
				continue
			}
			checkList(t, st, model.Key{Window: "hour", Start: h}, f.truthOf(h))
		}
		checkList(t, st, model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))
		checkList(t, st, model.Key{Window: "day", Start: day0.Add(24 * time.Hour)}, f.truthOf(hoursOf(day0.Add(24*time.Hour), 24)...))
		month := checkList(t, st, model.Key{Window: "month", Start: model.Month.Align(day0)}, f.truthOf(hoursOf(day0, 48)...))
		all := checkList(t, st, model.Key{Window: "all"}, f.truthOf(hoursOf(day0, 48)...))
		if month.Fingerprint == "" || all.Fingerprint == "" || month.Version != rep.Version {
			t.Fatalf("month fingerprint %q, all %q, version %d (run %d)", month.Fingerprint, all.Fingerprint, month.Version, rep.Version)
		}
		// The engine's rollups agree with the truth item by item, not only at the top.
		items := []string{"V0", "V1", "V7", "V150", "nope"}
		got, err := eng.Counts(ctx, batch.Day, day0, "", items)
		if err != nil {
			t.Fatal(err)
		}
		tr := f.truthOf(hoursOf(day0, 24)...)
		for _, id := range items {
			if got[id] != tr[id] {
				t.Errorf("Counts(%s) = %d, want %d", id, got[id], tr[id])
			}
		}
	})
}

// TestRerunIdempotent: a second run (forced rebuild) leaves the same lists, apart from
// version and computed_at, and on ClickHouse the same rollup rows.
func TestRerunIdempotent(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, o, dump := openCH(t)
	st := boltStore(t)
	ctx := context.Background()
	ws := append(spans(t, batch.Hour, day0.Add(9*time.Hour), day0.Add(15*time.Hour)), batch.Window{Level: batch.Day, Start: day0})
	snapshot := func() ([]model.List, []string) {
		ls, err := st.Range(ctx, "hour", day0, day0.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		d, err := st.Get(ctx, model.Key{Window: "day", Start: day0})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, d)
		for i := range ls {
			ls[i].Version, ls[i].ComputedAt = 0, time.Time{}
		}
		rows := dump("SELECT * FROM " + o.Database + ".rollup_hour ORDER BY hour, item_id")
		rows = append(rows, dump("SELECT * FROM "+o.Database+".rollup_day ORDER BY day, item_id")...)
		return ls, rows
	}
	_ = eng
	for i := range 2 {
		r := newRunner(t, f, eng, st, time.Date(2026, 11, 20, 0, 0, 0, i, time.UTC).Add(time.Duration(i)*time.Minute), func(c *batch.Config) { c.Rebuild = true })
		if _, err := r.Recompute(ctx, ws); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue
		}
	}
	l1, r1 := snapshot()
	r := newRunner(t, f, eng, st, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), func(c *batch.Config) { c.Rebuild = true })
	if _, err := r.Recompute(ctx, ws); err != nil {
		t.Fatal(err)
	}
	l2, r2 := snapshot()
	if len(r1) == 0 || !slices.Equal(r1, r2) {
		t.Fatalf("rollup rows differ after a rerun: %d vs %d rows", len(r1), len(r2))
	}
	if len(l1) != len(l2) {
		t.Fatalf("lists: %d then %d", len(l1), len(l2))
	}
	for i := range l1 {
		if !slices.Equal(l1[i].Items, l2[i].Items) || l1[i].Fingerprint != l2[i].Fingerprint || !l1[i].AsOf.Equal(l2[i].AsOf) {
			t.Fatalf("list %s changed on rerun", l1[i].Key())
		}
	}
}

// TestLateDataNightly: late events land in hour 10 after it was computed; its fingerprint
// changes and the nightly rebuilds that hour and the day above it, and nothing else.
func TestLateDataNightly(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		f := newFixture(t)
		f.generate()
		eng, st := open(t), boltStore(t)
		ctx := context.Background()
		next := day0.Add(24 * time.Hour)
		r := newRunner(t, f, eng, st, next.Add(26*time.Hour), func(c *batch.Config) { c.LookbackDays = 2 })
		if _, err := r.Nightly(ctx, next); err != nil {
			t.Fatal(err)
		}
		h10 := day0.Add(10 * time.Hour)
		before, err := st.Get(ctx, model.Key{Window: "hour", Start: h10})
		if err != nil {
			t.Fatal(err)
		}
		checkList(t, st, model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))

		// A quiet second nightly rebuilds nothing.
		rep, err := newRunner(t, f, eng, st, next.Add(27*time.Hour), func(c *batch.Config) { c.LookbackDays = 2 }).Nightly(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range rep.Outcomes {
			if o.Built {
				t.Fatalf("quiet nightly rebuilt %s", o.Window)
			}
		}

		f.roll(0, 40, h10.Add(10*time.Minute), 20*time.Minute) // late events for hour 10
		rep, err = newRunner(t, f, eng, st, next.Add(28*time.Hour), func(c *batch.Config) { c.LookbackDays = 2 }).Nightly(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		var built []string
		for _, o := range rep.Outcomes {
			if o.Built {
				built = append(built, o.Window.String())
			}
		}
		want := []string{"hour 2026-11-14T10Z", "day 2026-11-14", "month 2026-11"}
		for _, w := range want {
			if !slices.Contains(built, w) {
				t.Fatalf("nightly after late data built %v, want %v among them", built, want)
			}
		}
		if len(built) != len(want) {
			t.Fatalf("nightly after late data built %v, want only %v", built, want)
		}
		after := checkList(t, st, model.Key{Window: "hour", Start: h10}, f.truthOf(h10))
		if after.Fingerprint == before.Fingerprint {
			t.Fatal("fingerprint unchanged by late data")
		}
		checkList(t, st, model.Key{Window: "day", Start: day0}, f.truthOf(hoursOf(day0, 24)...))
		checkList(t, st, model.Key{Window: "all"}, f.truthOf(hoursOf(day0, 48)...))
	})
}

// TestSpeedReplacedWithReconciliation: the exact list replaces the speed layer's and says
// how far it was off.
func TestSpeedReplacedWithReconciliation(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, o, _ := openCH(t)
	st, err := chstore.Open(context.Background(), o) // the production store
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	h := day0.Add(11 * time.Hour)
	exact := rank(f.truthOf(h))
	// The speed layer's list: the top 3 with the first overcounted by 7 and the third
	// replaced by an item outside the exact top 3 (undercounted by 2).
	speed := model.List{Window: "hour", Start: h, End: h.Add(time.Hour), AsOf: h.Add(time.Hour), Version: h.Add(time.Hour).UnixMilli(),
		Source: model.SourceSpeed, Status: model.StatusProvisional, ComputedAt: h.Add(time.Hour), ErrorBound: &model.Bound{MaxOvercount: 10, Probability: 0.99}, Items: []model.Item{
			{Rank: 1, ItemID: exact[0].ItemID, Views: exact[0].Views + 7},
			{Rank: 2, ItemID: exact[1].ItemID, Views: exact[1].Views},
			{Rank: 3, ItemID: exact[5].ItemID, Views: exact[5].Views - 2},
		}}
	if err := st.Put(ctx, speed); err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, f, eng, st, day0.Add(72*time.Hour), func(c *batch.Config) { c.K = 3 })
	if _, err := r.Recompute(ctx, []batch.Window{{Level: batch.Hour, Start: h}}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx, model.Key{Window: "hour", Start: h})
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != model.SourceBatch || len(got.Items) != 3 || got.Items[0] != exact[0] || got.Reconciliation == nil {
		t.Fatalf("got %s %v recon %v, want the exact top 3 with a reconciliation", got.Source, got.Items, got.Reconciliation)
	}
	rec := *got.Reconciliation
	want := model.Reconciliation{SpeedVersion: speed.Version, RecallAtK: 2.0 / 3, MaxAbsError: 7, MeanAbsError: 9.0 / 3,
		MaxRelError: max(7/float64(exact[0].Views), 2/float64(exact[5].Views)), SpeedErrorBound: speed.ErrorBound}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("reconciliation %+v, want %+v", rec, want)
	}
	// The speed list's bound travels with it (through the store): 7 off against at most 10.
	if over, ok := rec.ErrorOverBound(); !ok || over != 0.7 {
		t.Fatalf("error over bound %v, %v; want 0.7", over, ok)
	}
	// The speed layer can no longer overwrite it.
	speed.Version += 1000
	if err := st.Put(ctx, speed); !errors.Is(err, store.ErrSuperseded) {
		t.Fatalf("speed over batch: %v, want ErrSuperseded", err)
	}
	// A rerun reconciles the speed list the first exact run replaced again, against the same
	// counts: the same reconciliation.
	r = newRunner(t, f, eng, st, day0.Add(73*time.Hour), func(c *batch.Config) { c.K = 3; c.Rebuild = true })
	if _, err := r.Recompute(ctx, []batch.Window{{Level: batch.Hour, Start: h}}); err != nil {
		t.Fatal(err)
	}
	again, _ := st.Get(ctx, model.Key{Window: "hour", Start: h})
	if again.Reconciliation == nil || !reflect.DeepEqual(*again.Reconciliation, want) || again.Version <= got.Version {
		t.Fatalf("rerun: version %d recon %+v", again.Version, again.Reconciliation)
	}
}

// TestOpenWindowRefused: a window whose end plus lateness has not passed, or that the
// archive has not completed, is refused with ErrWindowOpen unless forced.
func TestOpenWindowRefused(t *testing.T) {
	f := newFixture(t)
	f.generate()
	ctx := context.Background()
	eng, err := batch.OpenNative(t.TempDir() + "/r.db")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	st := boltStore(t)
	h := day0.Add(11 * time.Hour)
	w := []batch.Window{{Level: batch.Hour, Start: h}}
	// Five minutes after the end, with ten minutes of lateness: still open.
	if _, err := newRunner(t, f, eng, st, h.Add(65*time.Minute), nil).Recompute(ctx, w); !errors.Is(err, batch.ErrWindowOpen) {
		t.Fatalf("inside lateness: %v, want ErrWindowOpen", err)
	}
	// Long past by the clock, but the archive's progress is behind.
	f.progress(h.Add(30 * time.Minute))
	if _, err := newRunner(t, f, eng, st, h.Add(48*time.Hour), nil).Recompute(ctx, w); !errors.Is(err, batch.ErrWindowOpen) {
		t.Fatalf("archive incomplete: %v, want ErrWindowOpen", err)
	}
	if _, err := st.Get(ctx, w[0].Key()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused run wrote a list: %v", err)
	}
	rep, err := newRunner(t, f, eng, st, h.Add(48*time.Hour), func(c *batch.Config) { c.Force = true }).Recompute(ctx, w)
	if err != nil || rep.Published() != 1 {
		t.Fatalf("forced: %v, %d published", err, rep.Published())
	}
}

// TestForceAsOfNotAfterNow: a forced run of windows still open publishes exact lists as of
// now at the latest, never as of the end of the current hour.
func TestForceAsOfNotAfterNow(t *testing.T) {
	f := newFixture(t)
	f.generate()
	ctx := context.Background()
	eng, err := batch.OpenNative(t.TempDir() + "/r.db")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	st := boltStore(t)
	now := day0.Add(11*time.Hour + 30*time.Minute)
	ws := []batch.Window{{Level: batch.Hour, Start: day0.Add(11 * time.Hour)}, {Level: batch.Day, Start: day0}}
	rep, err := newRunner(t, f, eng, st, now, func(c *batch.Config) { c.Force = true }).Recompute(ctx, ws)
	if err != nil || rep.Published() != len(ws) {
		t.Fatalf("forced: %v, %d published", err, rep.Published())
	}
	for _, w := range ws {
		l, err := st.Get(ctx, w.Key())
		if err != nil {
			t.Fatal(err)
		}
		if l.AsOf.After(now) || l.Status != model.StatusExact || !l.Exact {
			t.Errorf("%s: as of %s (now %s), status %q exact %v: want as of now at the latest, exact", w, l.AsOf, now, l.Status, l.Exact)
		}
	}
}

// TestPlanDryRun: the plan counts the objects and bytes under each window and writes
// nothing.
func TestPlanDryRun(t *testing.T) {
	f := newFixture(t)
	f.generate()
	ctx := context.Background()
	eng, err := batch.OpenNative(t.TempDir() + "/r.db")
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	st := boltStore(t)
	r := newRunner(t, f, eng, st, day0.Add(72*time.Hour), nil)
	plan, err := r.Plan(ctx, []batch.Window{{Level: batch.Hour, Start: day0.Add(13 * time.Hour)}, {Level: batch.Day, Start: day0}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := f.arc.ListHour(ctx, day0.Add(13*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if plan[0].Objects != len(objs) || plan[0].Bytes == 0 || plan[0].Hours != 1 || plan[0].Open != nil {
		t.Fatalf("hour plan %+v, want %d objects", plan[0], len(objs))
	}
	if plan[1].Hours != 24 || plan[1].Objects < plan[0].Objects {
		t.Fatalf("day plan %+v", plan[1])
	}
	if ls, _ := st.Since(ctx, time.Time{}); len(ls) != 0 {
		t.Fatalf("dry run wrote %d lists", len(ls))
	}
	if _, err := eng.Meta(ctx, batch.Hour, day0.Add(13*time.Hour)); !errors.Is(err, batch.ErrNoRollup) {
		t.Fatalf("dry run built a rollup: %v", err)
	}
}

// TestMeter: Config.Meter is told after every window of a run, counting up to the run's
// plan: a Recompute of N windows ends at N of N; a Nightly counts the night's hours, day,
// months and all time it planned, each once.
func TestMeter(t *testing.T) {
	f := newFixture(t)
	f.generate()
	eng, st := nativeEngine(t), boltStore(t)
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f.progress(now)
	var calls [][2]int
	seen := map[string]int{}
	meter := func(c *batch.Config) {
		c.Meter = func(done, total int, w string) { calls = append(calls, [2]int{done, total}); seen[w]++ }
	}
	ws := append(spans(t, batch.Hour, day0, day0.Add(6*time.Hour)), batch.Window{Level: batch.Day, Start: day0})
	if _, err := newRunner(t, f, eng, st, now, meter).Recompute(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	if len(calls) != len(ws) || calls[len(calls)-1] != [2]int{len(ws), len(ws)} {
		t.Fatalf("meter calls %v, want 1..%d of %d", calls, len(ws), len(ws))
	}
	for i, c := range calls {
		if c[0] != i+1 {
			t.Fatalf("call %d: done %d", i, c[0])
		}
	}
	calls, seen = nil, map[string]int{}
	r := newRunner(t, f, eng, st, now, func(c *batch.Config) { meter(c); c.LookbackDays = 1 })
	if _, err := r.Nightly(context.Background(), day0.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	// Two days of 24 hours and a day each, one month, all time; the all-time base may add one.
	last := calls[len(calls)-1]
	t.Logf("nightly: %d calls, last %v", len(calls), last)
	if want := 2*25 + 1 + 1; last[1] < want || last[0] != last[1] {
		t.Fatalf("nightly meter ended at %d of %d, want all %d planned done", last[0], last[1], want)
	}
	for w, n := range seen {
		if n != 1 {
			t.Fatalf("window %s metered %d times", w, n)
		}
	}
}
