//go:build soak

package soak

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"trending/internal/itest"
	"trending/internal/stream"
)

type splitReport struct {
	cfg                    splitConfig
	start                  time.Time
	samples                []splitSample
	checks                 []check
	batch                  *batchStats
	loadgenCPU             float64
	feedEnd                time.Duration
	truth                  *stream.Truth
	uptimeStart, uptimeEnd string
	roles, feeders         []*itest.Child
	notes                  []string // how the end waited
}

// loadgenTotals sums the views and events of every loadgen's "loadgen done" line.
func loadgenTotals(roles []*itest.Child) (views, events float64) {
	for _, c := range roles {
		for _, line := range strings.Split(c.Logs.String(), "\n") {
			var l struct {
				Msg    string  `json:"msg"`
				Views  float64 `json:"views"`
				Events float64 `json:"events"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "loadgen done" {
				views += l.Views
				events += l.Events
			}
		}
	}
	return views, events
}

func fmtQ(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return ">300s"
	}
	return fmt.Sprintf("≤%gs", v)
}

func (r *splitReport) write() string {
	var b strings.Builder
	c := r.cfg
	ss := r.samples
	last := ss[len(ss)-1]
	views := float64(r.truth.Views())
	valid := last.valid
	fmt.Fprintf(&b, "# soak-split report\n\n")
	fmt.Fprintf(&b, "`make soak-split SOAK_DURATION=%s SOAK_RATE=%g SOAK_PEAK_RATE=%g SOAK_PEAK_DURATION=%s` (SOAK_PARTITIONS=%d, SOAK_ITEMS=%d, SOAK_SERVERS=%d, SOAK_BATCH_EVERY=%s)\n\n",
		c.dur, c.rate, c.peakRate, c.peakDur, c.partitions, c.items, c.servers, c.batchEvery)
	fmt.Fprintf(&b, "- run started %s (event time of the first second), %d CPUs (runtime.NumCPU)\n", r.start.Format(time.RFC3339), runtime.NumCPU())
	fmt.Fprintf(&b, "- `uptime` at the start: %s\n- `uptime` at the end: %s\n", r.uptimeStart, r.uptimeEnd)
	fmt.Fprintf(&b, "- roles, each a child process of the built binary on the real Kafka, MinIO and ClickHouse: `speed` x2 (`--sketch-width 65536`, otherwise defaults), `archive`, `merge --store clickhouse://...`, `serve --store clickhouse://...`, and the batch's schedule: `batch run --windows hour --from <the run's first hour> --to now --clickhouse ... --store ...` every %s\n", c.batchEvery)
	fmt.Fprintf(&b, "- feeder: `trending loadgen` at %g views/s for %s, then %g views/s for %s (Zipf 1.1 over %d items, pre-summed by %d servers, 1%% late by 2m, 0.05%% malformed), with its truth files\n", c.rate, c.dur, c.peakRate, c.peakDur, c.items, c.servers)
	lv, le := loadgenTotals(r.feeders)
	if lg := r.loadgens(); lg != "" {
		fmt.Fprintf(&b, "- loadgen sent %.0f views in %.0f events (%.3f events a view); its own CPU %.1f s; its last lines:\n%s\n", lv, le, le/math.Max(lv, 1), r.loadgenCPU, lg)
	}
	fmt.Fprintf(&b, "- the feed ended at t=%s; the speed workers counted %.0f valid events (the truth: %.0f views)\n\n", r.feedEnd.Round(time.Second), valid, views)

	// Throughput, lag, checkpoints.
	fmt.Fprintf(&b, "## Over time\n\n")
	fmt.Fprintf(&b, "| t | phase | events/s counted | speed lag (msgs) | archive lag (msgs) | checkpoints | last checkpoint bytes (both workers) | checkpoint pauses: count, mean, max bucket |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, s := range ss {
		var rate float64
		var prev splitSample
		if i > 0 {
			prev = ss[i-1]
			rate = (s.counted - prev.counted) / (s.at - prev.at).Seconds()
		}
		n := s.pauseCount - prev.pauseCount
		pause := "-"
		if n > 0 {
			q, _ := quantile(s.pauseBuckets, prev.pauseBuckets, 1)
			pause = fmt.Sprintf("%.0f, %.1f ms, ≤%s", n, (s.pauseSum-prev.pauseSum)/n*1000, fmtDurS(q))
		}
		rateS := fmt.Sprintf("%.0f", rate)
		if i > 0 && s.at-prev.at < 5*time.Second {
			rateS = "-" // a sample right after the previous one (a phase's end): too short a rate
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f | %.0f | %.0f | %s |\n", s.at.Round(time.Second), s.phase, rateS, s.speedLag, s.archiveLag, s.ckpts, s.ckptBytes, pause)
	}

	// Freshness per window, per interval.
	var wins []string
	for w := range last.fresh {
		wins = append(wins, w)
	}
	sort.Strings(wins)
	fmt.Fprintf(&b, "\n## Freshness (`trending_served_freshness_seconds`, p50/p99 of the new versions in each interval, bucket upper bounds)\n\n| t |")
	for _, w := range wins {
		fmt.Fprintf(&b, " %s |", w)
	}
	fmt.Fprintf(&b, "\n| --- |%s\n", strings.Repeat(" --- |", len(wins)))
	for i, s := range ss {
		var prev splitSample
		if i > 0 {
			prev = ss[i-1]
		}
		fmt.Fprintf(&b, "| %s |", s.at.Round(time.Second))
		for _, w := range wins {
			p50, n := quantile(s.fresh[w], prev.fresh[w], 0.5)
			p99, _ := quantile(s.fresh[w], prev.fresh[w], 0.99)
			fmt.Fprintf(&b, " %s / %s (%.0f) |", fmtQ(p50), fmtQ(p99), n)
		}
		fmt.Fprintf(&b, "\n")
	}
	fmt.Fprintf(&b, "\nWhole run:")
	for _, w := range wins {
		p50, n := quantile(last.fresh[w], nil, 0.5)
		p99, _ := quantile(last.fresh[w], nil, 0.99)
		fmt.Fprintf(&b, " %s %s / %s (%.0f versions);", w, fmtQ(p50), fmtQ(p99), n)
	}
	fmt.Fprintf(&b, "\n")

	// RSS and CPU per role over time.
	names := []string{}
	for _, ch := range r.roles {
		names = append(names, ch.Name)
	}
	fmt.Fprintf(&b, "\n## RSS MB and cores used (CPU-seconds per wall second in the interval) per role\n\n| t |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	fmt.Fprintf(&b, "\n| --- |%s\n", strings.Repeat(" --- |", len(names)))
	for i, s := range ss {
		fmt.Fprintf(&b, "| %s |", s.at.Round(time.Second))
		for _, n := range names {
			cores := math.NaN()
			if i > 0 {
				cores = (s.cpu[n] - ss[i-1].cpu[n]) / (s.at - ss[i-1].at).Seconds()
			}
			fmt.Fprintf(&b, " %.0f MB, %.2f |", s.rssMB[n], cores)
		}
		fmt.Fprintf(&b, "\n")
	}

	// Per role: CPU-seconds per million events, peak RSS, and the projection.
	perM := map[string]float64{}
	fmt.Fprintf(&b, "\n## Per role\n\nEvents are Kafka messages (pre-summed views): the speed workers' valid events, %.0f in all (%.0f views).\n\n", valid, views)
	fmt.Fprintf(&b, "| role | CPU-seconds | CPU-s per million events | CPU-s per million views | peak RSS MB |\n| --- | --- | --- | --- | --- |\n")
	for _, n := range names {
		peak := 0.0
		for _, s := range ss {
			peak = math.Max(peak, s.rssMB[n])
		}
		cpu := last.cpu[n]
		perM[n] = cpu / (valid / 1e6)
		fmt.Fprintf(&b, "| %s | %.1f | %.2f | %.2f | %.0f |\n", n, cpu, perM[n], cpu/(views/1e6), peak)
	}
	// The schedule's `batch run --to now` rebuilds every closed hour in its range at each run,
	// so its total is not a cost per event; the last run, forced over every hour of the run,
	// reads each event once: the projection uses that one.
	fmt.Fprintf(&b, "| batch, all runs (%d, %d failed: each scheduled `batch run --to now` rebuilds every closed hour in its range) | %.1f | %.2f | %.2f | %.0f |\n",
		r.batch.runs, r.batch.failures, r.batch.cpu, r.batch.cpu/(valid/1e6), r.batch.cpu/(views/1e6), r.batch.maxRSSMB)
	perM["batch"] = r.batch.lastCPU / (valid / 1e6)
	fmt.Fprintf(&b, "| batch, the last run (forced over every hour of the run: each event read once) | %.1f | %.2f | %.2f | - |\n",
		r.batch.lastCPU, perM["batch"], r.batch.lastCPU/(views/1e6))
	if r.batch.lastErr != "" {
		fmt.Fprintf(&b, "\nlast batch failure: %s\n", r.batch.lastErr)
	}
	speedPerM := perM["speed-1"] + perM["speed-2"] // both workers together count every event once
	ratio := le / math.Max(lv, 1)
	fmt.Fprintf(&b, "\n## Projection\n\nCores = CPU-s per million events x events/s / 10^6, at this run's %.3f events a view (its items and servers) and at 1 (no pre-summing, the bound). The speed row is both workers' CPU over the events they counted together; the batch row is the batch's CPU per event archived, spent once per hour (its cores are an average, it runs in bursts).\n\n", ratio)
	fmt.Fprintf(&b, "| role | CPU-s per M events | 5 bn/day avg (57,870 views/s) | 5 bn/day 3x peak (173,611) | 50 bn/day avg (578,704) | 50 bn/day 3x peak (1,736,111) |\n| --- | --- | --- | --- | --- | --- |\n")
	rows := []struct {
		name string
		v    float64
	}{{"speed (x2 together)", speedPerM}, {"archive", perM["archive"]}, {"merge", perM["merge"]}, {"serve", perM["serve"]}, {"batch", perM["batch"]}}
	limit, limitV := "", 0.0
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %.2f |", row.name, row.v)
		for _, vps := range []float64{57870, 173611, 578704, 1736111} {
			fmt.Fprintf(&b, " %.2f (%.2f) |", row.v*vps*ratio/1e6, row.v*vps/1e6)
		}
		fmt.Fprintf(&b, "\n")
		if row.v > limitV {
			limit, limitV = row.name, row.v
		}
	}
	fmt.Fprintf(&b, "\nEach cell: cores at this run's events a view (in brackets: at one event a view). The most CPU a million events: %s. merge and serve do not scale with events (a publish a second, the reads), so their projection is an upper bound from this run.\n", limit)

	// Did the machine hold the rate?
	fmt.Fprintf(&b, "\n## Held the rate?\n\n")
	for _, ph := range []string{"average", "peak"} {
		var first, lastS *splitSample
		maxLag := 0.0
		for i := range ss {
			if ss[i].phase == ph {
				if first == nil {
					first = &ss[i]
				}
				lastS = &ss[i]
				maxLag = math.Max(maxLag, ss[i].speedLag)
			}
		}
		if first == nil || first == lastS {
			fmt.Fprintf(&b, "- %s: too few samples\n", ph)
			continue
		}
		span := (lastS.at - first.at).Seconds()
		rate := (lastS.counted - first.counted) / span
		fmt.Fprintf(&b, "- %s: counted %.0f events/s between t=%s and t=%s; speed lag at most %.0f messages, %.0f at the phase's last sample; archive lag %.0f at its last sample\n",
			ph, rate, first.at.Round(time.Second), lastS.at.Round(time.Second), maxLag, lastS.speedLag, lastS.archiveLag)
		// Cores each role used in the phase, the busiest named: the limit when the rate was not held.
		var use []string
		busiest, busiestV := "", 0.0
		for _, n := range names {
			v := (lastS.cpu[n] - first.cpu[n]) / span
			use = append(use, fmt.Sprintf("%s %.2f", n, v))
			if v > busiestV {
				busiest, busiestV = n, v
			}
		}
		held := lastS.speedLag < math.Max(1000, 0.1*rate) && lastS.archiveLag < math.Max(1000, 0.1*rate)
		verdict := "held"
		if !held {
			verdict = fmt.Sprintf("NOT held (lag growing): the busiest role is %s at %.2f cores of this machine's %d; see the projection for the cores it needs", busiest, busiestV, runtime.NumCPU())
		}
		fmt.Fprintf(&b, "  - %s; cores used: %s\n", verdict, strings.Join(use, ", "))
	}

	fmt.Fprintf(&b, "\n## End checks\n\nAfter the feed: %s.\n\n| check | result | detail |\n| --- | --- | --- |\n", strings.Join(r.notes, "; "))
	for _, ch := range r.checks {
		res := "PASS"
		if !ch.ok {
			res = "FAIL"
			if !ch.required {
				res = "differs (sketch window: not required)"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", ch.what, res, strings.ReplaceAll(ch.detail, "|", "/"))
	}
	return b.String()
}

func fmtDurS(s float64) string {
	if math.IsInf(s, 1) {
		return ">8s"
	}
	return (time.Duration(s * float64(time.Second))).String()
}

func (r *splitReport) loadgens() string {
	var out []string
	for _, c := range r.feeders {
		var status []string
		for _, line := range strings.Split(c.Logs.String(), "\n") {
			if strings.HasPrefix(line, "loadgen: ") {
				status = append(status, line)
			}
		}
		if len(status) > 0 {
			out = append(out, "  - "+c.Name+": `"+status[len(status)-1]+"`")
		}
	}
	return strings.Join(out, "\n")
}
