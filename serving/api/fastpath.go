package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fast path serves the cached GETs (fastRoutes) on a connection without net/http's
// per-request machinery, and hands every other connection to net/http unchanged.
//
// Issue 33 asks for p99 under 50 ms at 20,000 requests/s over 1,024 connections on one core
// that other work shares. On net/http a cached GET cost about 30 us of CPU (BENCHMARKS.md,
// "Serving API"): a third the write system call, the rest the server around the handler: the
// background read it starts and aborts for every request (a goroutine switch and two
// deadlines), the read and write deadlines set per request, the bufio layers, and sorting and
// writing the header map. The fast path keeps one goroutine per connection reading requests
// into one buffer; a request it can take (below) is parsed into a plain http.Request and served
// by the very handler net/http calls (Server.serveHTTP: routing, CORS, metrics, the list's
// ETag, gzip and Arrow variants, errors), through a ResponseWriter that lays out the status
// line, headers and body in one buffer and sends them in one write. Deadlines are re-armed at
// most once a second, so the idle and write timeouts hold to within a second.
//
// A connection moves to net/http for good, with the bytes read so far, at the first request
// the fast path does not take: another path (the streams, the dashboard, POST), another method,
// a body, HTTP/1.0, Connection, Upgrade, Expect or Transfer-Encoding headers, an escaped path, a
// head larger than the buffer, or anything malformed (net/http then answers 400 as it always
// did). So browsers' dashboards and streams run on net/http as before; clients polling the
// lists stay on the fast path.
var fastRoutes = map[string]bool{"/v1/trending": true, "/v1/topics": true, "/v1/top-videos": true}

// fastBufSize is the fast path's read buffer: a request head larger than this goes to net/http
// (which answers it, or refuses it above MaxHeaderBytes).
const fastBufSize = 4 << 10

// handoffListener is the listener net/http serves: the connections the fast path hands over.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// handoff gives c to net/http; false once net/http stopped accepting.
func (l *handoffListener) handoff(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

// prefixConn replays bytes the fast path read before net/http reads the connection.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// fastServer accepts the connections and serves the fast path's requests on them.
type fastServer struct {
	s       *Server
	handler http.Handler
	ctx     context.Context // every fast request's context (carries the stream stop)
	handoff *handoffListener

	mu      sync.Mutex
	conns   map[*fastConn]struct{}
	closing atomic.Bool
	wg      sync.WaitGroup

	date atomic.Pointer[dateValue] // the Date header of the current second
}

type dateValue struct {
	sec int64
	v   []byte
}

// fastConn is one connection on the fast path.
type fastConn struct {
	c net.Conn
}

func (f *fastServer) acceptLoop(ln net.Listener) error {
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if f.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of file descriptors and the like pass: back off as net/http does.
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				f.s.log.Warn("accept failed; retrying", "err", err, "in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		fc := &fastConn{c: c}
		f.mu.Lock()
		if f.closing.Load() {
			f.mu.Unlock()
			c.Close()
			return nil
		}
		f.conns[fc] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go f.serve(fc)
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// shutdown stops the fast path: idle connections close at once, busy ones after their
// response; it waits for them until ctx ends.
func (f *fastServer) shutdown(ctx context.Context) error {
	f.mu.Lock()
	f.closing.Store(true)
	for fc := range f.conns {
		fc.c.SetReadDeadline(time.Unix(1, 0)) // wakes a connection waiting for a request
	}
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		f.mu.Lock()
		for fc := range f.conns {
			fc.c.Close()
		}
		f.mu.Unlock()
		return ctx.Err()
	}
}

func (f *fastServer) forget(fc *fastConn) {
	f.mu.Lock()
	delete(f.conns, fc)
	f.mu.Unlock()
	f.wg.Done()
}

// serve runs one connection: requests the fast path takes are answered here; at the first it
// does not, the connection and what was read of it go to net/http.
func (f *fastServer) serve(fc *fastConn) {
	c := fc.c
	handedOff := false
	defer func() {
		if !handedOff {
			c.Close()
		}
		f.forget(fc)
	}()
	defer func() {
		if err := recover(); err != nil && err != http.ErrAbortHandler {
			f.s.log.Error("panic serving a request", "remote", c.RemoteAddr().String(), "panic", fmt.Sprint(err), "stack", string(debug.Stack()))
		}
	}()
	cfg := &f.s.cfg
	buf := make([]byte, fastBufSize)
	n := 0 // buf[:n] holds bytes read and not yet served
	w := &fastWriter{f: f, c: c, h: http.Header{}}
	fr := newFastReq(f.ctx, c.RemoteAddr().String())
	var armed time.Time // when the idle and write deadlines were last set
	for {
		if f.closing.Load() && n == 0 {
			return
		}
		// Parse a request once buf holds a whole head; else read more.
		end := bytes.Index(buf[:n], crlfcrlf)
		if end < 0 {
			if n == len(buf) {
				break // a head larger than the buffer: net/http's to answer
			}
			now := time.Now()
			if n > 0 {
				// Part of a head: it must complete within ReadHeaderTimeout.
				c.SetReadDeadline(now.Add(cfg.ReadHeaderTimeout))
				armed = time.Time{}
			} else if now.Sub(armed) > time.Second {
				c.SetReadDeadline(now.Add(cfg.IdleTimeout))
				c.SetWriteDeadline(now.Add(cfg.WriteTimeout))
				armed = now
				if f.closing.Load() {
					return // shutdown's wake-up may have come before this re-arm
				}
			}
			m, err := c.Read(buf[n:])
			n += m
			if err != nil {
				return
			}
			continue
		}
		if !fr.parse(buf[:end+2]) {
			break
		}
		head := end + 4
		w.reset(fr.r.Method == http.MethodHead)
		f.handler.ServeHTTP(w, fr.r)
		if err := w.finish(); err != nil {
			return
		}
		n = copy(buf, buf[head:n])
	}
	// Hand over: net/http reads what we read first, and deadlines are its own again.
	c.SetDeadline(time.Time{})
	pc := &coalescingConn{Conn: &prefixConn{Conn: c, pre: slices.Clone(buf[:n])}}
	handedOff = f.handoff.handoff(pc)
}

var crlfcrlf = []byte("\r\n\r\n")

// fastReq is a connection's request, reused from one request to the next (a handler does not
// keep the request after it returns): one string allocation a request, the head's, of which
// the target and the header values are substrings.
type fastReq struct {
	r    *http.Request
	u    url.URL
	h    http.Header
	vals []string // backing of h's values
}

func newFastReq(ctx context.Context, remote string) *fastReq {
	fr := &fastReq{h: http.Header{}}
	fr.r = (&http.Request{Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Body: http.NoBody, RemoteAddr: remote}).WithContext(ctx)
	return fr
}

// parse reads a request head (its lines, each ending in CRLF, without the blank line) into fr,
// or reports false when net/http must have it.
func (fr *fastReq) parse(headBytes []byte) bool {
	// Cheap refusals first, before the head is copied.
	if !bytes.HasPrefix(headBytes, []byte("GET /")) && !bytes.HasPrefix(headBytes, []byte("HEAD /")) {
		return false
	}
	head := string(headBytes)
	line, rest, _ := strings.Cut(head, "\r\n")
	method, target, _ := strings.Cut(line, " ")
	target, ok := strings.CutSuffix(target, " HTTP/1.1")
	if !ok || !plainString(target) || strings.IndexByte(target, '#') >= 0 {
		return false
	}
	path, query, _ := strings.Cut(target, "?")
	if strings.IndexByte(path, '%') >= 0 || !fastRoutes[path] {
		return false
	}
	clear(fr.h)
	fr.vals = fr.vals[:0]
	host, hosts := "", 0
	for len(rest) > 0 {
		var l string
		l, rest, _ = strings.Cut(rest, "\r\n")
		k, v, ok := strings.Cut(l, ":")
		if !ok || len(k) == 0 || !tokenString(k) || !valueString(v) {
			return false // obsolete line folding, a bad name or value: net/http answers
		}
		name := headerName(k)
		switch name {
		case "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Expect", "Te", "Trailer":
			return false
		}
		v = strings.Trim(v, " \t")
		if name == "Host" {
			host = v
			hosts++
			continue
		}
		if vs, ok := fr.h[name]; ok {
			fr.h[name] = append(vs, v) // a repeated header: rare, allocates
			continue
		}
		fr.vals = append(fr.vals, v)
		fr.h[name] = fr.vals[len(fr.vals)-1 : len(fr.vals) : len(fr.vals)]
	}
	if hosts != 1 {
		return false
	}
	fr.u = url.URL{Path: path, RawQuery: query}
	r := fr.r
	r.Method, r.URL, r.Header, r.Host, r.RequestURI = method, &fr.u, fr.h, host, target
	return true
}

// plainString: visible ASCII only, as a request target must be.
func plainString(b string) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return len(b) > 0
}

// tokenString: a header name's characters (RFC 9110 token).
func tokenString(b string) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// valueString: no control characters but tab.
func valueString(b string) bool {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// headerName is k in canonical form, without allocating for the names clients usually send.
func headerName(k string) string {
	for _, n := range commonHeaders {
		if len(n) == len(k) && strings.EqualFold(n, k) {
			return n
		}
	}
	return http.CanonicalHeaderKey(k)
}

var commonHeaders = []string{"Host", "User-Agent", "Accept", "Accept-Encoding", "Accept-Language", "If-None-Match",
	"Origin", "Referer", "Cookie", "Connection", "Cache-Control", "Content-Length", "Transfer-Encoding", "Authorization"}

// fastWriter is the fast path's ResponseWriter: the response's status line, headers and body
// in one buffer, sent in one write.
type fastWriter struct {
	f       *fastServer
	c       net.Conn
	iov     net.Buffers
	err     error // the first failed write
	h       http.Header
	head    bool // a HEAD request: no body
	code    int  // 0 until WriteHeader
	out     []byte
	start   int  // where the body starts in out (streaming); buffered: body in out[start:]
	withLen bool // the head is written (Content-Length known)
}

func (w *fastWriter) reset(head bool) {
	clear(w.h)
	w.head, w.code, w.withLen, w.start, w.err = head, 0, false, 0, nil
	if cap(w.out) > 64<<10 {
		w.out = nil // do not pin a large buffer on an idle connection
	}
	w.out = w.out[:0]
}

func (w *fastWriter) Header() http.Header { return w.h }

func (w *fastWriter) WriteHeader(code int) {
	if w.code != 0 || code < 200 || code > 999 {
		return // only a final status, once (1xx would need an interim response: none of our handlers sends one)
	}
	w.code = code
	if cl := w.h["Content-Length"]; len(cl) == 1 || !bodyAllowed(code) || w.head {
		w.writeHead(-1)
		w.withLen = true
	}
}

func (w *fastWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.head || !bodyAllowed(w.code) {
		return len(p), nil // net/http discards them too (http.ErrBodyNotAllowed for 304)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !w.withLen || len(p) < fastWriteThrough {
		w.out = append(w.out, p...)
		return len(p), nil
	}
	// A large write (a list's body) leaves at once with what is kept, in one writev: copying
	// a 15 KB body into out was a tenth of the server's CPU.
	w.iov = append(w.iov[:0], w.out, p)
	_, w.err = w.iov.WriteTo(w.c)
	w.out = w.out[:0]
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// fastWriteThrough is the size from which a body write is sent at once rather than kept.
const fastWriteThrough = 2 << 10

// finish sends what is left of the response.
func (w *fastWriter) finish() error {
	if w.err != nil {
		return w.err
	}
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.withLen {
		w.bufferedHead()
	}
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.c.Write(w.out)
	return err
}

// bufferedHead puts the head before a body written without a Content-Length.
func (w *fastWriter) bufferedHead() {
	// The handler set no Content-Length: the body is all of out; the head goes before it.
	body := w.out
	w.out = make([]byte, 0, len(body)+512)
	if _, ok := w.h["Content-Type"]; !ok && len(body) > 0 {
		w.h["Content-Type"] = []string{http.DetectContentType(body)}
	}
	w.writeHead(len(body))
	w.out = append(w.out, body...)
}

func bodyAllowed(code int) bool {
	return code != http.StatusNoContent && code != http.StatusNotModified
}

// writeHead appends the status line and headers (Content-Length length when >= 0) to out.
func (w *fastWriter) writeHead(length int) {
	b := append(w.out, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.code), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.code)...)
	b = append(b, "\r\n"...)
	if length >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(length), 10)
		b = append(b, "\r\n"...)
	}
	for k, vs := range w.h {
		if !bodyAllowed(w.code) && (k == "Content-Length" || k == "Content-Type" || k == "Transfer-Encoding") {
			continue // as net/http, which drops them from a 304 and a 204
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendHeaderValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	if _, ok := w.h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = append(b, w.f.dateHeader()...)
		b = append(b, "\r\n"...)
	}
	w.out = append(b, "\r\n"...)
	w.start = len(w.out)
}

// appendHeaderValue appends v with CR and LF replaced by spaces, as net/http does.
func appendHeaderValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// dateHeader is the Date header's value for now, formatted once a second.
func (f *fastServer) dateHeader() []byte {
	now := time.Now()
	sec := now.Unix()
	if d := f.date.Load(); d != nil && d.sec == sec {
		return d.v
	}
	d := &dateValue{sec: sec, v: now.UTC().AppendFormat(nil, http.TimeFormat)}
	f.date.Store(d)
	return d.v
}
