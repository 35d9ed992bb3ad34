package api

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener counts the Write calls reaching the real connections.
type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) { c.writes.Add(1); return c.Conn.Write(p) }

func serveCoalesced(t *testing.T, h http.Handler) (addr string, writes *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writes = new(atomic.Int64)
	srv := &http.Server{Handler: h}
	go srv.Serve(coalescingListener{countingListener{ln, writes}})
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), writes
}

// TestCoalescedResponseIsOneWrite: a 40 KB response, which net/http writes through its 4 KiB
// buffer in pieces, reaches the socket as one write, on every request of a keep-alive
// connection.
func TestCoalescedResponseIsOneWrite(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 4000)
	addr, writes := serveCoalesced(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		before := writes.Load()
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(got, body) {
			t.Fatalf("request %d: body of %d bytes, want %d", i, len(got), len(body))
		}
		if n := writes.Load() - before; n != 1 {
			t.Fatalf("request %d: %d writes to the socket, want 1", i, n)
		}
	}
}

// TestCoalescedExpectContinue: "100 Continue" must leave before the server waits for the body.
func TestCoalescedExpectContinue(t *testing.T) {
	addr, _ := serveCoalesced(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(bytes.ToUpper(b))
	}))
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("hello"))
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}, Timeout: 5 * time.Second}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "HELLO" || time.Since(start) > 3*time.Second {
		t.Fatalf("got %q after %v", b, time.Since(start))
	}
}

// TestCoalescedLargeAndClose: writes beyond the bound go through, and Close sends what is
// buffered.
func TestCoalescedLargeAndClose(t *testing.T) {
	a, b := net.Pipe()
	c := &coalescingConn{Conn: a}
	big := bytes.Repeat([]byte{'x'}, maxCoalesce+10)
	got := make(chan []byte)
	go func() { all, _ := io.ReadAll(b); got <- all }()
	if _, err := c.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	all := <-got
	if want := "head" + string(big) + "tail"; string(all) != want {
		t.Fatalf("got %d bytes, want %d in order", len(all), len(want))
	}
}

// TestCoalescedBackgroundReadKeepsBuffer: net/http's one-byte background read while a
// handler runs does not flush a half-written response; the next request's read does.
func TestCoalescedBackgroundReadKeepsBuffer(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	writes := new(atomic.Int64)
	c := &coalescingConn{Conn: countingConn{a, writes}}
	if _, err := c.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	go func() { b.Write([]byte("G")) }() // a pipelined request's first byte
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("background read: %d, %v", n, err)
	}
	if n := writes.Load(); n != 0 {
		t.Fatalf("%d writes after a one-byte read, want the response still buffered", n)
	}
	go func() { io.ReadAll(b) }()
	go func() { c.Read(make([]byte, 4096)) }()
	for deadline := time.Now().Add(5 * time.Second); writes.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the next request's read did not flush the response")
		}
	}
	c.Close()
}

// TestCoalescedWriteError: a failed flush is reported by the next Read and Write.
func TestCoalescedWriteError(t *testing.T) {
	a, b := net.Pipe()
	b.Close()
	c := &coalescingConn{Conn: a}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatalf("a buffered write failed early: %v", err)
	}
	if _, err := c.Read(make([]byte, 16)); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("read after a failed flush: %v", err)
	}
	if _, err := c.Write([]byte("y")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after a failed flush: %v", err)
	}
}
