//go:build soak

package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/internal/stream"
	"trending/model"
	"trending/model/event"
	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
)

// TestSoakSplit is issue 33's soak: the split roles as separate processes of the built
// binary on the real Kafka, MinIO and ClickHouse (`trending speed` x2, `archive`, `merge` to
// the ClickHouse serving store, `serve` reading it, and the batch's schedule: `trending batch
// run` of the closed hours every SOAK_BATCH_EVERY), fed by `trending loadgen` at SOAK_RATE
// views/s for SOAK_DURATION and then SOAK_PEAK_RATE for SOAK_PEAK_DURATION. Every SOAK_SAMPLE
// it records events/s counted, consumer lag, freshness p50/p99 per window, RSS and CPU per
// role, checkpoint bytes and pauses; at the end it checks every closed hour's exact list, the
// live lists over their spans and the DLQ against loadgen's truth, and writes the report
// (SOAK_REPORT, default soak-split-report.md in the test's directory) with the CPU-seconds
// per million events of each role and the cores they project for 5 and 50 billion views a day.
// Run it with `make soak-split`.
func TestSoakSplit(t *testing.T) {
	kafkaAddr := itest.Kafka(t)
	s3 := itest.S3(t)
	chAddr := itest.ClickHouse(t)
	cfg := splitConfig{
		dur:        envDuration("SOAK_DURATION", time.Hour),
		rate:       envFloat("SOAK_RATE", 58000),
		peakDur:    envDuration("SOAK_PEAK_DURATION", 5*time.Minute),
		peakRate:   envFloat("SOAK_PEAK_RATE", 175000),
		partitions: int(envFloat("SOAK_PARTITIONS", 4)),
		items:      int(envFloat("SOAK_ITEMS", 100000)),
		servers:    int(envFloat("SOAK_SERVERS", 500)),
		every:      envDuration("SOAK_SAMPLE", 30*time.Second),
		batchEvery: envDuration("SOAK_BATCH_EVERY", time.Minute),
	}
	ctx := itest.Context(t, cfg.dur+cfg.peakDur+30*time.Minute)
	dir := t.TempDir()
	bin := itest.Build(t, dir, "../../cmd/trending")
	uptimeStart := uptime()

	// The topic, its bucket and a ClickHouse database of this test's own.
	topic := itest.Name(t, "soaksplit")
	kc := eventlog.Plain(kafkaAddr)
	if _, err := kc.EnsureTopics(ctx, eventlog.Spec{Name: topic, Partitions: cfg.partitions}); err != nil {
		t.Fatal(err)
	}
	o := chstore.DefaultOptions()
	o.Addr, o.Database = chAddr, itest.Underscored(t, "trending_soaksplit")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database); conn.Close() })
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	dsn := "clickhouse://" + chAddr + "/" + o.Database
	kafkaFlags := []string{"--kafka", kafkaAddr, "--views-topic", topic, "--partitions", fmt.Sprint(cfg.partitions)}
	s3Flags := []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", topic}
	role := func(name, cmd string, metrics string, extra ...string) *itest.Child {
		a := append([]string{cmd}, kafkaFlags...)
		if cmd != "merge" {
			a = append(a, s3Flags...)
		}
		a = append(a, "--metrics-addr", metrics, "--log-format", "json")
		return itest.NewChild(bin, name, append(a, extra...)...)
	}
	// The speed workers as the existing soak runs them (4 partitions, sketch width 65,536:
	// the default 262,144 would put 1.3 GB of month sketches on this shared machine).
	speedFlags := []string{"--sketch-width", "65536"}
	addrs := map[string]string{}
	for _, n := range []string{"speed-1", "speed-2", "archive", "merge", "serve"} {
		addrs[n] = itest.FreeAddr(t)
	}
	roles := []*itest.Child{
		role("speed-1", "speed", addrs["speed-1"], speedFlags...),
		role("speed-2", "speed", addrs["speed-2"], speedFlags...),
		role("archive", "archive", addrs["archive"], "--roll-age", "1m"),
		role("merge", "merge", addrs["merge"], "--store", dsn),
		itest.NewChild(bin, "serve", "serve", "--store", dsn, "--listen", addrs["serve"], "--log-format", "json"),
	}
	for _, c := range roles {
		c.Start(t)
	}
	t.Cleanup(func() {
		for _, c := range roles {
			if !c.Kill() || t.Failed() {
				t.Logf("%s output (last 20 lines):\n%s", c.Name, c.Logs.Tail(20))
			}
		}
	})
	base := "http://" + addrs["serve"]
	waitReady(t, base)

	// The batch's schedule: every batchEvery, the closed hours since the run began (the
	// default lateness: an hour closes 10 minutes after its end, once every partition's
	// archive passed it). Its CPU is the sum over its runs.
	start := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
	batchArgs := func(extra ...string) []string {
		a := append([]string{"batch", "run", "--windows", "hour", "--from", start.Truncate(time.Hour).Format("2006-01-02T15"),
			"--clickhouse", dsn, "--store", dsn, "--partitions", fmt.Sprint(cfg.partitions), "--log-format", "json"}, s3Flags...)
		return append(a, extra...)
	}
	bs := &batchStats{}
	batchStop := make(chan struct{})
	batchDone := make(chan struct{})
	go func() {
		defer close(batchDone)
		tick := time.NewTicker(cfg.batchEvery)
		defer tick.Stop()
		for {
			select {
			case <-batchStop:
				return
			case <-tick.C:
				bs.run(ctx, bin, batchArgs("--to", "now"))
			}
		}
	}()

	// The feeder: loadgen at the rate, then at the peak, each with its truth file.
	type phase struct {
		name  string
		rate  float64
		dur   time.Duration
		start time.Time
		truth string
		lg    *itest.Child
	}
	phases := []*phase{{name: "average", rate: cfg.rate, dur: cfg.dur, start: start}}
	if cfg.peakDur > 0 && cfg.peakRate > 0 {
		phases = append(phases, &phase{name: "peak", rate: cfg.peakRate, dur: cfg.peakDur, start: start.Add(cfg.dur)})
	}
	for i, p := range phases {
		p.truth = filepath.Join(dir, fmt.Sprintf("truth-%d.jsonl", i))
		p.lg = itest.NewChild(bin, "loadgen-"+p.name, "loadgen", "--kafka", kafkaAddr, "--views-topic", topic,
			"--rate", fmt.Sprint(p.rate), "--duration", p.dur.String(), "--items", fmt.Sprint(cfg.items),
			"--servers", fmt.Sprint(cfg.servers), "--late", "0.01", "--malformed", "0.0005", "--seed", fmt.Sprint(7+i),
			"--start", p.start.Format(time.RFC3339), "--truth", p.truth, "--progress-every", "30s", "--log-format", "json")
		t.Cleanup(func() { p.lg.Kill() })
	}
	sm := newSampler(roles, addrs)
	t0 := time.Now()
	samples := []splitSample{sm.sample(t, 0, "start")}
	var loadgenCPU float64
	for _, p := range phases {
		p.lg.Start(t)
		done := make(chan error, 1)
		go func() { done <- p.lg.Cmd.Wait() }()
		tick := time.NewTicker(cfg.every)
	feed:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: %v\n%s", p.lg.Name, err, p.lg.Logs.Tail(20))
				}
				break feed
			case <-tick.C:
				samples = append(samples, sm.sample(t, time.Since(t0), p.name))
			}
		}
		tick.Stop()
		loadgenCPU += cpuOf(p.lg.Cmd.ProcessState)
		t.Logf("%s: %s", p.lg.Name, lastLine(p.lg.Logs.String()))
	}
	feedEnd := time.Since(t0)

	// Drain: every speed partition and the archive at the end of the topic.
	drainStart := time.Now()
	for time.Since(drainStart) < 5*time.Minute {
		s := sm.sample(t, time.Since(t0), "drain")
		samples = append(samples, s)
		if s.speedLag == 0 && s.archiveLag == 0 && s.speedLagSeen && s.archiveLagSeen {
			break
		}
		time.Sleep(10 * time.Second)
	}
	// The speed lists' open minutes close behind the watermark: one more publish round.
	time.Sleep(15 * time.Second)
	samples = append(samples, sm.sample(t, time.Since(t0), "end"))
	var malformed int
	for _, p := range phases {
		malformed += loadgenMalformed(p.lg.Logs.String())
	}
	// The archive's progress at the end of every partition (its last roll: --roll-age), and
	// the DLQ holding as many messages as loadgen sent malformed ones (a worker flushes its
	// DLQ queue at 512 messages or with a checkpoint).
	ends, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, topic, s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	archived := waitUntil(3*time.Minute, func() (bool, string) {
		ps, err := archive.NewReader(obj).Progress(ctx)
		if err != nil {
			return false, err.Error()
		}
		next := map[int]int64{}
		for _, p := range ps {
			next[int(p.Partition)] = p.NextOffset
		}
		for _, o := range ends {
			if next[o.Partition] < o.Last {
				return false, fmt.Sprintf("archive progress %v, topic ends %v", next, ends)
			}
		}
		return true, ""
	})
	dlqTopic := eventlog.NamesFor(topic).DLQ
	dlqIn := waitUntil(3*time.Minute, func() (bool, string) {
		offs, err := kc.TopicOffsets(ctx, dlqTopic)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, o := range offs {
			n += int(o.Last - o.First)
		}
		return n >= malformed, fmt.Sprintf("the DLQ holds %d messages, loadgen sent %d malformed", n, malformed)
	})
	t.Logf("archive at the topic's end: %s; DLQ complete: %s", archived, dlqIn)

	truth := readTruths(t, phases[0].truth, func() string {
		if len(phases) > 1 {
			return phases[1].truth
		}
		return ""
	}())

	// The live lists against the truth over their spans (the exact windows must equal it;
	// the sketch windows are shown, not required).
	var checks []check
	endAt := start.Add(cfg.dur + cfg.peakDur - time.Second)
	monthStart := time.Date(endAt.Year(), endAt.Month(), 1, 0, 0, 0, 0, time.UTC)
	for _, w := range []struct {
		name, query string
		exact       bool
	}{
		{"hour", "window=hour", true}, {"day", "window=day", true},
		{"calendar hour " + endAt.Format("2006-01-02T15"), "window=hour&start=" + endAt.Truncate(time.Hour).Format(time.RFC3339), true},
		{"calendar day " + endAt.Format("2006-01-02"), "window=day&start=" + endAt.Truncate(24*time.Hour).Format(time.RFC3339), true},
		{"month (sketch)", "window=month", false}, {"calendar month (sketch)", "window=month&start=" + monthStart.Format(time.RFC3339), false},
	} {
		var l model.List
		code, body := get(base + "/v1/trending?" + w.query + "&limit=100")
		if code != 200 || json.Unmarshal(body, &l) != nil {
			checks = append(checks, check{what: "live " + w.name, required: w.exact, detail: fmt.Sprintf("GET: %d %.200s", code, body)})
			continue
		}
		from, to := l.WindowStart, l.AsOf.Add(time.Millisecond)
		if !l.Start.IsZero() {
			from, to = l.Start, l.End
		}
		ok := equal(l.Items, truth.Range(from, to).Top(k))
		checks = append(checks, check{what: "live " + w.name, ok: ok, required: w.exact,
			detail: fmt.Sprintf("%s list, span %s to %s, as of %s, %d items", l.Source, from.Format(time.RFC3339), to.Format(time.RFC3339), l.AsOf.Format(time.RFC3339), len(l.Items))})
	}

	// The DLQ: exactly the malformed messages loadgen sent, no valid event among them.
	total, sources, valid := dlqSources(t, ctx, kc, dlqTopic)
	checks = append(checks, check{what: "DLQ holds only the malformed", required: true,
		ok:     total == malformed && valid == 0 && len(sources) == total,
		detail: fmt.Sprintf("%d messages from %d distinct sources, %d valid events; loadgen sent %d malformed", total, len(sources), valid, malformed)})

	// The batch: every hour the schedule saw closed, then a last run that forces the hours
	// still open (the archive has every offset by now), each against the truth.
	close(batchStop)
	<-batchDone
	scheduledExact := bs.exactHours()
	bs.run(ctx, bin, batchArgs("--to", start.Add(cfg.dur+cfg.peakDur).Format("2006-01-02T15"), "--force"))
	st, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, last := start.Truncate(time.Hour), start.Add(cfg.dur+cfg.peakDur).Truncate(time.Hour)
	for h := first; !h.After(last); h = h.Add(time.Hour) {
		l, err := st.Get(ctx, model.Key{Window: "hour", Start: h})
		c := check{what: "hour " + h.Format("2006-01-02T15") + " exact", required: true}
		if slices.Contains(scheduledExact, h.Format("2006-01-02T15")) {
			c.what += " (closed, by the schedule)"
		} else {
			c.what += " (open at the end: forced)"
		}
		if err != nil {
			c.detail = err.Error()
		} else {
			c.ok = l.Source == model.SourceBatch && l.Exact && equal(l.Items, truth.Range(h, h.Add(time.Hour)).Top(k))
			c.detail = fmt.Sprintf("%s list, exact %v, %d items", l.Source, l.Exact, len(l.Items))
		}
		checks = append(checks, c)
	}

	for _, c := range roles {
		if c.Exited() {
			checks = append(checks, check{what: c.Name + " still running", required: true, detail: lastLine(c.Logs.String())})
		}
	}
	rep := splitReport{cfg: cfg, start: start, samples: samples, checks: checks, batch: bs, loadgenCPU: loadgenCPU,
		feedEnd: feedEnd, truth: truth, uptimeStart: uptimeStart, uptimeEnd: uptime(), roles: roles,
		notes: []string{"the archive's progress at the topic's end " + archived, "the DLQ holding as many messages as loadgen sent malformed ones " + dlqIn}}
	for _, p := range phases {
		rep.feeders = append(rep.feeders, p.lg)
	}
	out := rep.write()
	os.WriteFile(filepath.Join(dir, "soak-split-report.md"), []byte(out), 0o644)
	if p := os.Getenv("SOAK_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Log("\n" + out)
	for _, c := range checks {
		if c.required && !c.ok {
			t.Errorf("%s: FAIL (%s)", c.what, c.detail)
		}
	}
}

type splitConfig struct {
	dur, peakDur, every, batchEvery time.Duration
	rate, peakRate                  float64
	partitions, items, servers      int
}

func envFloat(name string, def float64) float64 {
	if v := os.Getenv(name); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

type check struct {
	what, detail string
	ok, required bool
}

// batchStats adds up the scheduled batch runs: count, failures, CPU and peak RSS, and the
// hours each run reported computed.
type batchStats struct {
	runs, failures int
	cpu            float64
	lastCPU        float64 // the last run's: the forced one over every hour of the run
	maxRSSMB       float64
	wall           time.Duration
	hours          map[string]bool
	lastErr        string
}

func (b *batchStats) run(ctx context.Context, bin string, args []string) {
	cmd := exec.CommandContext(ctx, bin, append(args, "--json")...)
	started := time.Now()
	out, err := cmd.Output()
	b.wall += time.Since(started)
	b.runs++
	if cmd.ProcessState != nil {
		b.lastCPU = cpuOf(cmd.ProcessState)
		b.cpu += b.lastCPU
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			b.maxRSSMB = max(b.maxRSSMB, float64(ru.Maxrss)/1024)
		}
	}
	if err != nil {
		b.failures++
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr // Output keeps it when Stderr is unset: what the batch said
		}
		b.lastErr = fmt.Sprintf("%v: %.300s %.1500s", err, out, stderr)
		return
	}
	if b.hours == nil {
		b.hours = map[string]bool{}
	}
	// The hours the run published or kept (docs/batch.md): closed, so exact; "open" ones are not.
	var rep struct {
		Windows []struct {
			Window string    `json:"window"`
			Group  string    `json:"group"`
			Start  time.Time `json:"start"`
			State  string    `json:"state"`
		} `json:"windows"`
	}
	if json.Unmarshal(out, &rep) == nil {
		for _, w := range rep.Windows {
			if w.Window == "hour" && w.Group == "" && (w.State == "published" || w.State == "kept") {
				b.hours[w.Start.UTC().Format("2006-01-02T15")] = true
			}
		}
	}
}

func (b *batchStats) exactHours() []string {
	var hs []string
	for h := range b.hours {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

func cpuOf(ps *os.ProcessState) float64 {
	if ps == nil {
		return 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds()
}

// splitSample is one sample of every role.
type splitSample struct {
	at                         time.Duration
	phase                      string
	cpu, rssMB                 map[string]float64 // per role: CPU-seconds so far, RSS
	counted, valid             float64            // speed events: counted, and every valid one (late, too_late too)
	speedLag, archiveLag       float64
	speedLagSeen               bool
	archiveLagSeen             bool
	ckptBytes                  float64 // the last checkpoint's bytes, summed over the two workers
	ckpts                      float64
	pauseSum, pauseCount       float64 // checkpoint lock time (counting waits that long)
	pauseBuckets               map[float64]float64
	fresh                      map[string]map[float64]float64 // window -> le -> cumulative count
	batchRunsSoFar, batchFails int
}

type sampler struct {
	roles []*itest.Child
	addrs map[string]string
	clk   float64
}

func newSampler(roles []*itest.Child, addrs map[string]string) *sampler {
	return &sampler{roles: roles, addrs: addrs, clk: 100}
}

func (s *sampler) sample(t *testing.T, at time.Duration, phase string) splitSample {
	x := splitSample{at: at, phase: phase, cpu: map[string]float64{}, rssMB: map[string]float64{},
		pauseBuckets: map[float64]float64{}, fresh: map[string]map[float64]float64{}}
	for _, c := range s.roles {
		x.cpu[c.Name], x.rssMB[c.Name] = procStat(c.Pid(), s.clk)
	}
	for _, n := range []string{"speed-1", "speed-2"} {
		scrape(get2("http://"+s.addrs[n]+"/metrics"), func(name string, labels map[string]string, v float64) {
			switch name {
			case "trending_speed_events_total":
				x.valid += v
				if labels["outcome"] == "counted" {
					x.counted += v
				}
			case "trending_speed_consumer_lag":
				x.speedLag += v
				x.speedLagSeen = true
			case "trending_speed_checkpoint_bytes":
				x.ckptBytes += v
			case "trending_speed_checkpoints_total":
				x.ckpts += v
			case "trending_speed_checkpoint_lock_seconds_sum":
				x.pauseSum += v
			case "trending_speed_checkpoint_lock_seconds_count":
				x.pauseCount += v
			case "trending_speed_checkpoint_lock_seconds_bucket":
				le, _ := strconv.ParseFloat(labels["le"], 64)
				x.pauseBuckets[le] += v
			}
		})
	}
	scrape(get2("http://"+s.addrs["archive"]+"/metrics"), func(name string, labels map[string]string, v float64) {
		if name == "trending_archive_consumer_lag" {
			x.archiveLag += v
			x.archiveLagSeen = true
		}
	})
	scrape(get2("http://"+s.addrs["serve"]+"/metrics"), func(name string, labels map[string]string, v float64) {
		if name == "trending_served_freshness_seconds_bucket" {
			w := labels["window"]
			if x.fresh[w] == nil {
				x.fresh[w] = map[float64]float64{}
			}
			le, _ := strconv.ParseFloat(labels["le"], 64)
			x.fresh[w][le] += v
		}
	})
	var rss []string
	for _, c := range s.roles {
		rss = append(rss, fmt.Sprintf("%s %.0f MB %.1f cpu-s", c.Name, x.rssMB[c.Name], x.cpu[c.Name]))
	}
	t.Logf("t=%s %s counted=%.0f lag speed=%.0f archive=%.0f; %s", at.Round(time.Second), phase, x.counted, x.speedLag, x.archiveLag, strings.Join(rss, ", "))
	return x
}

// procStat is a process's CPU-seconds so far (utime + stime) and its RSS in MB.
func procStat(pid int, clk float64) (cpu, rssMB float64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+2:])
			// Fields after the name: state is f[0]; utime and stime are fields 14 and 15 of the line.
			if len(f) > 12 {
				u, _ := strconv.ParseFloat(f[11], 64)
				st, _ := strconv.ParseFloat(f[12], 64)
				cpu = (u + st) / clk
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				f := strings.Fields(line)
				kb, _ := strconv.ParseFloat(f[1], 64)
				rssMB = kb / 1024
			}
		}
	}
	return cpu, rssMB
}

func get2(url string) string {
	code, b := get(url)
	if code != 200 {
		return ""
	}
	return string(b)
}

// scrape calls fn with every sample line of a Prometheus text exposition.
func scrape(text string, fn func(name string, labels map[string]string, v float64)) {
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		head := line[:sp]
		name, labels := head, map[string]string{}
		if i := strings.IndexByte(head, '{'); i >= 0 {
			name = head[:i]
			for _, kv := range strings.Split(strings.TrimSuffix(head[i+1:], "}"), ",") {
				if j := strings.IndexByte(kv, '='); j >= 0 {
					labels[kv[:j]] = strings.Trim(kv[j+1:], `"`)
				}
			}
		}
		fn(name, labels, v)
	}
}

// quantile of a cumulative histogram's difference between two samples (le -> count): the
// upper bound of the bucket holding it (+Inf shown as "> the last bound").
func quantile(now, before map[float64]float64, q float64) (float64, float64) {
	var les []float64
	for le := range now {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 {
		return math.NaN(), 0
	}
	total := now[les[len(les)-1]] - before[les[len(les)-1]]
	if total <= 0 {
		return math.NaN(), 0
	}
	for _, le := range les {
		if now[le]-before[le] >= q*total {
			return le, total
		}
	}
	return math.Inf(1), total
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// loadgenMalformed is the malformed count of loadgen's "loadgen done" log line.
func loadgenMalformed(logs string) int {
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Msg       string `json:"msg"`
			Malformed int    `json:"malformed"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "loadgen done" {
			return l.Malformed
		}
	}
	return -1
}

// readTruths reads loadgen's truth files and merges them (a late event of the peak may be
// dated in a minute of the first phase) into one Truth.
func readTruths(t *testing.T, files ...string) *stream.Truth {
	t.Helper()
	type line struct {
		Minute string            `json:"minute"`
		Counts map[string]uint64 `json:"counts"`
	}
	mins := map[string]map[string]uint64{}
	for _, f := range files {
		if f == "" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bufio.NewReader(fh))
		for {
			var l line
			if err := dec.Decode(&l); err != nil {
				break
			}
			if mins[l.Minute] == nil {
				mins[l.Minute] = map[string]uint64{}
			}
			for it, n := range l.Counts {
				mins[l.Minute][it] += n
			}
		}
		fh.Close()
	}
	var keys []string
	for m := range mins {
		keys = append(keys, m)
	}
	sort.Strings(keys) // RFC 3339 UTC minutes sort as time
	var b strings.Builder
	for _, m := range keys {
		j, _ := json.Marshal(line{Minute: m, Counts: mins[m]})
		b.Write(j)
		b.WriteByte('\n')
	}
	tr, err := stream.ReadTruth(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// dlqSources reads the DLQ topic whole: its message count, the count per source offset (the
// "source" header) and how many decode as a valid event.
func dlqSources(t *testing.T, ctx context.Context, kc *eventlog.Client, topic string) (total int, sources map[string]int, valid int) {
	t.Helper()
	offs, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	sources = map[string]int{}
	for _, o := range offs {
		if o.First >= o.Last {
			continue
		}
		r := kc.Reader(kafka.ReaderConfig{Topic: topic, Partition: o.Partition, MaxWait: 200 * time.Millisecond, MaxBytes: 8 << 20})
		if err := r.SetOffset(o.First); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		for {
			m, err := r.FetchMessage(rctx)
			if err != nil {
				t.Errorf("read %s/%d: %v", topic, o.Partition, err)
				break
			}
			total++
			if _, err := event.Decode(m.Value); err == nil {
				valid++
			}
			for _, h := range m.Headers {
				if h.Key == "source" {
					sources[string(h.Value)]++
				}
			}
			if m.Offset >= o.Last-1 {
				break
			}
		}
		cancel()
		r.Close()
	}
	return total, sources, valid
}

// waitUntil polls check every 2 s until it holds or within passes, and says which, how long
// it took and the last detail.
func waitUntil(within time.Duration, check func() (bool, string)) string {
	start := time.Now()
	var last string
	for time.Since(start) < within {
		ok, detail := check()
		if ok {
			return fmt.Sprintf("after %s", time.Since(start).Round(time.Second))
		}
		last = detail
		time.Sleep(2 * time.Second)
	}
	return fmt.Sprintf("NOT within %s (%s)", within, last)
}

func uptime() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(out))
}
