package window

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
)

// sinceTruth sums the events of minutes in [b, asOf) that were not Invalid: what Since must
// count (it accepts every late event of a minute at or after B).
func sinceTruth(evs []event.Event, b, asOf time.Time) map[string]uint64 {
	out := map[string]uint64{}
	for _, ev := range evs {
		m := ev.TS.Truncate(time.Minute)
		if !m.Before(b) && m.Before(asOf) {
			out[ev.ItemID] += uint64(ev.Count)
		}
	}
	return out
}

func checkSince(t *testing.T, p *Partition, evs []event.Event, base []string) {
	t.Helper()
	l, ok := p.Since(base)
	if !ok {
		t.Fatal("Since: not enabled")
	}
	if l.From.After(l.Boundary) {
		t.Fatalf("since: complete only from %s, boundary %s", l.From, l.Boundary)
	}
	truth := sinceTruth(evs, l.Boundary, l.AsOf)
	n := p.mk()
	if want := wantTop(truth, n); !entriesEqual(l.Items, want) {
		t.Fatalf("since %s..%s: top\n got %v\nwant %v", l.Boundary, l.AsOf, l.Items, want)
	}
	if sum(truth) != l.Total {
		t.Fatalf("since: total %d, truth %d", l.Total, sum(truth))
	}
	listed := map[string]bool{}
	for _, e := range l.Items {
		listed[e.Item] = true
	}
	// Every base item the partition holds is in Base, whether in Items or not (a group
	// merger that cuts Items to m*K keeps them).
	inBase := map[string]bool{}
	for _, e := range l.Base {
		if inBase[e.Item] || truth[e.Item] != e.Count {
			t.Fatalf("since: base item %s count %d, truth %d (twice %t)", e.Item, e.Count, truth[e.Item], inBase[e.Item])
		}
		inBase[e.Item], listed[e.Item] = true, true
	}
	for _, id := range base {
		if truth[id] > 0 && !inBase[id] {
			t.Fatalf("since: base item %s (%d since B) not in Base", id, truth[id])
		}
	}
	for id, c := range truth {
		if !listed[id] && c > l.Cutoff {
			t.Fatalf("since: unreported item %s has %d, over the cutoff %d", id, c, l.Cutoff)
		}
	}
}

// TestSinceBoundary: over several days of a stream with late events, the counts since B
// equal the brute-force truth as B moves forward a day at a time, with the base items'
// counts reported beyond the top M*K, and a snapshot round trip keeps them.
func TestSinceBoundary(t *testing.T) {
	cfg := exactTestConfig()
	cfg.K, cfg.M, cfg.SinceDays = 3, 2, 7
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	evs := genStream(streamOpts{seed: 7, n: 6000, items: 40, step: time.Minute, counts: 4, late: true})
	base := []string{"v001", "v010", "v020", "v030", "v039", "nope"}
	day := func(ts time.Time) time.Time { return ts.UTC().Truncate(24 * time.Hour) }
	b := day(t0)
	if err := p.SetBoundary(b); err != nil {
		t.Fatal(err)
	}
	var seen []event.Event
	for i, ev := range evs {
		if p.Add(ev) != Invalid {
			seen = append(seen, ev)
		}
		if i%500 == 499 {
			checkInvariants(t, p)
			checkSince(t, p, seen, base)
			// The nightly batch for yesterday ran: B moves to today's start.
			if nb := day(p.AsOf()); nb.After(b) {
				b = nb
				if err := p.SetBoundary(b); err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, p)
				checkSince(t, p, seen, base)
			}
			q, err := Restore(cfg, mustMarshal(t, p))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mustMarshal(t, q), mustMarshal(t, p)) {
				t.Fatal("since: snapshot does not round-trip")
			}
			checkInvariants(t, q)
			checkSince(t, q, seen, base)
		}
	}
	if b.Equal(day(t0)) {
		t.Fatal("the stream never crossed a day: the test proves nothing")
	}
	// B never moves back.
	_ = p.SetBoundary(b.AddDate(0, 0, -1))
	if l, _ := p.Since(nil); !l.Boundary.Equal(b) {
		t.Fatalf("boundary moved back to %s", l.Boundary)
	}
	if err := p.SetBoundary(b.Add(time.Hour)); !errors.Is(err, ErrConfig) {
		t.Fatalf("a boundary inside a day: %v, want ErrConfig", err)
	}
}

// TestSinceDaysCap: with no boundary, at most SinceDays days are kept, and From says from
// when the counts are complete; a boundary before From is not exact.
func TestSinceDaysCap(t *testing.T) {
	cfg := exactTestConfig()
	cfg.SinceDays = 2
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for h := range 24 * 4 {
		p.Add(event.Event{ItemID: "a", Count: 1, TS: start.Add(time.Duration(h) * time.Hour)})
	}
	checkInvariants(t, p)
	l, _ := p.Since(nil)
	if want := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC); !l.From.Equal(want) || !l.Boundary.IsZero() {
		t.Fatalf("from %s boundary %s, want from %s (two days kept) and no boundary", l.From, l.Boundary, want)
	}
	// 2026-03-04 00:00 to the watermark (03-05 11:00; the 11:00 event's minute is open).
	if len(l.Items) != 1 || l.Items[0] != (topk.Entry{Item: "a", Count: 35}) {
		t.Fatalf("items %v, want a: 35", l.Items)
	}
}

// TestSinceRestoreVersion1: a version-1 snapshot restores under SinceDays with counts
// complete from the next day start only, and the partition then writes version 2; a
// version-2 snapshot restores without SinceDays (the counts let go) to version-1 bytes.
func TestSinceRestoreVersion1(t *testing.T) {
	b, err := os.ReadFile("testdata/snapshot-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	cfg := snapTestConfig()
	cfg.Sketch.Width = 1 << 4
	cfg.SinceDays = 3
	p, err := Restore(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p)
	l, _ := p.Since(nil)
	asOf := p.AsOf()
	want := asOf.Truncate(24 * time.Hour)
	if want.Before(asOf) {
		want = want.Add(24 * time.Hour)
	}
	if !l.From.Equal(want) || len(l.Items) != 0 {
		t.Fatalf("restored from version 1: from %s items %v, want from %s and nothing counted", l.From, l.Items, want)
	}
	for _, ev := range genStream(streamOpts{seed: 22, n: 200, items: 12, step: 5 * time.Minute, counts: 3, late: true}) {
		p.Add(ev)
	}
	checkInvariants(t, p)
	v2 := mustMarshal(t, p)
	if v2[4] != snapVersion {
		t.Fatalf("format version %d, want %d", v2[4], snapVersion)
	}
	cfg.SinceDays = 0
	q, err := Restore(cfg, v2)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, q)
	if got := mustMarshal(t, q); got[4] != snapVersion {
		t.Fatalf("without SinceDays: format version %d, want %d", got[4], snapVersion)
	}
}

// TestSetSinceDays: the counts since the all-time boundary feed the all-time list only, so a
// configuration without an all-time window keeps none whatever --since-days says (a command
// passes it as given; it once zeroed it itself), and one with it keeps them.
func TestSetSinceDays(t *testing.T) {
	with := DefaultConfig()
	without := with
	without.Windows = nil
	for _, w := range with.Windows {
		if w.Kind != windowset.AllTime {
			without.Windows = append(without.Windows, w)
		}
	}
	if len(without.Windows) == len(with.Windows) {
		t.Fatal("the default windows have no all-time window to take out")
	}
	for _, tc := range []struct {
		name   string
		c      Config
		days   int
		counts bool
	}{
		{"with an all-time window", with, 3, true},
		{"without one", without, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.SetSinceDays(3)
			if tc.c.SinceDays != tc.days {
				t.Errorf("SinceDays %d, want %d", tc.c.SinceDays, tc.days)
			}
			p, err := New(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.Since(nil); ok != tc.counts {
				t.Errorf("Since: enabled %t, want %t", ok, tc.counts)
			}
		})
	}
	// Out of range is refused only where it would count.
	without.SetSinceDays(MaxSinceDays + 1)
	if err := without.Validate(); err != nil {
		t.Errorf("--since-days %d without an all-time window: %v, want it ignored", MaxSinceDays+1, err)
	}
	with.SetSinceDays(MaxSinceDays + 1)
	if err := with.Validate(); err == nil {
		t.Errorf("--since-days %d with an all-time window: valid", MaxSinceDays+1)
	}
}
