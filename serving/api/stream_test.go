package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"trending/internal/itest"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	chstore "trending/serving/store/clickhouse"
	"trending/serving/store/storetest"
)

// live is a running server over a store, served on a real TCP listener by Serve: the cache's
// Run, the shutdown hooks and the connection wrappers all as in `trending serve`.
type live struct {
	t    testing.TB
	srv  *Server
	st   store.Store
	reg  *prometheus.Registry
	url  string
	stop func() error // cancels Serve and returns its error; once
}

// liveOpts change startLive's server.
type liveOpts struct {
	mod  func(*Config)                   // applied to the config
	wrap func(net.Listener) net.Listener // wraps the listener
	skip func(model.List) bool           // seed lists left out
	st   store.Store                     // instead of a bbolt file with the seed lists
}

// startLive seeds a bbolt store (unwrapped, so the cache gets its change notification) with
// the fixture's lists and serves it. The refreshes tick once a day, past Validate's 5 s bound:
// a test that sees a new version got it from the notification or the versions poll.
func startLive(t testing.TB, o liveOpts) *live {
	t.Helper()
	st := o.st
	if st == nil {
		b, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		for _, l := range seedLists() {
			if o.skip != nil && o.skip(l) {
				continue
			}
			if err := b.Put(context.Background(), l); err != nil {
				t.Fatalf("seed %s: %v", l.Key(), err)
			}
		}
		st = b
	}
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return testNow }
	cfg.Registerer, cfg.Gatherer = reg, reg
	if o.mod != nil {
		o.mod(&cfg)
	}
	srv, err := New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.cache.cfg.RefreshInterval, srv.cache.cfg.FullRefreshInterval = 24*time.Hour, 24*time.Hour
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	if o.wrap != nil {
		ln = o.wrap(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	l := &live{t: t, srv: srv, st: st, reg: reg, url: url}
	var stopped atomic.Bool
	var serveErr error
	l.stop = func() error {
		if !stopped.Swap(true) {
			cancel()
			serveErr = <-done
		}
		return serveErr
	}
	t.Cleanup(func() {
		if err := l.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !srv.cache.Loaded(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cache never loaded")
		}
	}
	return l
}

func (l *live) put(ls model.List) {
	l.t.Helper()
	if err := l.st.Put(context.Background(), ls); err != nil {
		l.t.Fatal(err)
	}
}

// get reads one 200 response body over TCP.
func (l *live) get(target string) []byte {
	l.t.Helper()
	resp := l.open(target)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		l.t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	return body
}

func (l *live) open(target string, hdr ...string) *http.Response {
	l.t.Helper()
	req, err := http.NewRequest(http.MethodGet, l.url+target, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	return resp
}

// sse is one server-sent event, or a comment line (the heartbeat).
type sse struct {
	id, data, comment string
}

// client is an open stream whose events a goroutine parses into a channel.
type client struct {
	t      testing.TB
	resp   *http.Response
	events chan sse
	done   chan error // why reading stopped: io.EOF when the server ended the stream
}

// stream opens target with the request headers hdr (name, value, ...) and expects 200.
func (l *live) stream(target string, hdr ...string) *client {
	l.t.Helper()
	resp := l.open(target, hdr...)
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		l.t.Fatalf("stream %s: %d %s", target, resp.StatusCode, body)
	}
	l.t.Cleanup(func() { resp.Body.Close() })
	c := &client{t: l.t, resp: resp, events: make(chan sse, 4096), done: make(chan error, 1)}
	go func() { c.done <- readEvents(resp.Body, c.events) }()
	return c
}

// readEvents parses a server-sent event stream into out until it ends.
func readEvents(body io.Reader, out chan<- sse) error {
	r := bufio.NewReaderSize(body, 64<<10)
	var ev sse
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev != (sse{}) {
				out <- ev
			}
			ev = sse{}
		case strings.HasPrefix(line, ":"):
			ev.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
}

// next returns the next event or comment. A stream silent for 10 s fails the test: a guard
// against hanging, not a speed requirement.
func (c *client) next() sse {
	c.t.Helper()
	select {
	case ev := <-c.events:
		return ev
	case err := <-c.done:
		c.t.Fatalf("stream ended: %v", err)
	case <-time.After(10 * time.Second):
		c.t.Fatal("nothing on the stream for 10 s")
	}
	return sse{}
}

// nextEvent returns the next event, skipping heartbeats.
func (c *client) nextEvent() sse {
	c.t.Helper()
	for {
		if ev := c.next(); ev.comment == "" {
			return ev
		}
	}
}

// newer is the fixture's live hour list at a later version, 2 s old at the test clock.
func newer(version int64, items int) model.List {
	l := seedLists()[0]
	l.Version, l.AsOf, l.ComputedAt = version, testNow.Add(-2*time.Second), testNow
	l.Items = l.Items[:items]
	return l
}

// histogram returns the histogram of name{window} in g, or nil.
func histogram(t *testing.T, g prometheus.Gatherer, name, window string) *dto.Histogram {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "window" && lp.GetValue() == window {
					return m.GetHistogram()
				}
			}
		}
	}
	return nil
}

// waitFor polls cond until it holds; 10 s without fails the test (a guard against hanging,
// not a speed requirement).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic("BUG: " + err.Error())
	}
	if c := d.GetCounter(); c != nil {
		return c.GetValue()
	}
	return d.GetGauge().GetValue()
}

// bucket is the cumulative count of h's bucket with upper bound le.
func bucket(t *testing.T, h *dto.Histogram, le float64) uint64 {
	t.Helper()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == le {
			return b.GetCumulativeCount()
		}
	}
	t.Fatalf("no bucket le=%v", le)
	return 0
}

func TestStreamFirstEventIsTheList(t *testing.T) {
	l := startLive(t, liveOpts{})
	c := l.stream("/v1/trending/stream?window=hour&limit=7")
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"} {
		if got := c.resp.Header.Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	ev := c.next()
	if want := l.get("/v1/trending?window=hour&limit=7"); ev.id != "30" || ev.data != string(want) {
		t.Fatalf("first event: id %q data %q\nwant id 30 and the GET body %q", ev.id, ev.data, want)
	}
	if n := value(l.srv.cache.m.streamsOpen); n != 1 {
		t.Fatalf("open streams gauge %v, want 1", n)
	}
	t.Run("calendar window", func(t *testing.T) {
		start := storetest.T0.Add(-time.Hour).Format(time.RFC3339)
		ev := l.stream("/v1/trending/stream?window=hour&start=" + start).next()
		if want := l.get("/v1/trending?window=hour&start=" + start); ev.id != "100" || ev.data != string(want) {
			t.Fatalf("first event: id %q data %q, want id 100 and %q", ev.id, ev.data, want)
		}
	})
}

// TestStreamPushesNewVersion: a Put reaches a connected client through the store's change
// notification alone (no refresh ticks), as the GET body of the new version, and its age when
// the cache swapped it in is observed once in trending_served_freshness_seconds.
func TestStreamPushesNewVersion(t *testing.T) {
	l := startLive(t, liveOpts{})
	c := l.stream("/v1/trending/stream?window=hour")
	if ev := c.next(); ev.id != "30" {
		t.Fatalf("first event id %q, want 30", ev.id)
	}
	l.put(newer(31, 3))
	ev := c.nextEvent()
	var got ListResponse
	if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
		t.Fatal(err)
	}
	if ev.id != "31" || got.Version != 31 || len(got.Items) != 3 || got.AgeSeconds != 2 {
		t.Fatalf("pushed event: id %q, list %+v", ev.id, got)
	}
	if ev.data != string(l.get("/v1/trending?window=hour")) {
		t.Fatal("the pushed event is not the GET body")
	}
	m := l.srv.cache.m
	if hot, full := value(m.refreshes.WithLabelValues("hot")), value(m.refreshes.WithLabelValues("full")); hot != 0 || full != 1 {
		t.Fatalf("%v hot and %v full refreshes, want 0 and the first 1: the version must come from the notification", hot, full)
	}
	// The counter moves once the write returned, which may be after the client read it.
	waitFor(t, "2 events counted", func() bool { return value(m.streamEvents) == 2 })
	// One observation, of 2 s: in the 2 s bucket, not the 1 s one; the first load's lists
	// are not observed, nor lists that did not change.
	h := histogram(t, l.reg, "trending_served_freshness_seconds", "hour")
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 2 || bucket(t, h, 1) != 0 || bucket(t, h, 2) != 1 {
		t.Fatalf("freshness of hour: %v", h)
	}
	if h := histogram(t, l.reg, "trending_served_freshness_seconds", "day"); h != nil {
		t.Fatalf("freshness of an unchanged list observed: %v", h)
	}
}

// TestStreamMissing: a live list nobody published yet is streamed from its first version; a
// calendar window nobody computed is the same 404 as GET's.
func TestStreamMissing(t *testing.T) {
	l := startLive(t, liveOpts{skip: func(ls model.List) bool { return ls.Window == "all" }})
	resp := l.open("/v1/trending/stream?window=hour&start=2026-11-14T08:00:00Z")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"not_found"`) {
		t.Fatalf("uncomputed calendar window: %d %s", resp.StatusCode, body)
	}
	c := l.stream("/v1/trending/stream?window=all")
	l.put(newer(31, 3)) // another list first: nothing for this stream
	all := storetest.MakeList("all", time.Time{}, 40, model.SourceSpeed, 2, 9)
	l.put(all)
	if ev := c.nextEvent(); ev.id != "40" || ev.data != string(l.get("/v1/trending?window=all")) {
		t.Fatalf("first version of a list published after the stream opened: %+v", ev)
	}
}

// TestStreamResume: Last-Event-ID at the current version or beyond sends nothing until the
// next version; an older one gets the current version at once.
func TestStreamResume(t *testing.T) {
	l := startLive(t, liveOpts{})
	ahead := l.stream("/v1/trending/stream?window=hour", "Last-Event-ID", "30")
	farAhead := l.stream("/v1/trending/stream?window=hour", "Last-Event-ID", "99")
	behind := l.stream("/v1/trending/stream?window=hour", "Last-Event-ID", "29")
	junk := l.stream("/v1/trending/stream?window=hour", "Last-Event-ID", "x")
	for name, c := range map[string]*client{"behind": behind, "unparsable": junk} {
		if ev := c.nextEvent(); ev.id != "30" {
			t.Fatalf("Last-Event-ID %s: first event id %q, want the current 30", name, ev.id)
		}
	}
	l.put(newer(31, 3))
	for name, c := range map[string]*client{"at the current version": ahead, "beyond it": farAhead, "behind": behind} {
		if ev := c.nextEvent(); ev.id != "31" {
			t.Fatalf("Last-Event-ID %s: event id %q, want the next version 31", name, ev.id)
		}
	}
}

// TestStreamLimit: past MaxStreams a stream is refused with 503, Retry-After and the JSON
// error, and counted; once one closes, the next is accepted.
func TestStreamLimit(t *testing.T) {
	l := startLive(t, liveOpts{mod: func(c *Config) { c.MaxStreams = 2 }})
	a := l.stream("/v1/trending/stream?window=hour")
	a.next()
	l.stream("/v1/trending/stream?window=day").next()
	resp := l.open("/v1/trending/stream?window=hour")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e ErrorResponse
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "5" ||
		resp.Header.Get("Content-Type") != "application/json" || e.Error != "too_many_streams" || !strings.Contains(e.Detail, "2 streams") {
		t.Fatalf("third stream: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	m := l.srv.cache.m
	if r, o := value(m.streamRefused), value(m.streamsOpen); r != 1 || o != 2 {
		t.Fatalf("refused %v, open %v; want 1 and 2", r, o)
	}
	a.resp.Body.Close()
	waitFor(t, "the closed stream released", func() bool { return value(m.streamsOpen) == 1 })
	if ev := l.stream("/v1/trending/stream?window=hour").next(); ev.id != "30" {
		t.Fatalf("after a close: %+v", ev)
	}
}

// smallBuffers makes every accepted connection's send buffer as small as the kernel allows,
// so a reader that stops reading blocks the server's writes after a few kilobytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(1)
	}
	return c, err
}

// TestStreamSlowReaderDropped: a client that never reads is disconnected once a write to it
// misses StreamWriteTimeout, and counted; a client that reads keeps getting every version up
// to the newest meanwhile.
func TestStreamSlowReaderDropped(t *testing.T) {
	l := startLive(t, liveOpts{
		mod:  func(c *Config) { c.StreamWriteTimeout = 100 * time.Millisecond },
		wrap: func(ln net.Listener) net.Listener { return smallBuffers{ln} },
	})
	addr := strings.TrimPrefix(l.url, "http://")
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.(*net.TCPConn).SetReadBuffer(1)
	fmt.Fprintf(slow, "GET /v1/trending/stream?window=hour&limit=100 HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	fast := l.stream("/v1/trending/stream?window=hour&limit=100")
	m := l.srv.cache.m
	waitFor(t, "the slow client's stream open", func() bool { return value(m.streamsOpen) == 2 })
	// Large versions until the slow reader's socket is full and a write to it times out.
	v := int64(30)
	for deadline := time.Now().Add(20 * time.Second); value(m.streamDropped) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the slow reader was never dropped")
		}
		v++
		ls := seedLists()[0]
		ls.Version, ls.ComputedAt = v, testNow
		for i := range ls.Items {
			ls.Items[i].Title = strings.Repeat("a title long enough to fill a socket buffer ", 4)
		}
		l.put(ls)
		time.Sleep(20 * time.Millisecond)
	}
	if n := value(m.streamDropped); n != 1 {
		t.Fatalf("dropped %v streams, want the slow one", n)
	}
	waitFor(t, "the dropped stream released", func() bool { return value(m.streamsOpen) == 1 })
	l.put(newer(v+1, 3))
	for {
		ev := fast.nextEvent()
		if ev.id == strconv.FormatInt(v+1, 10) {
			break
		}
	}
}

// TestStreamHeartbeat: an idle stream gets heartbeat comments, and lives on past the server's
// ReadTimeout and WriteTimeout (which a stream replaces with a deadline per write).
func TestStreamHeartbeat(t *testing.T) {
	l := startLive(t, liveOpts{mod: func(c *Config) {
		c.StreamHeartbeat = 20 * time.Millisecond
		c.ReadTimeout, c.WriteTimeout = 100*time.Millisecond, 100*time.Millisecond
	}})
	c := l.stream("/v1/trending/stream?window=hour", "Last-Event-ID", "30")
	start := time.Now()
	beats := 0
	for time.Since(start) < 500*time.Millisecond {
		ev := c.next()
		if ev != (sse{comment: "heartbeat"}) {
			t.Fatalf("on an idle stream: %+v, want only heartbeats", ev)
		}
		beats++
	}
	l.put(newer(31, 3))
	if ev := c.nextEvent(); ev.id != "31" {
		t.Fatalf("after %d heartbeats: %+v, want version 31", beats, ev)
	}
}

// TestStreamShutdown: Serve's drain ends open streams (the clients read the end of the
// stream) and returns without error, well inside ShutdownTimeout; no stream holds it up.
func TestStreamShutdown(t *testing.T) {
	l := startLive(t, liveOpts{mod: func(c *Config) { c.ShutdownTimeout = time.Minute }})
	a, b := l.stream("/v1/trending/stream?window=hour"), l.stream("/v1/trending/stream?window=day")
	a.next()
	b.next()
	start := time.Now()
	if err := l.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if d := time.Since(start); d >= time.Minute {
		t.Fatalf("the drain waited out its timeout (%v): streams held it", d)
	}
	for name, c := range map[string]*client{"hour": a, "day": b} {
		select {
		case err := <-c.done:
			if err != io.EOF {
				t.Fatalf("%s stream: %v, want the end of the stream", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s stream still open after the shutdown", name)
		}
	}
}

// TestStreamErrors: the stream takes the query of GET /v1/trending, with its 400s; it is GET
// only; and before the cache has loaded it is the same 503.
func TestStreamErrors(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		method, target string
		status         int
		code           string
	}{
		{"GET", "/v1/trending/stream", 400, "bad_parameter"},
		{"GET", "/v1/trending/stream?window=year", 400, "bad_parameter"},
		{"GET", "/v1/trending/stream?window=hour&limit=0", 400, "bad_parameter"},
		{"GET", "/v1/trending/stream?window=hour&region=eu", 400, "bad_parameter"}, // no lists per region here
		{"GET", "/v1/trending/stream?window=hour&country=eu", 400, "unknown_parameter"},
		{"GET", "/v1/trending/stream?window=hour&start=2026-11-14T08:00:00Z", 404, "not_found"},
		{"HEAD", "/v1/trending/stream?window=hour", 405, "method_not_allowed"},
		{"POST", "/v1/trending/stream?window=hour", 405, "method_not_allowed"},
	} {
		w := f.do(c.method, c.target)
		if w.Code != c.status || (c.method != "HEAD" && decode[ErrorResponse](t, w).Error != c.code) {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.target, w.Code, w.Body, c.status, c.code)
		}
	}
	nf := newFixture(t, func(c *Config) { c.Registerer, c.Gatherer = nil, nil })
	srv, _ := New(nf.srv.cfg, nf.st, nil)
	nf.h = srv.Handler()
	if w := nf.get("/v1/trending/stream?window=hour"); w.Code != 503 || decode[ErrorResponse](t, w).Error != "not_ready" {
		t.Fatalf("before loading: %d %s", w.Code, w.Body)
	}
}

// TestStreamClickHouse: over the ClickHouse store, which cannot notify, the cache's versions
// poll (key columns only) brings a version another writer stored to a connected client,
// without a refresh, and loads only the body of the list that changed.
func TestStreamClickHouse(t *testing.T) {
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, time.Minute)
	o := chstore.DefaultOptions()
	o.Addr, o.Database = addr, itest.Underscored(t, "trending_it_stream")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database)
		conn.Close()
	})
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	ch, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	for _, ls := range seedLists() {
		if err := ch.Put(ctx, ls); err != nil {
			t.Fatal(err)
		}
	}
	counted := &countingStore{Store: ch, Versioner: ch}
	l := startLive(t, liveOpts{st: counted, mod: func(c *Config) {
		c.VersionPollInterval = 20 * time.Millisecond
		c.Topics = map[string]string{"world": "volume", "eu": "surge"} // so the full refresh loads every seeded list
	}})
	c := l.stream("/v1/trending/stream?window=hour")
	if ev := c.next(); ev.id != "30" {
		t.Fatalf("first event id %q, want 30", ev.id)
	}
	m := l.srv.cache.m
	// The polls before the write load no body: the full refresh loaded every list already.
	loaded := counted.gets.Load()
	polls := value(m.refreshes.WithLabelValues("changes"))
	waitFor(t, "two versions polls", func() bool { return value(m.refreshes.WithLabelValues("changes")) >= polls+2 })
	if n := counted.gets.Load() - loaded; n != 0 {
		t.Fatalf("%d bodies loaded by the polls before any write, want 0", n)
	}
	// Another process's writer: its own store value on the same table.
	other, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Put(ctx, newer(31, 3)); err != nil {
		t.Fatal(err)
	}
	ev := c.nextEvent()
	if ev.id != "31" || ev.data != string(l.get("/v1/trending?window=hour")) {
		t.Fatalf("pushed event %+v", ev)
	}
	if hot := value(m.refreshes.WithLabelValues("hot")); hot != 0 {
		t.Fatalf("%v hot refreshes: the version must come from the versions poll", hot)
	}
	if n := counted.gets.Load() - loaded; n != 1 {
		t.Fatalf("%d bodies loaded, want the one list that changed", n)
	}
}

// countingStore counts Gets, the loads of a body (the cache's refreshes use Since and Range).
type countingStore struct {
	store.Store
	store.Versioner
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, k model.Key) (model.List, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, k)
}

// notifyingCounter is countingStore over a bbolt store, which also notifies.
type notifyingCounter struct {
	countingStore
	store.Notifier
}

// TestCacheLoadsOnlyChangedLists: after the embedded store's notification the cache loads the
// bodies of the lists written, not every list Since would return.
func TestCacheLoadsOnlyChangedLists(t *testing.T) {
	b, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, ls := range seedLists() {
		if err := b.Put(context.Background(), ls); err != nil {
			t.Fatal(err)
		}
	}
	st := &notifyingCounter{countingStore: countingStore{Store: b, Versioner: b}, Notifier: b}
	l := startLive(t, liveOpts{st: st, mod: func(c *Config) { c.Topics = map[string]string{"world": "volume", "eu": "surge"} }})
	loaded := st.gets.Load()
	day := storetest.MakeList("day", time.Time{}, 31, model.SourceSpeed, 2, 9)
	l.put(newer(31, 3))
	l.put(day)
	waitFor(t, "both new versions in the cache", func() bool {
		h, _ := l.srv.cache.Get("hour", time.Time{})
		d, _ := l.srv.cache.Get("day", time.Time{})
		return h.list.Version == 31 && d.list.Version == 31
	})
	if n := st.gets.Load() - loaded; n != 2 {
		t.Fatalf("%d bodies loaded for 2 written lists", n)
	}
	if hot := value(l.srv.cache.m.refreshes.WithLabelValues("hot")); hot != 0 {
		t.Fatalf("%v hot refreshes", hot)
	}
}

// TestTopicsStream: one region's topics list pushed as on /v1/trending/stream: the GET
// /v1/topics body first, then each new version; the query's 400s are GET's.
func TestTopicsStream(t *testing.T) {
	l := startLive(t, liveOpts{mod: func(c *Config) { c.Topics = map[string]string{"world": "volume", "eu": "surge"} }})
	c := l.stream("/v1/topics/stream?region=eu&limit=2")
	if ev, want := c.next(), l.get("/v1/topics?region=eu&limit=2"); ev.id != "31" || ev.data != string(want) {
		t.Fatalf("first event %+v, want id 31 and %q", ev, want)
	}
	next := seedLists()[9] // live topics/eu/surge
	next.Version, next.AsOf = 32, testNow.Add(-time.Second)
	l.put(next)
	if ev := c.nextEvent(); ev.id != "32" || ev.data != string(l.get("/v1/topics?region=eu&limit=2")) {
		t.Fatalf("pushed event %+v", ev)
	}
	if h := histogram(t, l.reg, "trending_served_freshness_seconds", "topics/eu/surge"); h.GetSampleCount() != 1 || h.GetSampleSum() != 1 {
		t.Fatalf("freshness of topics/eu/surge: %v", h)
	}
	resp := l.open("/v1/topics/stream?region=mars")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "use one of world, eu") {
		t.Fatalf("unknown region: %d %s", resp.StatusCode, body)
	}
}
