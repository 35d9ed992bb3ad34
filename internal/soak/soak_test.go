//go:build soak

// Package soak runs the real stack at a sustained rate for a while and reports throughput,
// freshness, memory over time, and whether the exact batch results equal the truth.
// Run it with `make soak` (SOAK_DURATION, SOAK_RATE); it is not part of `make test`.
package soak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/stream"
	"trending/model"
	"trending/model/topk"
	boltstore "trending/serving/store/bolt"
)

const k = 100

func envDuration(name string, def time.Duration) time.Duration {
	if v := os.Getenv(name); v != "" {
		d, err := time.ParseDuration(v)
		if err == nil {
			return d
		}
	}
	return def
}

type sample struct {
	at        time.Duration
	rssMB     float64
	events    float64
	freshness time.Duration
}

func TestSoak(t *testing.T) {
	kafkaAddr := itest.Kafka(t)
	s3 := itest.S3(t)
	dur := envDuration("SOAK_DURATION", 30*time.Minute)
	rate := 20000.0
	if v := os.Getenv("SOAK_RATE"); v != "" {
		rate, _ = strconv.ParseFloat(v, 64)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "trending")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/trending").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	topic := itest.Name(t, "soak")
	bucket := topic
	data := filepath.Join(dir, "data")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr

	upLog, _ := os.Create(filepath.Join(dir, "up.log"))
	up := exec.Command(bin, "up", "--kafka", kafkaAddr, "--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey,
		"--s3-bucket", bucket, "--views-topic", topic, "--no-load", "--data", data, "--listen", addr, "--partitions", "4",
		"--sketch-width", "65536", "--publish-every", "5s", "--checkpoint-every", "30s", "--archive-roll", "30s", "--log-format", "json")
	up.Stdout, up.Stderr = upLog, upLog
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer up.Process.Kill()
	waitReady(t, base)

	truthFile := filepath.Join(dir, "truth.jsonl")
	lgLog, _ := os.Create(filepath.Join(dir, "loadgen.log"))
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	lg := exec.Command(bin, "loadgen", "--kafka", kafkaAddr, "--views-topic", topic, "--rate", fmt.Sprint(rate), "--duration", dur.String(),
		"--items", "100000", "--servers", "200", "--late", "0.01", "--malformed", "0.0005", "--seed", "7",
		"--start", start.Format(time.RFC3339), "--truth", truthFile, "--progress-every", "30s")
	lg.Stdout, lg.Stderr = lgLog, lgLog
	if err := lg.Start(); err != nil {
		t.Fatal(err)
	}
	lgDone := make(chan error, 1)
	go func() { lgDone <- lg.Wait() }()

	var samples []sample
	t0 := time.Now()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case err := <-lgDone:
			if err != nil {
				t.Fatalf("loadgen: %v", err)
			}
			break loop
		case <-tick.C:
			samples = append(samples, measure(t, base, up.Process.Pid, time.Since(t0)))
		}
	}
	// Let the pipeline drain: the speed lists and the archive catch up.
	time.Sleep(45 * time.Second)
	samples = append(samples, measure(t, base, up.Process.Pid, time.Since(t0)))

	f, err := os.Open(truthFile)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := stream.ReadTruth(bufio.NewReader(f))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The live hour list against the truth of the hour up to its as-of minute.
	var live model.List
	code, body := get(base + "/v1/trending?window=hour&limit=100")
	if code != 200 || json.Unmarshal(body, &live) != nil {
		t.Fatalf("live hour list: %d %s", code, body)
	}
	liveOK := equal(live.Items, truth.Range(live.AsOf.Add(-time.Hour), live.AsOf).Top(k))

	up.Process.Signal(syscall.SIGINT)
	if err := up.Wait(); err != nil {
		t.Errorf("up did not stop cleanly: %v", err)
	}
	// Exact batch over every hour the run touched, forced (the last hour is still open).
	first, last := start.Truncate(time.Hour), start.Add(dur).Truncate(time.Hour).Add(time.Hour)
	bt := exec.Command(bin, "batch", "run", "--window", "hour", "--start", first.Format("2006-01-02T15"), "--end", last.Format("2006-01-02T15"), "--force",
		"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", bucket,
		"--store", "bolt:"+filepath.Join(data, "serving.db"), "--rollups", filepath.Join(data, "rollups.db"))
	if out, err := bt.CombinedOutput(); err != nil {
		t.Fatalf("batch run: %v\n%s", err, out)
	}
	st, err := boltstore.Open(filepath.Join(data, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var hours, exactHours int
	for h := first; h.Before(last); h = h.Add(time.Hour) {
		l, err := st.Get(context.Background(), model.Key{Window: "hour", Start: h})
		if err != nil {
			t.Errorf("hour %s: %v", h.Format(time.RFC3339), err)
			continue
		}
		hours++
		if l.Source == model.SourceBatch && equal(l.Items, truth.Range(h, h.Add(time.Hour)).Top(k)) {
			exactHours++
		} else {
			t.Errorf("hour %s: batch list differs from the truth", h.Format(time.RFC3339))
		}
	}
	report(t, dir, dur, rate, samples, liveOK, hours, exactHours)
	if !liveOK {
		t.Errorf("the live hour list (as of %s) differs from the truth", live.AsOf.Format(time.RFC3339))
	}
}

func equal(items []model.Item, want []topk.Entry) bool {
	if len(items) != len(want) {
		return false
	}
	for i := range items {
		if items[i].ItemID != want[i].Item || items[i].Views != want[i].Count {
			return false
		}
	}
	return true
}

func measure(t *testing.T, base string, pid int, at time.Duration) sample {
	s := sample{at: at}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmRSS:") {
				f := strings.Fields(line)
				kb, _ := strconv.ParseFloat(f[1], 64)
				s.rssMB = kb / 1024
			}
		}
	}
	if code, body := get(base + "/metrics"); code == 200 {
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "trending_speed_events_total{") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				s.events += v
			}
		}
	}
	var l struct {
		AsOf time.Time `json:"as_of"`
	}
	if code, body := get(base + "/v1/trending?window=hour&limit=1"); code == 200 && json.Unmarshal(body, &l) == nil {
		s.freshness = time.Since(l.AsOf).Round(time.Second)
	}
	t.Logf("t=%s rss=%.0f MB events=%.0f freshness=%s", at.Round(time.Second), s.rssMB, s.events, s.freshness)
	return s
}

func report(t *testing.T, dir string, dur time.Duration, rate float64, ss []sample, liveOK bool, hours, exact int) {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s at %g views/s (loadgen, 100k items, Zipf 1.1, 200 servers, 1%% late, 0.05%% malformed), real Kafka and MinIO\n\n", dur, rate)
	fmt.Fprintf(&b, "| t | RSS MB | events counted | events/s since last | hour list age |\n| --- | --- | --- | --- | --- |\n")
	for i, s := range ss {
		var r float64
		if i > 0 {
			r = (s.events - ss[i-1].events) / (s.at - ss[i-1].at).Seconds()
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %s |\n", s.at.Round(time.Second), s.rssMB, s.events, r, s.freshness)
	}
	fmt.Fprintf(&b, "\nlive hour list equals the truth: %v; batch hours equal to the truth: %d of %d\n", liveOK, exact, hours)
	os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
	if out := os.Getenv("SOAK_REPORT"); out != "" {
		os.WriteFile(out, []byte(b.String()), 0o644)
	}
	t.Log("\n" + b.String())
}

func waitReady(t *testing.T, base string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := get(base + "/healthz"); code == 200 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal("trending up did not come up within 60s")
}

var client = &http.Client{Timeout: 5 * time.Second}

func get(url string) (int, []byte) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
