package window

import (
	"math"
	"testing"
	"time"

	"trending/internal/stream"
	"trending/model/windowset"
)

// TestDecayedViralBurst compares "trending now" (a decayed window, 15-minute half-life) with
// the sliding hour on a viral burst (internal/stream's schedule: VIRAL takes 40% of all
// views for 30 minutes, two hours in, over a Zipf catalog whose top item has about 11%).
// Minute by minute both of the partition's lists equal a brute-force truth recomputed from
// the stream's per-minute counts (the hour exactly, the decayed scores within decayedTol),
// and on that truth:
//   - the decayed list puts VIRAL first within a half-life of the burst's start (+12m with
//     this seed), at least 10 minutes before the hour does (+25m: its count needs most of the
//     burst to pass the steady leader's whole hour);
//   - once the burst ends, VIRAL's decayed score falls by exactly 2^(-1/15) a minute (it
//     forgets smoothly: no view leaves at an edge), and it loses the top within two
//     half-lives (+14m), at least 15 minutes before the hour (+36m), which keeps its count
//     frozen until the burst's first minute leaves the window an hour after it came, then
//     drops it a thirtieth a minute and to nothing when the burst's last minute leaves.
func TestDecayedViralBurst(t *testing.T) {
	const (
		hl    = 15 // minutes
		burst = 120
		dur   = 30
	)
	sc := stream.DefaultConfig()
	sc.Items, sc.Rate, sc.Servers, sc.Seed = 400, 40, 8, 7
	sc.Duration = 4 * time.Hour
	sc.Viral = []stream.Viral{{Item: "VIRAL", At: burst * time.Minute, Share: 0.4, For: dur * time.Minute}}
	g, err := stream.NewGenerator(sc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.AllowedLateness = 0
	cfg.K, cfg.M = 10, 1
	cfg.Windows = []WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "now", Kind: windowset.Decayed, HalfLife: hl * time.Minute, Mode: windowset.Exact},
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := sc.Start.Unix() / 60
	var counts []map[string]uint64 // per minute of the stream
	type at struct {
		hourRank, nowRank int
		hourViews         uint64
		nowScore          float64
	}
	var seen []at // per minute, from the partition's lists
	check := func(asOf int64) {
		n := int(asOf - start) // minutes closed
		hourTruth := map[string]uint64{}
		for m := max(0, n-60); m < n; m++ {
			for it, c := range counts[m] {
				hourTruth[it] += c
			}
		}
		nowTruth := map[string]float64{}
		for m := 0; m < n; m++ {
			for it, c := range counts[m] {
				nowTruth[it] += float64(c) * math.Exp2(-float64(n-m)/hl)
			}
		}
		hour, _ := p.Top("hour")
		now, _ := p.Top("now")
		if want := wantTop(hourTruth, cfg.K); !entriesEqual(hour.Items, want) {
			t.Fatalf("minute %d: hour\n got %v\nwant %v", n, hour.Items, want)
		}
		checkDecayedExact(t, "minute "+time.Duration(n*int(time.Minute)).String(), now, nowTruth, cfg.K)
		a := at{hourRank: -1, nowRank: -1, hourViews: hourTruth["VIRAL"], nowScore: nowTruth["VIRAL"]}
		for i, e := range hour.Items {
			if e.Item == "VIRAL" {
				a.hourRank = i + 1
			}
		}
		for i, e := range now.Scored {
			if e.Item == "VIRAL" {
				a.nowRank = i + 1
			}
		}
		seen = append(seen, a)
	}
	var buf []stream.Record
	for !g.Done() {
		var ok bool
		buf, ok = g.NextSecond(buf[:0])
		if !ok {
			break
		}
		for _, r := range buf {
			m := int(r.Event.TS.Unix()/60 - start)
			for len(counts) <= m {
				counts = append(counts, map[string]uint64{})
			}
			counts[m][r.Event.ItemID] += uint64(r.Event.Count)
			before := max(p.asOf, start)
			p.Add(r.Event)
			for x := before + 1; x <= p.asOf; x++ {
				check(x)
			}
		}
	}
	first := func(f func(at) bool, from int) int {
		for m := from; m < len(seen); m++ {
			if f(seen[m]) {
				return m
			}
		}
		return -1
	}
	// seen[i] is as of minute i+1 of the stream (i+1 minutes closed).
	nowTop := first(func(a at) bool { return a.nowRank == 1 }, burst)
	hourTop := first(func(a at) bool { return a.hourRank == 1 }, burst)
	nowLost := first(func(a at) bool { return a.nowRank != 1 }, burst+dur)
	hourLost := first(func(a at) bool { return a.hourRank != 1 }, burst+dur)
	hourGone := first(func(a at) bool { return a.hourRank == -1 }, burst+dur)
	t.Logf("VIRAL first: decayed at +%dm, hour at +%dm; after the burst ends it loses the top: decayed at +%dm, hour at +%dm; out of the hour's top %d at +%dm",
		nowTop+1-burst, hourTop+1-burst, nowLost+1-burst-dur, hourLost+1-burst-dur, cfg.K, hourGone+1-burst-dur)
	for m := burst + dur - 5; m < burst+dur+70 && m < len(seen); m += 5 {
		t.Logf("+%3dm after the start: hour rank %2d (%5d views), decayed rank %2d (score %8.1f)", m+1-burst, seen[m].hourRank, seen[m].hourViews, seen[m].nowRank, seen[m].nowScore)
	}
	switch {
	case nowTop < 0 || nowTop+1-burst > hl:
		t.Errorf("the decayed list put VIRAL first %d minutes into the burst, want within a half-life (%d)", nowTop+1-burst, hl)
	case hourTop < 0 || hourTop-nowTop < 10:
		t.Errorf("the hour put VIRAL first at +%dm, %d minutes after the decayed list, want 10 or more", hourTop+1-burst, hourTop-nowTop)
	}
	// After the burst: the decayed score falls by 2^(-1/hl) a minute, every minute.
	for m := burst + dur + 1; m < len(seen); m++ {
		if r := seen[m].nowScore / seen[m-1].nowScore; math.Abs(r-math.Exp2(-1.0/hl)) > 1e-9 {
			t.Fatalf("minute %d: VIRAL's decayed score went from %v to %v, ratio %v, want 2^(-1/%d)", m+1, seen[m-1].nowScore, seen[m].nowScore, r, hl)
		}
	}
	if nowLost < 0 || nowLost+1-burst-dur > 2*hl || hourLost-nowLost < 15 {
		t.Errorf("after the burst VIRAL lost the top at +%dm in the decayed list, +%dm in the hour: want within %d (2 half-lives), and 15 minutes before the hour",
			nowLost+1-burst-dur, hourLost+1-burst-dur, 2*hl)
	}
	// The hour: VIRAL's count is frozen until the burst's first minute leaves the window, an
	// hour after it came; then it shrinks minute by minute and is gone after the last.
	for m := burst + dur; m < burst+60; m++ {
		if seen[m].hourViews != seen[burst+dur-1].hourViews || seen[m].hourRank != seen[burst+dur-1].hourRank {
			t.Fatalf("+%dm: the hour's VIRAL count moved (%d, rank %d) before its first minute left the window", m+1-burst, seen[m].hourViews, seen[m].hourRank)
		}
	}
	if seen[burst+60+dur-1].hourViews != 0 || seen[burst+60+dur-2].hourViews == 0 {
		t.Errorf("the hour's VIRAL count does not end exactly when the burst's last minute leaves: %d, %d",
			seen[burst+60+dur-2].hourViews, seen[burst+60+dur-1].hourViews)
	}
	if hourLost < burst+60 {
		t.Errorf("the hour dropped VIRAL from the top at +%dm, before its first minute left the window", hourLost+1-burst)
	}
}
