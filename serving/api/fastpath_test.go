package api

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveFixture runs f's server with Serve on a loopback listener until the test ends.
func serveFixture(t *testing.T, f *fixture) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// exchange sends raw requests on one connection, all at once (pipelined), and reads one
// response per request: status, headers without Date, body.
func exchange(t *testing.T, addr string, reqs ...string) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.Join(reqs, "")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []string
	for _, raw := range reqs {
		method, _, _ := strings.Cut(raw, " ")
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("read the response to %q: %v", raw, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("read the body of %q: %v", raw, err)
		}
		out = append(out, describe(resp, body))
		if resp.Close {
			break
		}
	}
	return out
}

// TestFastPathSameAsNetHTTP: every request answered the same, status, headers and body, with
// the fast path and without it (net/http alone), whether the fast path serves it or hands the
// connection over.
func TestFastPathSameAsNetHTTP(t *testing.T) {
	cors := func(c *Config) { c.CORSOrigins = []string{"https://dash.example"} }
	fast := serveFixture(t, newFixture(t, cors))
	slow := serveFixture(t, newFixture(t, func(c *Config) { cors(c); c.NoFastPath = true }))
	etag := func(hdr string) string {
		resp := exchange(t, slow, "GET /v1/trending?window=hour&limit=10 HTTP/1.1\r\nHost: x\r\n"+hdr+"\r\n")[0]
		_, v, _ := strings.Cut(resp, "Etag: ")
		v, _, _ = strings.Cut(v, "\n")
		return v
	}
	get := func(target, hdr string) string {
		return "GET " + target + " HTTP/1.1\r\nHost: api.example\r\n" + hdr + "\r\n"
	}
	for _, tc := range []struct {
		name string
		reqs []string
	}{
		{"list", []string{get("/v1/trending?window=hour&limit=100", "")}},
		{"limit and keep-alive", []string{get("/v1/trending?window=hour&limit=5", ""), get("/v1/trending?window=day", "User-Agent: t\r\n")}},
		{"gzip", []string{get("/v1/trending?window=hour&limit=100", "Accept-Encoding: gzip, deflate\r\n")}},
		{"if-none-match", []string{get("/v1/trending?window=hour&limit=10", "If-None-Match: "+etag("")+"\r\n")}},
		{"if-none-match gzip", []string{get("/v1/trending?window=hour&limit=10", "Accept-Encoding: gzip\r\nIf-None-Match: "+etag("Accept-Encoding: gzip\r\n")+"\r\n")}},
		{"stale etag", []string{get("/v1/trending?window=hour&limit=10", "If-None-Match: \"old\"\r\n")}},
		{"arrow", []string{get("/v1/trending?window=hour&limit=3", "Accept: "+ArrowMediaType+"\r\n")}},
		{"head", []string{"HEAD /v1/trending?window=hour HTTP/1.1\r\nHost: x\r\n\r\n"}},
		{"calendar window", []string{get("/v1/trending?window=hour&start=2026-01-01T00:00:00Z", "")}},
		{"bad query", []string{get("/v1/trending?window=hour&limit=-1", ""), get("/v1/trending?window=year", ""), get("/v1/trending?x=1", "")}},
		{"bad query string", []string{get("/v1/trending?window=%zz", "")}},
		{"topics", []string{get("/v1/topics?region=eu", ""), get("/v1/topics?region=mars", "")}},
		{"top videos", []string{get("/v1/top-videos?window=1h&k=5", "")}},
		{"cors", []string{get("/v1/trending?window=hour&limit=2", "Origin: https://dash.example\r\n"), get("/v1/trending?window=hour&limit=2", "Origin: https://evil.example\r\n")}},
		{"then net/http", []string{get("/v1/trending?window=hour&limit=2", ""), "POST /v1/trending HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", get("/healthz", ""), get("/v1/trending?window=hour&limit=2", "")}},
		{"escaped path", []string{get("/v1/%74rending?window=hour&limit=2", "")}},
		{"connection close", []string{get("/v1/trending?window=hour&limit=2", "Connection: close\r\n")}},
		{"http/1.0", []string{"GET /v1/trending?window=hour&limit=2 HTTP/1.0\r\n\r\n"}},
		{"no host", []string{"GET /v1/trending?window=hour&limit=2 HTTP/1.1\r\n\r\n"}},
		{"two hosts", []string{"GET /v1/trending?window=hour&limit=2 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"}},
		{"bad header", []string{"GET /v1/trending?window=hour&limit=2 HTTP/1.1\r\nHost: a\r\nBad Name: b\r\n\r\n"}},
		{"folded header", []string{"GET /v1/trending?window=hour&limit=2 HTTP/1.1\r\nHost: a\r\nAccept: x\r\n y\r\n\r\n"}},
		{"unknown path", []string{get("/v2/trending", "")}},
		{"large head", []string{get("/v1/trending?window=hour&limit=2", "X-Pad: "+strings.Repeat("p", 5000)+"\r\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := exchange(t, slow, tc.reqs...)
			got := exchange(t, fast, tc.reqs...)
			if len(got) != len(want) {
				t.Fatalf("%d responses, net/http gave %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("request %d %q:\nfast path:\n%.2000s\nnet/http:\n%.2000s", i, tc.reqs[i], got[i], want[i])
				}
			}
		})
	}
}

// TestFastPathStreamHandedOver: a stream on a connection that began on the fast path gets its
// first event (the connection went to net/http, coalescing off).
func TestFastPathStreamHandedOver(t *testing.T) {
	addr := serveFixture(t, newFixture(t, nil))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /v1/trending?window=hour&limit=1 HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("list: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	io.WriteString(c, "GET /v1/trending/stream?window=hour&limit=1 HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %v %v", resp, err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line == "" {
		t.Fatalf("first line of the stream: %q %v", line, err)
	}
}

// TestFastPathTimeouts: a connection that sends part of a request head is closed after
// ReadHeaderTimeout, and Serve returns promptly at shutdown with idle keep-alive connections
// open.
func TestFastPathTimeouts(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ReadHeaderTimeout = 200 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	io.WriteString(slow, "GET /v1/trending?window=hour HTTP/1.1\r\nHost: x\r\n")
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if n, err := slow.Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("a partial head got %d bytes, %v; want the connection closed", n, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("closed after %v, want about the 200ms ReadHeaderTimeout", d)
	}

	idle := make([]net.Conn, 5)
	for i := range idle {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /v1/trending?window=hour&limit=1 HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("list: %v %v", resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		idle[i] = c
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return within 3s of shutdown with idle connections open")
	}
	for _, c := range idle {
		if n, err := c.Read(make([]byte, 1)); err == nil {
			t.Errorf("an idle connection is still open after shutdown (read %d bytes)", n)
		}
	}
}

// FuzzFastPathSameAsNetHTTP: any GET whose target and one extra header come from the fuzzer is
// answered the same with the fast path and without it (status, headers, body), or both
// answers are unreadable; a keep-alive request after it is answered the same too, so a request
// the fast path misreads cannot shift the connection's framing.
func FuzzFastPathSameAsNetHTTP(f *testing.F) {
	for _, s := range [][3]string{
		{"/v1/trending?window=hour&limit=3", "Accept-Encoding", "gzip"},
		{"/v1/trending?window=hour", "If-None-Match", `"x"`},
		{"/v1/topics?region=eu", "Accept", ArrowMediaType},
		{"/v1/top-videos?window=1h&k=2", "Origin", "https://dash.example"},
		{"/v1/trending?window=%zz", "Content-Length", "3"},
		{"/v1/trending?window=hour", "Transfer-Encoding", "chunked"},
		{"/v1/trending?window=hour", "X", "a\r\nHost: b"},
		{"/v1/trending?window=hour&limit=2#frag", "Connection", "keep-alive"},
		{"*", "Host", "y"},
		{"/v1/trending?window=hour", "Content-Length", "-1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	var fast, slow string
	f.Fuzz(func(t *testing.T, target, name, value string) {
		if fast == "" {
			cors := func(c *Config) { c.CORSOrigins = []string{"https://dash.example"} }
			fast = serveFixture(t, newFixture(t, cors))
			slow = serveFixture(t, newFixture(t, func(c *Config) { cors(c); c.NoFastPath = true }))
			t.Cleanup(func() { fast, slow = "", "" })
		}
		req := "GET " + target + " HTTP/1.1\r\nHost: api.example\r\n" + name + ": " + value + "\r\n\r\n"
		next := "GET /v1/trending?window=hour&limit=1 HTTP/1.1\r\nHost: api.example\r\n\r\n"
		want, werr := exchangeLoose(slow, req+next)
		got, gerr := exchangeLoose(fast, req+next)
		if (werr != nil) != (gerr != nil) || got != want {
			t.Fatalf("%q:\nfast path (%v):\n%.1500s\nnet/http (%v):\n%.1500s", req, gerr, got, werr, want)
		}
	})
}

// exchangeLoose sends raw on one connection and reads up to two responses (status, headers
// without Date, body), stopping at the first it cannot read; the error says whether none
// could be.
func exchangeLoose(addr, raw string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	// A request both servers wait on (a body that never comes) ends here, the same on both.
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return "", err
	}
	br := bufio.NewReader(c)
	var b strings.Builder
	for i := range 2 {
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil {
			if i == 0 {
				return "", err
			}
			break
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return b.String(), err
		}
		b.WriteString(describe(resp, body) + "\n--\n")
		if resp.Close {
			break
		}
	}
	return b.String(), nil
}

// describe is a response as the tests compare it: status, headers but Date, length, body.
func describe(resp *http.Response, body []byte) string {
	resp.Header.Del("Date")
	var b strings.Builder
	b.WriteString(resp.Status + "\n")
	for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
		b.WriteString(k + ": " + strings.Join(resp.Header[k], ", ") + "\n")
	}
	if resp.ContentLength >= 0 {
		b.WriteString("length " + strconv.FormatInt(resp.ContentLength, 10) + "\n")
	}
	b.Write(body)
	return b.String()
}
