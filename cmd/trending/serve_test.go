package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/serving/api/demo"
	boltstore "trending/serving/store/bolt"
)

func TestOpenStore(t *testing.T) {
	dir := t.TempDir()
	st, err := openStore("bolt:" + filepath.Join(dir, "nested", "serving.db"))
	if err != nil {
		t.Fatalf("bolt in a new directory: %v", err)
	}
	st.Close()
	for _, spec := range []string{"bolt:", "redis://localhost", "./serving.db", ""} {
		_, err := openStore(spec)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--store") {
			t.Errorf("openStore(%q): %v, want a usage error naming --store", spec, err)
		}
	}
}

func TestServeUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-limit", "2000"}, "--max-limit 2000"},
		{[]string{"--refresh", "10s"}, "--refresh 10s"},
		{[]string{"--default-limit", "500"}, "--default-limit 500"},
		{[]string{"--cors-origins", "dash.example.com"}, "--cors-origins"},
		{[]string{"--max-streams", "0"}, "--max-streams 0"},
		{[]string{"--stream-write-timeout", "0s"}, "--stream-write-timeout 0s"},
		{[]string{"--version-poll", "0s"}, "--version-poll 0s"},
		{[]string{"--store", "nope:x"}, "unknown store"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runTrending(t, append([]string{"serve", "--listen", "127.0.0.1:0"}, c.args...)...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a usage error containing %q", err, c.want)
			}
		})
	}
}

// TestServeCommand runs `trending serve` on a seeded store, reads a list and the metrics over
// TCP, and checks that cancelling the context stops it cleanly.
func TestServeCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "serving.db")
	st, err := boltstore.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Seed(context.Background(), st, time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	// A drain longer than the wait below: an open stream that held the drain would fail it.
	root.SetArgs([]string{"serve", "--store", "bolt:" + db, "--listen", addr, "--log-format", "json", "--shutdown-timeout", "60s"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var body string
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/v1/trending?window=hour&limit=3")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				body = string(b)
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(body, `"item_id":"vid-0000"`) {
		t.Fatalf("list over TCP: %q", body)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"trending_http_request_duration_seconds_bucket", "trending_serving_list_age_seconds", "go_goroutines", "process_"} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A dashboard's stream is open when the signal comes: it ends, and does not hold the drain.
	stream, err := http.Get("http://" + addr + "/v1/trending/stream?window=hour&limit=3")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	events := bufio.NewReader(stream.Body)
	if line, err := events.ReadString('\n'); err != nil || !strings.HasPrefix(line, "id: ") {
		t.Fatalf("stream: %d, first line %q %v", stream.StatusCode, line, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if rest, err := io.ReadAll(events); err != nil || strings.Count(string(rest), "\n\n") != 1 {
		t.Fatalf("after the shutdown the stream should hold the rest of its first event and end: %q %v", rest, err)
	}
}
