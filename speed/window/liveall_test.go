package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// TestLiveAllIncremental drives LiveAll's incremental paths and checks every exact list
// against Live (a computation from scratch) at every call: a small list (4 items) over a
// stream whose popular items change every few minutes, so that
//   - minutes close between most calls (the caches carry over without a rebuild),
//   - the open minutes reach new minutes, so buckets expire into the caches and lower their
//     items, some under the floor, until C runs short of the floor (a rebuild),
//   - items join C with upper bounds (their expiring counts not looked up) and reach the
//     list (resolved by a scan),
//   - C outgrows its cap (the floor rises),
//   - late events land in expiring buckets and elsewhere,
//   - idle stretches and AdvanceTo move the watermark past the open minutes' reach,
//   - and the partition is restored from a snapshot now and then, LiveAll called at once.
//
// It fails unless each of those happened.
func TestLiveAllIncremental(t *testing.T) {
	var tot liveState
	calls, incremental := 0, 0
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c, i := liveAllIncremental(t, seed, &tot)
			calls += c
			incremental += i
		})
	}
	t.Logf("%d calls, %d exact lists without a rebuild; rebuilds %d (breaches %d), expiries %d, resolves %d, raises %d",
		calls, incremental, tot.rebuilds, tot.breaches, tot.expiries, tot.resolves, tot.raises)
	if t.Failed() {
		return
	}
	if tot.breaches == 0 || tot.expiries == 0 || tot.resolves == 0 || tot.raises == 0 || incremental < calls*9/10 {
		t.Fatalf("an incremental path was not exercised: %d calls, %d exact lists without a rebuild; breaches %d, expiries %d, resolves %d, raises %d",
			calls, incremental, tot.breaches, tot.expiries, tot.resolves, tot.raises)
	}
}

func liveAllIncremental(t *testing.T, seed uint64, tot *liveState) (calls, incremental int) {
	cfg := windowsConfig([]WindowConfig{
		{Name: "10min", Kind: windowset.Sliding, Length: 10 * time.Minute, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "3h", Kind: windowset.Sliding, Length: 3 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: trmodel.Hour, Mode: windowset.Exact},
		{Name: "all-exact", Kind: windowset.AllTime, Mode: windowset.Exact},
		{Name: "sk-hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Sketch},
	})
	cfg.K, cfg.M, cfg.AllowedLateness = 2, 2, 90*time.Second
	cfg.Sketch = sketch.Config{Width: 1 << 8, Depth: 3, Seed: 42}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	hot := rand.NewZipf(r, 1.3, 1, 30)
	tail := rand.NewZipf(r, 1.1, 1, 400)
	now := t0
	nExact := 5
	check := func(at string) {
		exactBefore := 0
		if p.live != nil {
			exactBefore = p.live.rebuilds
		}
		all := p.LiveAll()
		calls++
		if p.live.rebuilds-exactBefore < nExact {
			incremental++
		}
		for j, wc := range cfg.Windows {
			l, err := p.Live(wc.Name)
			if err != nil {
				t.Fatal(err)
			}
			checkLiveAll(t, fmt.Sprintf("%s %s", at, wc.Name), wc, all[j], l)
		}
	}
	add := func() {
		ls := p.live
		if ls == nil {
			return
		}
		tot.rebuilds += ls.rebuilds
		tot.breaches += ls.breaches
		tot.expiries += ls.expiries
		tot.resolves += ls.resolves
		tot.raises += ls.raises
	}
	for i := range 15000 {
		now = now.Add(time.Duration(r.Int64N(int64(2 * time.Second))))
		switch r.IntN(1500) {
		case 0:
			// An idle stretch: the next event closes minutes past the open ones' reach, so
			// the state drops buckets no cache has seen expire.
			now = now.Add(time.Duration(3+r.IntN(20)) * time.Minute)
		case 1:
			// The runtime's advance of an idle partition.
			now = now.Add(time.Duration(r.IntN(5)) * time.Minute)
			p.AdvanceTo(now)
		}
		var item string
		phase := now.Sub(t0) / (7 * time.Minute)
		if phase%4 == 3 {
			// A quiet phase: items seen about once, so the lists' items expire from the short
			// windows with nobody to take their place above the floor.
			item = fmt.Sprintf("q%d", r.IntN(1_000_000))
		} else if r.IntN(2) == 0 {
			// The popular items of this phase of 7 minutes.
			item = fmt.Sprintf("h%d-%d", phase, hot.Uint64())
		} else {
			item = fmt.Sprintf("t%d", tail.Uint64())
		}
		ts := now.Add(-time.Duration(r.Int64N(int64(80 * time.Second))))
		switch x := r.IntN(100); {
		case x < 5:
			ts = now.Add(-2*time.Minute - time.Duration(r.Int64N(int64(10*time.Minute))))
		case x < 6:
			ts = now.Add(-time.Duration(r.Int64N(int64(4 * time.Hour))))
		}
		p.Add(event.Event{ItemID: item, Count: uint32(1 + r.IntN(3)), TS: ts.Truncate(time.Millisecond)})
		p.TakeClosed()
		if r.IntN(6) == 0 {
			check(fmt.Sprintf("seed %d event %d", seed, i))
			if t.Failed() {
				return
			}
		}
		if r.IntN(2000) == 0 {
			add()
			q, err := Restore(cfg, mustMarshal(t, p))
			if err != nil {
				t.Fatal(err)
			}
			p = q
			check(fmt.Sprintf("seed %d event %d, restored", seed, i))
			if t.Failed() {
				return
			}
		}
	}
	add()
	return calls, incremental
}
