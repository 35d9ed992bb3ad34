package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		err := c.tok.check(c.listen, c.ingest, c.review)
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
