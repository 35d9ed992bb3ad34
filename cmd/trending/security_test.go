package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/eventlog"
)

// TestWritesNeedATokenBeyondLoopback: a process whose write routes other machines can reach
// refuses to start without a token unless the operator opts out with --open-writes; on a
// loopback address writes stay open to this machine.
func TestWritesNeedATokenBeyondLoopback(t *testing.T) {
	for _, c := range []struct {
		listen         string
		tok            tokenFlags
		ingest, review bool
		refused        string // "" when the check passes
	}{
		{":8080", tokenFlags{}, true, false, "POST /v1/events and /v1/views"},
		{"0.0.0.0:8080", tokenFlags{}, true, false, "POST /v1/events"},
		{"[::]:8080", tokenFlags{}, true, false, "POST /v1/events"},
		{"10.1.2.3:8080", tokenFlags{}, true, false, "POST /v1/events"},
		{"example.org:8080", tokenFlags{}, true, false, "POST /v1/events"},
		{":8080", tokenFlags{review: "t"}, true, true, ""},
		{":8080", tokenFlags{ingest: "t"}, true, false, ""},
		{":8080", tokenFlags{ingest: "t"}, true, true, "/v1/topics/review"},
		{":8080", tokenFlags{}, false, true, "/v1/topics/review"},
		{":8080", tokenFlags{}, false, false, ""},
		{":8080", tokenFlags{open: true}, true, true, ""},
		{"127.0.0.1:8080", tokenFlags{}, true, true, ""},
		{"127.9.9.9:8080", tokenFlags{}, true, true, ""},
		{"[::1]:8080", tokenFlags{}, true, true, ""},
		{"localhost:8080", tokenFlags{}, true, true, ""},
		{"nonsense", tokenFlags{}, true, false, "POST /v1/events"},
	} {
		var operator []string
		if c.review {
			operator = []string{"/v1/topics/review"}
		}
		err := c.tok.check(c.listen, c.ingest, operator...)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s %+v: refused: %v", c.listen, c.tok, err)
		case c.refused != "" && (err == nil || !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "--token")):
			t.Errorf("%s %+v: err = %v, want a usage error naming %q and --token", c.listen, c.tok, err, c.refused)
		}
	}
}

// TestServeAndUpRefuseOpenWritesAtStart: through the commands a person types, the refusal
// comes before anything is created or connected (up leaves no data directory behind).
func TestServeAndUpRefuseOpenWritesAtStart(t *testing.T) {
	_, err := runTrending(t, "serve", "--listen", ":0", "--kafka", "127.0.0.1:1", "--store", "bolt:"+filepath.Join(t.TempDir(), "s.db"))
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--open-writes") {
		t.Errorf("serve on every interface with --kafka and no token: err = %v", err)
	}
	data := filepath.Join(t.TempDir(), "data")
	_, err = runTrending(t, "up", "--listen", "0.0.0.0:0", "--data", data, "--no-load")
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "--listen 0.0.0.0:0 is reachable from other machines") {
		t.Errorf("up on every interface without a token: err = %v", err)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused up left %s behind (%v)", data, err)
	}
}

// TestServeIngestAtTheDoor runs `serve --kafka` on an embedded broker, as a producer meets it:
// with a token, a request without it is 401 and with it 202; an event dated an hour ahead
// is 400 with reason future_ts (the speed layer's DLQ reason for it), not 202.
func TestServeIngestAtTheDoor(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := eventlog.EnsureTopics(context.Background(), []string{k.Addr}, eventlog.Spec{Name: "views", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--store", "bolt:" + filepath.Join(t.TempDir(), "s.db"), "--listen", addr, "--kafka", k.Addr,
		"--token", "s3cret", "--log-format", "json"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	post := func(body, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	now := time.Now().UTC()
	ok := fmt.Sprintf(`{"item_id":"V1","count":1,"ts":%q}`, now.Format(time.RFC3339))
	deadline := time.Now().Add(10 * time.Second)
	code, body := post(ok, "s3cret")
	for code == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		code, body = post(ok, "s3cret")
	}
	if code != http.StatusAccepted {
		t.Fatalf("with the token: %d %s", code, body)
	}
	if code, body := post(ok, ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d %s, want 401", code, body)
	}
	future := fmt.Sprintf(`{"item_id":"V1","count":1,"ts":%q}`, now.Add(time.Hour).Format(time.RFC3339))
	if code, body := post(future, "s3cret"); code != http.StatusBadRequest || !strings.Contains(body, `"reason":"future_ts"`) {
		t.Errorf("an hour ahead: %d %s, want 400 with reason future_ts", code, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop:\n%s", out.String())
	}
}
