package archive

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/model/event"
)

func TestRollWatermark(t *testing.T) {
	h := hour0
	now := h.Add(3 * time.Hour)
	for _, tc := range []struct {
		name       string
		low        int64
		maxMsgTime time.Time
		want       time.Time
	}{
		{"no valid event", 0, h, time.Time{}},
		{"the quantile when the log time is later", h.UnixMilli(), h.Add(time.Hour), h},
		{"capped by when the newest message entered the log", h.Add(2 * time.Hour).UnixMilli(), h.Add(time.Hour), h.Add(time.Hour)},
		{"capped by now", h.Add(5 * time.Hour).UnixMilli(), time.Time{}, now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollWatermark(tc.low, tc.maxMsgTime, now); !got.Equal(tc.want) {
				t.Fatalf("rollWatermark = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestBuildObjectsLowQuantile: the watermark a roll reports is its WatermarkQuantile of
// event time, whatever the order of the rows and however few are dated far ahead.
func TestBuildObjectsLowQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 9, 10, 11, 100, 1000} {
		rows := make([]Row, n)
		for i := range rows {
			rows[i] = Row{ItemID: "V", Count: 1, TS: hour0.UnixMilli() + rng.Int64N(int64(3*time.Hour/time.Millisecond)), Offset: int64(i)}
		}
		// A tenth of a percent dated in 2099 (none when n is small).
		for i := range n / 1000 {
			rows[i].TS = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		}
		ts := make([]int64, n)
		for i, r := range rows {
			ts[i] = r.TS
		}
		slices.Sort(ts)
		_, low := buildObjects(layout{DefaultRoot}, 0, 0, int64(n-1), rows, nil, EncodeOptions{RowGroupRows: 64})
		if want := ts[int(float64(n)*WatermarkQuantile)]; low != want {
			t.Fatalf("n=%d: low quantile %d, want %d", n, low, want)
		}
	}
	if _, low := buildObjects(layout{DefaultRoot}, 0, 0, 0, nil, nil, DefaultEncodeOptions()); low != 0 {
		t.Fatalf("no rows: low %d, want 0", low)
	}
}

// TestRefreshMarksCaughtUp: the refresh records the partition count and marks exactly the
// partitions with nothing left to archive and no roll for RollAge, creating the marker of
// a partition that never held a message.
func TestRefreshMarksCaughtUp(t *testing.T) {
	ctx := context.Background()
	st := embeddedStore(t)
	cfg := DefaultConfig()
	cfg.Kafka, cfg.RollAge = eventlog.Plain("unused:9092"), time.Minute
	a, err := New(cfg, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().UTC().Add(-time.Hour)
	put := func(p Progress) {
		b, _ := json.Marshal(p)
		if _, err := st.Put(ctx, a.lay.progressKey(p.Partition), b); err != nil {
			t.Fatal(err)
		}
	}
	put(Progress{Partition: 0, NextOffset: 10, Watermark: long, Updated: long})            // idle, all archived
	put(Progress{Partition: 3, NextOffset: 3, Watermark: long, Updated: long})             // behind the log
	put(Progress{Partition: 4, NextOffset: 7, Watermark: long, Updated: time.Now().UTC()}) // rolled just now
	a.offsets = func(context.Context) ([]eventlog.Offsets, error) {
		var out []eventlog.Offsets
		for p, last := range []int64{10, 0, 5, 5, 7} {
			out = append(out, eventlog.Offsets{Partition: p, Last: last})
		}
		return out, nil
	}
	before := time.Now().UTC()
	if err := a.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := NewReader(st).Manifest(ctx)
	if err != nil || m.Partitions != 5 {
		t.Fatalf("manifest %+v, %v: want 5 partitions", m, err)
	}
	prog, err := NewReader(st).Progress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int32]Progress{}
	for _, p := range prog {
		got[p.Partition] = p
	}
	caught := func(p int32) bool { return !got[p].CaughtUpAt.Before(before) }
	switch {
	case !caught(0):
		t.Errorf("partition 0 (all archived, idle) not marked caught up: %+v", got[0])
	case !caught(1) || got[1].NextOffset != 0:
		t.Errorf("partition 1 (never held a message) has no caught-up marker: %+v", got[1])
	case len(got) != 4:
		t.Errorf("markers %+v: partition 2 (unarchived messages, no marker) must get none", got)
	case caught(3):
		t.Errorf("partition 3 (behind the log) marked caught up: %+v", got[3])
	case caught(4):
		t.Errorf("partition 4 (rolled within RollAge) marked caught up: %+v", got[4])
	}
	// The hour before the refresh is complete only where every partition has passed it:
	// partition 2 (no marker) holds it open.
	r := NewReader(st)
	if why, err := r.Incomplete(ctx, long.Add(-2*time.Hour), 0); err != nil || why == "" {
		t.Fatalf("complete (%q, %v) with partition 2 lacking a marker", why, err)
	}
}

// TestRefreshWaitsOutAReplayPause: a partition whose producer writes the past (its last
// roll's median lag over ReplayQuiet) counts as caught up only after ReplayQuiet without a
// roll, not RollAge: a replay that pauses must not close every hour up to the wall clock.
// A live partition still counts after RollAge, and ReplayQuiet 0 is the rule before.
func TestRefreshWaitsOutAReplayPause(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC()
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		name        string
		lag, quiet  time.Duration // the marker's lag, the time since its roll
		replayQuiet time.Duration
		want        bool
	}{
		{"live, quiet for RollAge", time.Second, 2 * time.Second, 10 * time.Second, true},
		{"replay, paused for RollAge", 3 * 24 * time.Hour, 2 * time.Second, 10 * time.Second, false},
		{"replay, quiet for ReplayQuiet", 3 * 24 * time.Hour, 11 * time.Second, 10 * time.Second, true},
		{"replay, ReplayQuiet off", 3 * 24 * time.Hour, 2 * time.Second, 0, true},
		{"lag just under ReplayQuiet", 9 * time.Second, 2 * time.Second, 10 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := embeddedStore(t)
			cfg := DefaultConfig()
			cfg.Kafka, cfg.RollAge, cfg.ReplayQuiet = eventlog.Plain("unused:9092"), time.Second, tc.replayQuiet
			a, err := New(cfg, st, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The replay reached Tuesday of the week before last; its hours after that are open.
			wm := now.Add(-2 * week).Truncate(24 * time.Hour)
			rolled := now.Add(-tc.quiet)
			b, _ := json.Marshal(Progress{Partition: 0, NextOffset: 10, Watermark: wm, LagMS: tc.lag.Milliseconds(), Updated: rolled})
			if _, err := st.Put(ctx, a.lay.progressKey(0), b); err != nil {
				t.Fatal(err)
			}
			a.offsets = func(context.Context) ([]eventlog.Offsets, error) {
				return []eventlog.Offsets{{Partition: 0, Last: 10}}, nil
			}
			if err := a.refresh(ctx); err != nil {
				t.Fatal(err)
			}
			why, err := NewReader(st).Incomplete(ctx, wm.Add(24*time.Hour), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if got := why == ""; got != tc.want {
				t.Fatalf("the hour a day past the replay's watermark complete = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

// TestRollLag: a roll's lag is the median of log time minus event time, so a few late or
// early events do not decide it.
func TestRollLag(t *testing.T) {
	var rows []Row
	for i := range 100 {
		lag := int64(1000) // a live producer: a second behind
		switch {
		case i%10 == 0:
			lag = 3_600_000 // a late event
		case i%10 == 1:
			lag = -60_000 // one dated a minute ahead
		}
		rows = append(rows, Row{TS: int64(i) * 1000, IngestTS: int64(i)*1000 + lag})
	}
	if got := rollLag(rows); got != 1000 {
		t.Fatalf("rollLag = %d ms, want 1000", got)
	}
}

// TestRollSeesAnotherArchiversCaughtUp: another archiver of the group marked the partition
// caught up after this one last wrote its marker; a roll of events into an hour that mark
// closed must leave a late-data marker. Before, the roll judged by the marker it had cached
// since its first roll, wrote no mark, and the batch never recomputed the hour (and the roll
// wrote the older caught_up_at back).
func TestRollSeesAnotherArchiversCaughtUp(t *testing.T) {
	ctx := context.Background()
	st := embeddedStore(t)
	cfg := DefaultConfig()
	cfg.Kafka = eventlog.Plain("unused:9092")
	a, err := New(cfg, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	wm := now.Truncate(time.Hour).Add(-3 * time.Hour)
	// What this archiver wrote at its last roll, and then the other's refresh.
	a.progress[0] = &Progress{Partition: 0, NextOffset: 10, Watermark: wm, Updated: wm}
	other := Progress{Partition: 0, NextOffset: 10, Watermark: wm, CaughtUpAt: now.Add(-time.Minute), Updated: now.Add(-time.Minute)}
	b, _ := json.Marshal(other)
	if _, err := st.Put(ctx, a.lay.progressKey(0), b); err != nil {
		t.Fatal(err)
	}
	late := wm.Add(time.Hour + 30*time.Minute)
	ev := event.Event{ItemID: "V1", Count: 1, TS: late}
	a.add(kafka.Message{Partition: 0, Offset: 10, Key: []byte("V1"), Value: ev.AppendJSON(nil), Time: now})
	stop := errors.New("stop before the commit")
	a.beforeCommit = func(int32) error { return stop }
	if err := a.roll(ctx, nil, 0, "test"); !errors.Is(err, stop) {
		t.Fatalf("roll: %v", err)
	}
	r := NewReader(st)
	marks, err := r.Dirty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 1 || !marks[0].Hour.Equal(late.Truncate(time.Hour)) {
		t.Fatalf("late-data marks %v, want one of %s", marks, late.Truncate(time.Hour))
	}
	prog, err := r.Progress(ctx)
	if err != nil || len(prog) != 1 || !prog[0].CaughtUpAt.Equal(other.CaughtUpAt) || prog[0].NextOffset != 11 {
		t.Fatalf("marker after the roll %+v, %v: want caught_up_at %s kept and next offset 11", prog, err, other.CaughtUpAt)
	}
}
