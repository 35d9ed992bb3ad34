package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/model/event"
)

// TestMain lets the shutdown tests run this test binary as the trending binary: with
// TRENDING_TEST_AS_MAIN set it is `trending` (main, its signal handling and exit codes).
func TestMain(m *testing.M) {
	if os.Getenv("TRENDING_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"trending"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	// The tests here run one at a time (none is parallel), each pipeline under 2 GiB: more is
	// a leak, to be named rather than left to the kernel's OOM killer.
	itest.WatchMemory(8)
	code := m.Run()
	itest.ReportMemory()
	os.Exit(code)
}

// TestAcceptedBeforeSIGTERMReachKafkaUp: `trending up` (embedded broker, no load generator)
// under a tight loop of POST /v1/events, then SIGTERM: every event answered 202 is in the
// views topic afterwards (read back from the broker's data directory once the process has
// exited), and the process exits 0.
func TestAcceptedBeforeSIGTERMReachKafkaUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts trending up as a child process")
	}
	data := t.TempDir()
	addr := freeAddr(t)
	child := startTrending(t, "up", "--no-load", "--data", data, "--listen", addr, "--backfill", "0",
		"--sketch-width", "1024")
	accepted := postUntilStopped(t, child, addr)

	// The broker of `up` is gone with the process; its log is in DATA/kafka.
	br, err := eventlog.StartEmbedded(filepath.Join(data, "kafka"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	checkInTopic(t, br.Addr, eventlog.TopicViews, accepted)
}

// TestAcceptedBeforeSIGTERMReachKafkaServe: the same for `trending serve --kafka`.
func TestAcceptedBeforeSIGTERMReachKafkaServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts trending serve as a child process")
	}
	br, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	const topic = "sigterm-views"
	if _, err := eventlog.EnsureTopics(t.Context(), []string{br.Addr}, eventlog.Spec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	child := startTrending(t, "serve", "--kafka", br.Addr, "--views-topic", topic, "--listen", addr,
		"--store", "bolt:"+filepath.Join(t.TempDir(), "serving.db"))
	accepted := postUntilStopped(t, child, addr)
	checkInTopic(t, br.Addr, topic, accepted)
}

type trendingChild struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed once the process has exited; then err is its exit status
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startTrending(t *testing.T, args ...string) *trendingChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], append(args, "--log-format", "json")...)
	cmd.Env = append(os.Environ(), "TRENDING_TEST_AS_MAIN=1")
	c := &trendingChild{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stderr, c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			t.Logf("trending %s output:\n%s", args[0], tail(c.stderr.String(), 4000))
		}
	})
	return c
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// postUntilStopped waits until POST /v1/events answers 202, posts one distinct item per event
// from four loops for a second, sends SIGTERM and keeps posting until the server stops
// answering; it returns the items answered 202 (each with count 1). The process must exit 0.
func postUntilStopped(t *testing.T, c *trendingChild, addr string) map[string]bool {
	t.Helper()
	url := "http://" + addr + "/v1/events"
	client := &http.Client{Timeout: 5 * time.Second}
	post := func(item string) (int, error) {
		body := fmt.Sprintf(`{"item_id":%q,"count":1,"ts":%q}`, item, time.Now().UTC().Format(time.RFC3339))
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, err := post("warmup")
		if err == nil && code == http.StatusAccepted {
			break
		}
		select {
		case <-c.exited:
			t.Fatalf("trending exited before serving: %v", c.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("POST /v1/events never answered 202 (last %d, %v)", code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var (
		mu       sync.Mutex
		accepted = map[string]bool{"warmup": true}
		after    int // answered 202 after SIGTERM was sent
		refused  int // 503
		signaled = make(chan struct{})
		wg       sync.WaitGroup
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				item := fmt.Sprintf("g%d-%d", g, i)
				code, err := post(item)
				mu.Lock()
				isSignaled := false
				select {
				case <-signaled:
					isSignaled = true
				default:
				}
				switch {
				case err != nil:
					mu.Unlock()
					if isSignaled {
						return // the server has closed its listener
					}
					t.Errorf("POST before SIGTERM: %v", err)
					return
				case code == http.StatusAccepted:
					accepted[item] = true
					if isSignaled {
						after++
					}
				case code == http.StatusServiceUnavailable:
					refused++
				default:
					t.Errorf("POST %s: status %d", item, code)
				}
				mu.Unlock()
				if code == http.StatusServiceUnavailable {
					return
				}
			}
		}()
	}
	time.Sleep(time.Second)
	// Marked before it is sent: the server may close its listener before the signal call
	// returns, and a POST refused then is not one "before SIGTERM".
	close(signaled)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	select {
	case <-c.exited:
		if c.err != nil {
			t.Fatalf("trending after SIGTERM: %v (want exit 0)", c.err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("trending did not exit within 90s of SIGTERM")
	}
	t.Logf("%d events answered 202 (%d after SIGTERM), %d refused with 503", len(accepted), after, refused)
	if len(accepted) < 10 {
		t.Fatalf("only %d events accepted: the loop did not run", len(accepted))
	}
	return accepted
}

// checkInTopic reads every partition of topic from its start to its end and checks that each
// accepted item is there (once or more: the ingest writes at least once).
func checkInTopic(t *testing.T, broker, topic string, accepted map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	offs, err := eventlog.TopicOffsets(ctx, []string{broker}, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range offs {
		if o.First == o.Last {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{broker}, Topic: topic, Partition: o.Partition, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(o.First); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s/%d: %v", topic, o.Partition, err)
			}
			ev, err := event.Decode(m.Value)
			if err != nil {
				t.Fatalf("%s/%d@%d: %v", topic, o.Partition, m.Offset, err)
			}
			seen[ev.ItemID] = true
			if m.Offset+1 >= o.Last {
				break
			}
		}
		r.Close()
	}
	var missing []string
	for item := range accepted {
		if !seen[item] {
			missing = append(missing, item)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d events answered 202 are not in %s, such as %v", len(missing), len(accepted), topic, missing[:min(5, len(missing))])
	}
}
