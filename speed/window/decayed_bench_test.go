package window

import (
	"testing"
	"time"

	"trending/model/windowset"
)

// BenchmarkDecayedVsHour is the per-event cost of a decayed window ("trending now",
// half-life 1 hour) against the sliding hour, both exact, and of a decayed sketch window
// (the default 2^18 x 5 grid, float cells), each alone in a partition, fed the same events
// in the same run: chunk by chunk in turn, each partition's time measured on its own, so
// that a noisy shared machine slows all of them alike. "add" is counting alone (Add, and the
// minutes it closes); "add+live-1s" adds LiveAll once a second of event time, as the speed
// worker publishes. The events are the default scenario's shape for one partition (150,000
// events a minute over a million items, Zipf 1.1, up to 20 s out of order), 40 minutes of
// event time. Reported: ns/event of each, the decayed windows' ratios to the hour, each
// partition's state at the end (Stats().Bytes: items, buckets, values, sketch), and ("add"
// only) what incremental checkpoints write: the first, after 39 minutes, then one a minute
// later (the manifest state and the pieces the first did not store: the hour's new minute
// bucket, a decayed window's whole state).
// Run: go test ./speed/window -run '^$' -bench DecayedVsHour -benchtime 1x
func BenchmarkDecayedVsHour(b *testing.B) {
	const perMinute, catalog = 150_000, 1 << 20
	evs, _ := benchEvents(40*perMinute, catalog, perMinute)
	configs := []struct {
		name string
		wc   WindowConfig
	}{
		{"hour", WindowConfig{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact}},
		{"decayed", WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour, Mode: windowset.Exact}},
		{"decayed-sketch", WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour, Mode: windowset.Sketch}},
	}
	for _, live := range []bool{false, true} {
		name := "add"
		if live {
			name = "add+live-1s"
		}
		b.Run(name, func(b *testing.B) {
			ns := make([]time.Duration, len(configs))
			ckpt := make([]int, len(configs))
			var ps []*Partition
			for range b.N {
				ps = make([]*Partition, len(configs))
				for i, c := range configs {
					var err error
					if ps[i], err = New(windowsConfig([]WindowConfig{c.wc})); err != nil {
						b.Fatal(err)
					}
				}
				next := make([]time.Time, len(ps))
				for i := range next {
					next[i] = evs[0].TS.Truncate(time.Second).Add(time.Second)
				}
				const chunk = 1 << 13
				lastMinute := len(evs) - perMinute
				for lo, hi := 0, 0; lo < len(evs); lo = hi {
					hi = min(lo+chunk, len(evs))
					if lo < lastMinute && hi >= lastMinute {
						hi = lastMinute
					}
					if lo == lastMinute && !live {
						for i, p := range ps {
							ckpt[i] = checkpointBytes(b, p, true)
						}
					}
					for i, p := range ps {
						t := time.Now()
						for j := lo; j < hi; j++ {
							p.Add(evs[j])
							if live && !evs[j].TS.Before(next[i]) {
								next[i] = evs[j].TS.Truncate(time.Second).Add(time.Second)
								p.LiveAll()
							}
						}
						ns[i] += time.Since(t)
					}
				}
			}
			n := float64(len(evs) * b.N)
			for i, c := range configs {
				b.ReportMetric(float64(ns[i].Nanoseconds())/n, c.name+"-ns/event")
				b.ReportMetric(float64(ps[i].Stats().Bytes)/1e6, c.name+"-MB")
				if !live {
					b.ReportMetric(float64(ckpt[i])/1e3, c.name+"-ckpt-first-KB")
					b.ReportMetric(float64(checkpointBytes(b, ps[i], false))/1e3, c.name+"-ckpt-next-KB")
				}
				if i > 0 {
					b.ReportMetric(float64(ns[i])/float64(ns[0]), c.name+"/hour")
				}
			}
		})
	}
}

// checkpointBytes takes an incremental checkpoint of p and returns what it writes: the state
// and the pieces no earlier stored checkpoint holds; stored records it as stored.
func checkpointBytes(b *testing.B, p *Partition, stored bool) int {
	b.Helper()
	snap, err := p.SnapshotIncremental()
	if err != nil {
		b.Fatal(err)
	}
	state, pieces, err := snap.Encode()
	if err != nil {
		b.Fatal(err)
	}
	n := len(state)
	for _, pc := range pieces {
		n += len(pc.Data)
	}
	if stored {
		p.Stored(snap)
	} else {
		p.Abandon(snap)
	}
	return n
}
