// Command peers is `make bench-peers` (issue 33): Apache Flink beside `trending speed` on one
// pre-filled Kafka topic. It fills a fresh topic of the real Kafka with a seeded Zipf stream
// (`trending loadgen`, 8 partitions, two event-time hours), then runs in turn, by default
// trending, Flink, trending (so trending brackets Flink under the machine's load of the
// moment):
//
//   - `trending speed` with the default seven windows, until it has handled every event of
//     the topic (its metrics: counted + late + too late + DLQ = the topic's messages);
//   - the Flink job (infra/bench/peers/flink: Flink SQL's Window Top-N over HOP(1 minute,
//     1 hour), heap state backend, parallelism = cores, local execution), bounded: it ends
//     when it has read the topic as it was when it started.
//
// For each: CPU-seconds (user + system, every thread), wall time, peak RSS, events per
// CPU-second; then the top K of the first event-time hour, closed on both sides, compared:
// trending's calendar hour (each partition's final exact list from TOPIC.partials, merged as
// the merger does) against Flink's hop window ending at the hour's end, and both against the
// exact truth loadgen wrote. The report (markdown) goes to stdout and to -report.
//
// It needs the real Kafka and MinIO (infra/local/services.sh up) and, for Flink, Java and
// Maven (infra/bench/peers/flink.sh fetches Flink into ~/.cache/trending once).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/objstore"
)

type config struct {
	events      int64
	k           int
	start       time.Time
	span        time.Duration
	items       int
	zipf        float64
	seed        int
	partitions  int
	kafka       string
	s3          string
	s3Key       string
	s3Secret    string
	bin         string
	flink       string
	parallelism int
	order       []string
	report      string
	dir         string
	keep        bool
	timeout     time.Duration
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("[bench-peers] ")
	c := config{}
	events := flag.Int64("events", envInt("PEERS_EVENTS", 5_000_000), "events to fill the topic with, about (env PEERS_EVENTS)")
	flag.IntVar(&c.k, "k", 100, "length of the compared top list (trending's --k, Flink's rn <= K)")
	start := flag.String("start", "2026-12-01T10:00:00Z", "event time of the first event: a whole UTC hour, the one compared")
	flag.DurationVar(&c.span, "span", 2*time.Hour, "event time the stream covers (at least 1h1m, so the first hour closes)")
	flag.IntVar(&c.items, "items", 1_000_000, "catalog size (loadgen --items)")
	flag.Float64Var(&c.zipf, "zipf", 1.1, "Zipf exponent (loadgen --zipf)")
	flag.IntVar(&c.seed, "seed", 1, "stream seed (loadgen --seed)")
	flag.IntVar(&c.partitions, "partitions", 8, "partitions of the topic")
	flag.StringVar(&c.kafka, "kafka", env("TRENDING_IT_KAFKA", "127.0.0.1:39092"), "Kafka bootstrap broker (env TRENDING_IT_KAFKA)")
	flag.StringVar(&c.s3, "s3", env("TRENDING_IT_S3", "http://127.0.0.1:39000"), "S3 endpoint for the speed worker's checkpoints (env TRENDING_IT_S3)")
	flag.StringVar(&c.s3Key, "s3-access-key", env("TRENDING_IT_S3_ACCESS_KEY", "trending"), "S3 access key")
	flag.StringVar(&c.s3Secret, "s3-secret-key", env("TRENDING_IT_S3_SECRET_KEY", "trending-secret"), "S3 secret key")
	flag.StringVar(&c.bin, "bin", "bin/trending", "the trending binary")
	flag.StringVar(&c.flink, "flink", "infra/bench/peers/flink.sh", "the Flink job's script")
	flag.IntVar(&c.parallelism, "parallelism", runtime.NumCPU(), "Flink's parallelism (trending speed uses every core: GOMAXPROCS)")
	order := flag.String("order", env("PEERS_ORDER", "trending,flink,trending"), "the runs, in order (env PEERS_ORDER)")
	flag.StringVar(&c.report, "report", "peers-report.md", "write the report here too")
	flag.StringVar(&c.dir, "dir", "", "work directory for logs, truth and Flink's output (default: a new temporary one)")
	flag.BoolVar(&c.keep, "keep", false, "keep the topics and the work directory")
	flag.DurationVar(&c.timeout, "timeout", 2*time.Hour, "give up on a run after this long")
	flag.Parse()
	c.events = *events
	var err error
	if c.start, err = time.Parse(time.RFC3339, *start); err != nil || !c.start.Equal(c.start.Truncate(time.Hour)) {
		log.Fatalf("-start %q: want a whole UTC hour in RFC 3339", *start)
	}
	if c.span < time.Hour+time.Minute {
		log.Fatalf("-span %s: the first hour closes only with events past its end plus the lateness: at least 1h1m", c.span)
	}
	c.order = strings.Split(*order, ",")
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

// result is one run of one side.
type result struct {
	side, what string
	use        usage
	events     int64
	load       string
	top        []entry
	err        error
}

func run(c config) error {
	ctx := context.Background()
	if c.dir == "" {
		d, err := os.MkdirTemp("", "bench-peers-")
		if err != nil {
			return err
		}
		c.dir = d
	}
	// The work directory stays when a run failed: its logs say why.
	failed := false
	defer func() {
		if c.keep || failed {
			log.Printf("logs and outputs kept in %s", c.dir)
			return
		}
		os.RemoveAll(c.dir)
	}()
	kc := eventlog.Plain(c.kafka)
	topic := fmt.Sprintf("peers-%d", time.Now().Unix())
	names := eventlog.NamesFor(topic)
	if !c.keep {
		defer deleteTopics(c.kafka, names.Views, names.Partials, names.DLQ)
	}
	for _, side := range c.order {
		if side == "flink" {
			log.Printf("building the Flink job (%s build)", c.flink)
			if err := runCmd(exec.Command(c.flink, "build")); err != nil {
				return fmt.Errorf("flink build: %w", err)
			}
		}
	}

	// Fill the topic: a seeded Zipf stream over c.span of event time in the past, as fast as
	// the broker takes it; views/s so that events come to about c.events (pre-summing per
	// server and second merges few at this rate: events = views less a fraction of a percent).
	truth := filepath.Join(c.dir, "truth.jsonl")
	rate := float64(c.events) / c.span.Seconds()
	log.Printf("filling topic %s: %d events over %s of event time from %s", topic, c.events, c.span, c.start.Format(time.RFC3339))
	lg := exec.Command(c.bin, "loadgen", "--kafka", c.kafka, "--views-topic", topic, "--partitions", strconv.Itoa(c.partitions),
		"--start", c.start.Format(time.RFC3339), "--duration", c.span.String(), "--speedup", "0",
		"--rate", strconv.FormatFloat(rate, 'f', 3, 64), "--items", strconv.Itoa(c.items), "--zipf", strconv.FormatFloat(c.zipf, 'g', -1, 64),
		"--seed", strconv.Itoa(c.seed), "--truth", truth, "--progress-every", "30s", "--log-level", "warn")
	if err := runCmd(lg); err != nil {
		return fmt.Errorf("loadgen: %w", err)
	}
	offs, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var n int64
	for _, o := range offs {
		n += o.Last - o.First
	}
	log.Printf("topic %s holds %d events in %d partitions", topic, n, len(offs))

	hour := c.start
	tf, err := os.Open(truth)
	if err != nil {
		return err
	}
	tc, err := truthHour(tf, hour)
	tf.Close()
	if err != nil {
		return err
	}
	truthTop := topK(tc, c.k)

	var results []result
	for i, side := range c.order {
		r := result{side: side, load: loadavg(), events: n}
		log.Printf("run %d: %s (load average %s)", i+1, side, r.load)
		switch side {
		case "trending":
			r.what = "trending speed, default windows"
			r.use, r.top, r.err = runTrending(ctx, c, kc, names, n, hour, i)
		case "flink":
			r.what = fmt.Sprintf("Flink %s Window Top-N, HOP 1h/1m, parallelism %d", flinkVersion(c.flink), c.parallelism)
			r.use, r.top, r.err = runFlink(c, topic, hour, i)
		default:
			return fmt.Errorf("-order: unknown side %q (trending or flink)", side)
		}
		if r.err != nil {
			failed = true
			log.Printf("run %d: %s failed: %v", i+1, side, r.err)
		} else {
			log.Printf("run %d: %s: %.1f CPU-s, %.1f s wall, peak RSS %s", i+1, side, r.use.CPU.Seconds(), r.use.Wall.Seconds(), mib(r.use.PeakRSS))
		}
		results = append(results, r)
	}

	rep := report(c, topic, n, hour, truthTop, results)
	fmt.Print(rep)
	if c.report != "" {
		if err := os.WriteFile(c.report, []byte(rep), 0o644); err != nil {
			return err
		}
		log.Printf("report written to %s", c.report)
	}
	for _, r := range results {
		if r.err != nil {
			return fmt.Errorf("%s: %w", r.side, r.err)
		}
		if d := diff(r.side, r.top, "truth", truthTop); d != "" {
			failed = true
			return fmt.Errorf("the hour's top %d differs: %s", c.k, d)
		}
	}
	return nil
}

// runTrending runs `trending speed` with the default windows on the topic until it has
// handled all n events, measures it, reads the closed hour's final lists, and stops it.
// Each run has a bucket of its own, so it finds no checkpoint of an earlier run.
func runTrending(ctx context.Context, c config, kc *eventlog.Client, names eventlog.Names, n int64, hour time.Time, run int) (usage, []entry, error) {
	var u usage
	from := int64(0)
	if offs, err := kc.TopicOffsets(ctx, names.Partials); err == nil && len(offs) > 0 {
		from = offs[0].Last
		if len(offs) != 1 {
			return u, nil, fmt.Errorf("%s has %d partitions; this reads one", names.Partials, len(offs))
		}
	}
	port, err := freePort()
	if err != nil {
		return u, nil, err
	}
	bucket := fmt.Sprintf("%s-run%d", names.Views, run+1)
	logf, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("speed-run%d.log", run+1)))
	if err != nil {
		return u, nil, err
	}
	defer logf.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(c.bin, "speed", "--kafka", c.kafka, "--views-topic", names.Views,
		"--consumer-group", fmt.Sprintf("%s-run%d", names.SpeedGroup, run+1), "--partitions", strconv.Itoa(c.partitions),
		"--s3-endpoint", c.s3, "--s3-bucket", bucket, "--s3-access-key", c.s3Key, "--s3-secret-key", c.s3Secret,
		"--k", strconv.Itoa(c.k), "--metrics-addr", addr, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return u, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		cleanBucket(ctx, c, bucket)
	}

	deadline := time.Now().Add(c.timeout)
	for {
		select {
		case err := <-done:
			return u, nil, fmt.Errorf("trending speed exited early (%v); log %s", err, logf.Name())
		case <-time.After(100 * time.Millisecond):
		}
		handled, err := handledEvents(addr)
		if err == nil && handled >= n {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return u, nil, fmt.Errorf("trending speed handled %d of %d events in %s", handled, n, c.timeout)
		}
	}
	u.Wall = time.Since(t0)
	u.CPU, u.PeakRSS, err = procUsage(cmd.Process.Pid)
	if err != nil {
		stop()
		return u, nil, err
	}
	// The hour closed long before the end of the topic (its end plus the lateness, an hour of
	// event time earlier), so its final lists are out; wait for them a little all the same.
	finals := newHourFinals(hour)
	var top []entry
	for wait := time.Now().Add(time.Minute); ; {
		if err = readPartials(ctx, kc, names.Partials, from, finals); err == nil {
			if top, err = finals.merge(c.partitions, c.k); err == nil || time.Now().After(wait) {
				break
			}
		}
		if time.Now().After(wait) {
			break
		}
		time.Sleep(time.Second)
	}
	stop()
	return u, top, err
}

// handledEvents is what the worker did with events so far: counted, late or too late
// (trending_speed_events_total) or sent to the DLQ (trending_speed_dlq_total).
func handledEvents(addr string) (int64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "trending_speed_events_total{") && !strings.HasPrefix(line, "trending_speed_dlq_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics line %q", line)
		}
		sum += v
	}
	return int64(sum), sc.Err()
}

// readPartials reads the partials topic (one partition) from offset from to its end.
func readPartials(ctx context.Context, kc *eventlog.Client, topic string, from int64, h *hourFinals) error {
	offs, err := kc.TopicOffsets(ctx, topic)
	if err != nil {
		return err
	}
	end := offs[0].Last
	if from >= end {
		return errors.New("no partials yet")
	}
	r := kc.Reader(kafka.ReaderConfig{Topic: topic, Partition: 0, MinBytes: 1, MaxBytes: 16 << 20})
	defer r.Close()
	if err := r.SetOffset(from); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		m, err := r.ReadMessage(rctx)
		if err != nil {
			return fmt.Errorf("read %s: %w", topic, err)
		}
		if err := h.add(m.Value); err != nil {
			return err
		}
		if m.Offset+1 >= end {
			return nil
		}
	}
}

// runFlink runs the Flink job on the topic (bounded: to the offsets at its start) and reads
// its list of the hop window ending at the hour's end.
func runFlink(c config, topic string, hour time.Time, run int) (usage, []entry, error) {
	var u usage
	out := filepath.Join(c.dir, fmt.Sprintf("flink-run%d.csv", run+1))
	logf, err := os.Create(filepath.Join(c.dir, fmt.Sprintf("flink-run%d.log", run+1)))
	if err != nil {
		return u, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(c.flink, "run", c.kafka, topic, fmt.Sprintf("%s-flink-run%d", topic, run+1),
		strconv.Itoa(c.parallelism), strconv.Itoa(c.k), "30", out)
	cmd.Stdout, cmd.Stderr = logf, logf
	t0 := time.Now()
	err = cmd.Run()
	u.Wall = time.Since(t0)
	if err != nil {
		return u, nil, fmt.Errorf("flink: %v; log %s:\n%s", err, logf.Name(), tail(logf.Name(), 30))
	}
	u.CPU, u.PeakRSS = exitUsage(cmd.ProcessState)
	f, err := os.Open(out)
	if err != nil {
		return u, nil, err
	}
	defer f.Close()
	top, err := flinkWindow(f, hour.Add(time.Hour))
	return u, top, err
}

func report(c config, topic string, n int64, hour time.Time, truthTop []entry, rs []result) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "## bench-peers, %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "`make bench-peers` (PEERS_EVENTS=%d): topic %s, %d events in %d partitions, %s of event time from %s "+
		"(loadgen --items %d --zipf %g --seed %d); %d cores (%s), K = %d.\n\n",
		c.events, topic, n, c.partitions, c.span, c.start.Format(time.RFC3339), c.items, c.zipf, c.seed, runtime.NumCPU(), host, c.k)
	fmt.Fprintf(&b, "| run | side | load average before | CPU-s | events per CPU-s | wall s | events/s (wall) | peak RSS |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i, r := range rs {
		if r.err != nil {
			first, _, _ := strings.Cut(r.err.Error(), "\n")
			fmt.Fprintf(&b, "| %d | %s | %s | failed: %s | | | | |\n", i+1, r.what, r.load, first)
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %s | %.1f | %s | %s |\n", i+1, r.what, r.load, r.use.CPU.Seconds(),
			human(float64(n)/r.use.CPU.Seconds()), r.use.Wall.Seconds(), human(float64(n)/r.use.Wall.Seconds()), mib(r.use.PeakRSS))
	}
	var tr, fl []float64
	for _, r := range rs {
		if r.err != nil {
			continue
		}
		switch r.side {
		case "trending":
			tr = append(tr, float64(n)/r.use.CPU.Seconds())
		case "flink":
			fl = append(fl, float64(n)/r.use.CPU.Seconds())
		}
	}
	if len(tr) > 0 && len(fl) > 0 {
		lo, hi := tr[0]/fl[0], tr[0]/fl[0]
		for _, t := range tr {
			for _, f := range fl {
				lo, hi = min(lo, t/f), max(hi, t/f)
			}
		}
		fmt.Fprintf(&b, "\nEvents per CPU-second, trending over Flink: %.0fx (%.0f-%.0fx over the pairs of runs).\n", (lo+hi)/2, lo, hi)
	}
	fmt.Fprintf(&b, "\nThe closed hour %s-%s, top %d (trending: the calendar hour's final lists of every partition, merged; "+
		"Flink: the hop window ending at %s; truth: loadgen's exact counts):\n\n", hour.Format(time.RFC3339), hour.Add(time.Hour).Format("15:04Z"),
		c.k, hour.Add(time.Hour).Format(time.RFC3339))
	for i, r := range rs {
		if r.err != nil {
			continue
		}
		d := diff(r.side, r.top, "truth", truthTop)
		if d == "" {
			d = fmt.Sprintf("equal to the truth, items and counts (#1 %s %d, #%d %s %d)", r.top[0].Item, r.top[0].Count, len(r.top), r.top[len(r.top)-1].Item, r.top[len(r.top)-1].Count)
		}
		fmt.Fprintf(&b, "- run %d, %s: %s\n", i+1, r.side, d)
	}
	for i, r := range rs {
		for j := i + 1; j < len(rs); j++ {
			if r.err != nil || rs[j].err != nil || r.side == rs[j].side {
				continue
			}
			d := diff(fmt.Sprintf("%s (run %d)", r.side, i+1), r.top, fmt.Sprintf("%s (run %d)", rs[j].side, j+1), rs[j].top)
			if d == "" {
				d = "equal"
			}
			fmt.Fprintf(&b, "- run %d (%s) against run %d (%s): %s\n", i+1, r.side, j+1, rs[j].side, d)
		}
	}
	return b.String()
}

func runCmd(cmd *exec.Cmd) error {
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cleanBucket deletes a run's checkpoints (the bucket itself stays, empty).
func cleanBucket(ctx context.Context, c config, bucket string) {
	cfg := objstore.DefaultConfig()
	cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey = c.s3, bucket, c.s3Key, c.s3Secret
	s, err := objstore.New(ctx, cfg)
	if err != nil {
		log.Printf("clean bucket %s: %v", bucket, err)
		return
	}
	objs, err := s.List(ctx, "")
	if err != nil {
		log.Printf("clean bucket %s: %v", bucket, err)
		return
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	if err := s.Delete(ctx, keys...); err != nil {
		log.Printf("clean bucket %s: %v", bucket, err)
	}
}

func deleteTopics(broker string, topics ...string) {
	cl := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 30 * time.Second}
	if _, err := cl.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: topics}); err != nil {
		log.Printf("delete topics %v: %v", topics, err)
	}
}

func flinkVersion(script string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(script), "flink", "pom.xml"))
	if err != nil {
		return "?"
	}
	_, v, _ := strings.Cut(string(b), "<flink.version>")
	v, _, _ = strings.Cut(v, "<")
	return v
}

func tail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func human(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", b>>20)
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseFloat(v, 64) // 5e6 too
		if err != nil || n < 1 {
			log.Fatalf("%s=%q: want a number of events", name, v)
		}
		return int64(n)
	}
	return def
}
