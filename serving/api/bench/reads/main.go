// Command reads is an open-loop HTTP/1.1 load generator for `make bench-reads`: it sends GET
// requests at a fixed rate whatever the server's answers, over a fixed number of keep-alive
// connections, and measures each request's latency from the moment it was due, not from when a
// connection was free to send it. A server that falls behind therefore shows its queueing in
// the latencies (wrk's closed loop waits for the server and hides it: "coordinated omission").
//
//	reads -addr 127.0.0.1:8080 -conns 1024 -rate 20000 -duration 15s -mix plain=5,gzip=3,inm=2 -pid 1234
//
// It prints one line of key=value fields: the connections, target and achieved rate, p50,
// p99, p99.9 and max latency, errors, statuses, and, with -pid, that process's CPU time per
// completed request (user + system from /proc/PID/stat, its threads included).
//
// Why not vegeta (github.com/tsenart/vegeta/v12): its client is net/http's, which costs about
// as much CPU per request as the server under test, and here the client shares a core with the
// pipeline; this client writes a prepared request and parses only the status line and
// Content-Length (a few microseconds). Latencies are kept exactly (one uint32 of microseconds
// each) and sorted at the end.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "server host:port")
	path := flag.String("path", "/v1/trending?window=hour&limit=100", "request path and query")
	conns := flag.Int("conns", 64, "keep-alive connections")
	rate := flag.Float64("rate", 20000, "requests per second, sent on schedule whatever the answers")
	dur := flag.Duration("duration", 15*time.Second, "how long to send")
	warm := flag.Duration("warmup", 2*time.Second, "send at the rate this long first, unmeasured")
	mix := flag.String("mix", "plain=1", "request kinds and weights: plain (no gzip), gzip (Accept-Encoding: gzip), inm (gzip and If-None-Match with the connection's last ETag: a 304 when the list did not change)")
	pid := flag.Int("pid", 0, "server process whose CPU per request to report (0: none)")
	cpuprofile := flag.String("cpuprofile", "", "write the client's CPU profile here")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(*addr, *path, *conns, *rate, *dur, *warm, *mix, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "reads:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type kind int

const (
	plain kind = iota
	gzip
	inm
)

// parseMix turns "plain=5,gzip=3,inm=2" into a repeating schedule of kinds.
func parseMix(s string) ([]kind, error) {
	var out []kind
	for part := range strings.SplitSeq(s, ",") {
		name, w, ok := strings.Cut(part, "=")
		n, err := strconv.Atoi(w)
		if !ok || err != nil || n < 0 || n > 100 {
			return nil, fmt.Errorf("-mix %q: want kind=weight pairs, weights 0..100", s)
		}
		var k kind
		switch name {
		case "plain":
			k = plain
		case "gzip":
			k = gzip
		case "inm":
			k = inm
		default:
			return nil, fmt.Errorf("-mix %q: unknown kind %q (plain, gzip, inm)", s, name)
		}
		for range n {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-mix %q: no requests", s)
	}
	return out, nil
}

// job is one request: when it was due, and its kind.
type job struct {
	due  time.Time
	kind kind
	rec  bool // measured (false during the warm-up)
}

type result struct {
	lat      []uint32 // microseconds from due to the response's last byte
	errs     int
	statuses map[int]int
}

// answered counts responses as they arrive, for the server's CPU per request over the
// measured span.
var answered atomic.Int64

func run(addr, path string, conns int, rate float64, dur, warm time.Duration, mixSpec string, pid int) error {
	mix, err := parseMix(mixSpec)
	if err != nil {
		return err
	}
	if conns < 1 || rate <= 0 || dur <= 0 {
		return errors.New("-conns, -rate and -duration must be positive")
	}
	// Every connection is open before the clock starts: a thousand connects are not reads.
	cs := make([]net.Conn, conns)
	for i := range cs {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			for _, c := range cs[:i] {
				c.Close()
			}
			return fmt.Errorf("connect %d of %d: %w", i+1, conns, err)
		}
		cs[i] = c
	}
	// The queue holds what is due and not yet sent: sized for the whole run, so the pacer never
	// waits on the connections (that wait is the coordinated omission this tool avoids).
	total := int(rate * (dur + warm).Seconds())
	jobs := make(chan job, total+1)
	results := make([]result, conns)
	var wg sync.WaitGroup
	var done atomic.Bool
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = worker(c, addr, path, jobs, &done)
		}()
	}

	start := time.Now()
	measureFrom := start.Add(warm)
	end := measureFrom.Add(dur)
	var cpu0, self0 float64
	var wait0, selfWait0 time.Duration
	var n0 int64
	cpuRead := false
	sent, recorded := 0, 0
	for sent < total {
		now := time.Now()
		if !cpuRead && !now.Before(measureFrom) {
			cpu0, self0, n0, cpuRead = cpuSeconds(pid), cpuSeconds(os.Getpid()), answered.Load(), true
			wait0, selfWait0 = runQueueWait(pid), runQueueWait(os.Getpid())
		}
		// Everything due by now goes out at its due time; then sleep a tick.
		for sent < total {
			// The due time in floating point: a whole-nanosecond interval (33,333 ns at
			// 30,000/s) drifted, and a request fell out of the measured span.
			due := start.Add(time.Duration(float64(sent) * float64(time.Second) / rate))
			if due.After(now) {
				break
			}
			rec := !due.Before(measureFrom)
			if rec {
				recorded++
			}
			jobs <- job{due: due, kind: mix[sent%len(mix)], rec: rec}
			sent++
		}
		time.Sleep(200 * time.Microsecond)
	}
	close(jobs)
	// Requests still queued or in flight at the end are answered late, or not at all: wait a
	// while, then count what is left as not sent.
	time.Sleep(time.Until(end))
	cpu1, self1, n1 := cpuSeconds(pid), cpuSeconds(os.Getpid()), answered.Load()
	wait1, selfWait1 := runQueueWait(pid), runQueueWait(os.Getpid())
	waitEnd := time.Now()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		done.Store(true)
		for _, c := range cs {
			c.SetDeadline(time.Now())
		}
		<-finished
	}
	drain := time.Since(waitEnd)

	var lat []uint32
	errs := 0
	statuses := map[int]int{}
	for _, r := range results {
		lat = append(lat, r.lat...)
		errs += r.errs
		for s, n := range r.statuses {
			statuses[s] += n
		}
	}
	slices.Sort(lat)
	q := func(p float64) string {
		if len(lat) == 0 {
			return "-"
		}
		i := int(p * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return ms(lat[i])
	}
	measured := recorded
	// Achieved: measured requests answered, over the measured span plus the time it took to
	// answer the ones still queued at its end.
	achieved := float64(len(lat)) / (dur + drain).Seconds()
	var st []string
	for _, s := range slices.Sorted(maps.Keys(statuses)) {
		st = append(st, fmt.Sprintf("%d:%d", s, statuses[s]))
	}
	cpuPer := "-"
	if pid > 0 && len(lat) > 0 {
		cpuPer = fmt.Sprintf("%.1f", (cpu1-cpu0)*1e6/float64(n1-n0))
	}
	selfPer := "-"
	if n1 > n0 {
		selfPer = fmt.Sprintf("%.1f", (self1-self0)*1e6/float64(n1-n0))
	}
	maxLat := "-"
	if len(lat) > 0 {
		maxLat = ms(lat[len(lat)-1])
	}
	fmt.Printf("conns=%d target=%.0f achieved=%.0f sent=%d answered=%d p50=%s p99=%s p99.9=%s max=%s errors=%d unanswered=%d statuses=%s cpu_us_per_req=%s client_cpu_us_per_req=%s server_wait_ms_per_s=%.0f client_wait_ms_per_s=%.0f\n",
		conns, rate, achieved, measured, len(lat), q(0.50), q(0.99), q(0.999), maxLat, errs, measured-len(lat), strings.Join(st, ","), cpuPer, selfPer,
		float64((wait1-wait0)/time.Millisecond)/dur.Seconds(), float64((selfWait1-selfWait0)/time.Millisecond)/dur.Seconds())
	return nil
}

func ms(us uint32) string { return strconv.FormatFloat(float64(us)/1000, 'f', 2, 64) }

// worker sends the jobs it takes on its connection, one at a time, and records each latency
// from the job's due time. A failed connection is redialled and the job counted as an error.
func worker(c net.Conn, addr, path string, jobs <-chan job, done *atomic.Bool) result {
	res := result{statuses: map[int]int{}}
	br := bufio.NewReaderSize(c, 64<<10)
	reqs := [3][]byte{
		[]byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: reads\r\n\r\n"),
		[]byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: reads\r\nAccept-Encoding: gzip\r\n\r\n"),
	}
	etag := ""
	var buf []byte
	for j := range jobs {
		req := reqs[j.kind]
		if j.kind == inm {
			buf = append(buf[:0], reqs[gzip][:len(reqs[gzip])-2]...)
			if etag != "" {
				buf = append(append(append(buf, "If-None-Match: "...), etag...), "\r\n"...)
			}
			req = append(buf, "\r\n"...)
		}
		status, tag, err := roundTrip(c, br, req)
		if err != nil {
			res.errs++
			c.Close()
			if done.Load() {
				return res
			}
			if c, err = net.DialTimeout("tcp", addr, 5*time.Second); err != nil {
				return res
			}
			br.Reset(c)
			continue
		}
		answered.Add(1)
		if j.kind != plain && tag != "" {
			etag = tag // the gzip variant's ETag, which an inm request sends back
		}
		if j.rec {
			res.statuses[status]++
			res.lat = append(res.lat, uint32(time.Since(j.due)/time.Microsecond))
		}
	}
	c.Close()
	return res
}

// roundTrip writes req and reads one response: the status, the ETag, and a body of
// Content-Length bytes, discarded.
func roundTrip(c net.Conn, br *bufio.Reader, req []byte) (status int, etag string, err error) {
	if _, err := c.Write(req); err != nil {
		return 0, "", err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, "", err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, "", fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, "", fmt.Errorf("bad status line %q", line)
	}
	length := 0
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, "", err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, "", fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Etag")):
			etag = string(v)
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return 0, "", errors.New("chunked responses are not supported")
		}
	}
	if _, err := br.Discard(length); err != nil {
		return 0, "", err
	}
	return status, etag, nil
}

// runQueueWait is the time pid's threads spent runnable but waiting for a CPU
// (/proc/PID/task/TID/schedstat's second field), summed: how much the machine's other work
// held the process back.
func runQueueWait(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			ns, _ := strconv.ParseInt(f[1], 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// cpuSeconds is pid's user + system CPU time (0 when pid is 0 or gone).
func cpuSeconds(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ is 100 on Linux
}
