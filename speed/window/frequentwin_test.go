package window

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/event"
	"trending/model/windowset"
)

// freqWindows are frequent windows of every kind, with few counters so that the summaries
// compact on the test streams' 60 to 200 items.
func freqWindows() []WindowConfig {
	return []WindowConfig{
		{Name: "3min-freq", Kind: windowset.Sliding, Length: 3 * time.Minute, Bucket: time.Minute, Mode: windowset.Frequent, Capacity: 4},
		{Name: "hour-freq", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Frequent, Capacity: 8},
		{Name: "2h-freq", Kind: windowset.Sliding, Length: 2 * time.Hour, Bucket: time.Hour, Mode: windowset.Frequent, Capacity: 8},
		{Name: "2d-freq", Kind: windowset.Sliding, Length: 48 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Frequent, Capacity: 16},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Frequent, Capacity: 4},
		{Name: "calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Frequent, Capacity: 16},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Frequent, Capacity: 16},
	}
}

// freqTestConfig is exactTestConfig with the frequent windows beside them (15 windows).
// No sketch all-time window: a whole snapshot of exact minute windows beside one does not
// restore (its journal holds items the snapshot does not name: see the report of issue 32).
func freqTestConfig() Config {
	cfg := exactTestConfig()
	for _, w := range freqWindows() {
		switch w.Name {
		case "all":
			w.Name = "all-freq"
		case "calendar-hour", "calendar-day":
			w.Name += "-freq"
		}
		cfg.Windows = append(cfg.Windows, w)
	}
	return cfg
}

// checkFrequent checks a frequent list against the truth of its span: every listed count
// is at most the truth and the truth at most the count plus MaxError; every item with more
// views than Cutoff is listed; Cutoff is at least MaxError.
func checkFrequent(t *testing.T, at string, l List, truth map[string]uint64) {
	t.Helper()
	if !l.Frequent || l.Exact || l.Bound != nil || l.Cutoff < l.MaxError {
		t.Fatalf("%s: frequent %t exact %t bound %v, cutoff %d under max error %d", at, l.Frequent, l.Exact, l.Bound, l.Cutoff, l.MaxError)
	}
	listed := map[string]bool{}
	for _, e := range l.Items {
		listed[e.Item] = true
		if c := truth[e.Item]; e.Count > c || c > e.Count+l.MaxError {
			t.Fatalf("%s: %s has %d views, listed with [%d, %d]", at, e.Item, c, e.Count, e.Count+l.MaxError)
		}
	}
	for item, c := range truth {
		if c > l.Cutoff && !listed[item] {
			t.Fatalf("%s: %s has %d views, over the cutoff %d, and is missing", at, item, c, l.Cutoff)
		}
	}
}

// TestFrequentWindowsBoundTheTruth: Top of every frequent window after every event of
// streams with late and too-late events holds the truth of its span between each item's
// bounds and misses no item over its cutoff; the final calendar lists too.
func TestFrequentWindowsBoundTheTruth(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := windowsConfig(freqWindows())
			cfg.K, cfg.M, cfg.AllowedLateness = 3, 2, time.Minute
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			evs := genStream(streamOpts{seed: seed, n: 4000, items: 150, step: 20 * time.Second, counts: 3, late: true})
			var taken []spanEvent
			compacted := false
			for i, ev := range evs {
				if p.Add(ev) != TooLate {
					taken = append(taken, spanEvent{ev.TS.UnixMilli(), ev.ItemID, uint64(ev.Count)})
				}
				for _, l := range p.TakeClosed() {
					checkFrequent(t, fmt.Sprintf("event %d: final %s %s", i, l.Window, l.Start), l, spanTruth(taken, l.Start.UnixMilli(), l.End.UnixMilli()-1))
				}
				if i%97 != 0 {
					continue
				}
				for _, wc := range cfg.Windows {
					l, _ := p.Top(wc.Name)
					if l.Start.IsZero() {
						continue
					}
					// Top counts the closed minutes: events before AsOf.
					checkFrequent(t, fmt.Sprintf("event %d: %s", i, wc.Name), l, spanTruth(taken, l.Start.UnixMilli(), min(l.End.UnixMilli(), l.AsOf.UnixMilli())-1))
					compacted = compacted || l.MaxError > 0
				}
			}
			if !compacted {
				t.Fatal("no summary compacted: the bounds are not exercised")
			}
		})
	}
}

// FuzzRestoreFrequent: Restore of a snapshot with frequent windows, mutated (resealed half of
// the time, so the decoder itself is reached), returns a sentinel error or a partition that
// counts on and answers; never a panic.
func FuzzRestoreFrequent(f *testing.F) {
	cfg := freqTestConfig()
	for i, n := range []int{0, 30, 400} {
		p, _ := New(cfg)
		for _, ev := range genStream(streamOpts{seed: uint64(i + 1), n: n, items: 40, step: time.Minute, counts: 2, late: true}) {
			p.Add(ev)
		}
		f.Add(mustMarshal(f, p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 8 && b[len(b)-1]&1 == 0 {
			b = reseal(bytes.Clone(b))
		}
		q, err := Restore(cfg, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, q)
		for _, ev := range genStream(streamOpts{seed: 1, n: 50, items: 40, step: time.Hour, counts: 2, late: true}) {
			q.Add(ev)
		}
		allTops(t, q)
		q.LiveAll()
		checkInvariants(t, q)
	})
}

// TestFrequentDeterministic: two partitions given the same events, one after a burst of other
// items that all expire (so its item handles differ) and with each minute's events in
// another order, hold the same frequent summaries: the same snapshot bytes and lists.
func TestFrequentDeterministic(t *testing.T) {
	cfg := windowsConfig(freqWindows()[:6]) // no all-time window: the noise would stay in it
	cfg.K, cfg.M, cfg.AllowedLateness = 3, 2, time.Minute
	evs := genStream(streamOpts{seed: 12, n: 3000, items: 120, step: 5 * time.Second, counts: 3})
	shuffled := slices.Clone(evs)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(shuffled); {
		j := i
		for j < len(shuffled) && shuffled[j].TS.Truncate(time.Minute).Equal(shuffled[i].TS.Truncate(time.Minute)) {
			j++
		}
		r.Shuffle(j-i, func(x, y int) { shuffled[i+x], shuffled[i+y] = shuffled[i+y], shuffled[i+x] })
		i = j
	}
	a, _ := New(cfg)
	for _, ev := range evs {
		a.Add(ev)
	}
	b, _ := New(cfg)
	for i := range 500 {
		b.Add(event.Event{ItemID: fmt.Sprintf("noise%d", i), Count: 1, TS: t0.Add(-40 * 24 * time.Hour)})
	}
	b.AdvanceTo(t0.Add(-2 * time.Minute))
	b.TakeClosed()
	b.st = Stats{}
	for _, ev := range shuffled {
		b.Add(ev)
	}
	a.TakeClosed()
	b.TakeClosed()
	if a.st != b.st {
		t.Fatalf("outcomes differ: %+v, %+v", a.st, b.st)
	}
	if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
		t.Fatal("same events, different summaries")
	}
	if !reflect.DeepEqual(allTops(t, a), allTops(t, b)) {
		t.Fatal("same events, different lists")
	}
}

// TestFrequentCalendarListAfterClose: right after a calendar period closes (its final list
// taken in the same step), the window's list is the new period's, not a cached view of the
// closed one.
func TestFrequentCalendarListAfterClose(t *testing.T) {
	cfg := windowsConfig([]WindowConfig{{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Frequent, Capacity: 16}})
	cfg.AllowedLateness = 0
	p, _ := New(cfg)
	h := t0.Truncate(time.Hour)
	for i := range 30 {
		p.Add(event.Event{ItemID: fmt.Sprintf("v%d", i%7), Count: 1, TS: h.Add(time.Duration(i) * time.Minute)})
	}
	p.Add(event.Event{ItemID: "next", Count: 1, TS: h.Add(time.Hour + 30*time.Second)})
	closed := p.TakeClosed()
	if len(closed) != 1 || len(closed[0].Items) == 0 || !closed[0].Final {
		t.Fatalf("final lists %+v", closed)
	}
	l, _ := p.Top("calendar-hour")
	if len(l.Items) != 0 || l.Total != 0 || !l.Start.Equal(h.Add(time.Hour)) {
		t.Fatalf("after the close: %+v, want the new hour's empty list", l)
	}
}
