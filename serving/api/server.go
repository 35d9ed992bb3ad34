// Package api is the serving layer's HTTP API and dashboard host: it answers every read from an
// in-memory cache of the serving store (Cache), with each list's JSON encoded once per version
// so a read is a map lookup and a write (lists are precomputed so a read is one lookup:
// docs/requirements.md, "Serving").
//
// Routes (schemas/openapi.yaml describes them; openapi_test.go keeps the two in step):
//
//	GET /v1/trending?window=hour|day|month|all&limit=N   a live list
//	GET /v1/trending?window=hour|day|month&start=T       one calendar window's list
//	GET /v1/trending/stream?window=...                   the same list pushed as it changes (server-sent events)
//	GET /v1/windows?window=hour|day|month&from=T&to=T    status of calendar windows in a range
//	GET /v1/reconciliation                               the newest speed-vs-exact reconciliation per level
//	GET /v1/topics?region=world|R&score=S&limit=N        one region's trending topics (docs/topics.md)
//	GET /v1/topics/stream?region=...                     the same list pushed as it changes
//	GET /healthz, /readyz, /metrics                      liveness, readiness, Prometheus
//	GET /                                                the dashboard (serving/dashboard)
//
// Every client mistake is a 400 with {"error", "detail"} saying what is allowed; client input
// never causes a 5xx. Lists also come as Arrow IPC streams (Accept: ArrowMediaType).
//
// In detail (DESIGN.md's file map has the line): `trending serve`: cached, pre-encoded
// lists, `/v1/trending`, `/v1/windows`, health, metrics, Arrow IPC; `cache.go`: the
// refreshes, and between them the lists whose stamp moved (at once on the store's
// notification, else every `--version-poll`), `trending_served_freshness_seconds`;
// `stream.go`: `/v1/trending/stream` and `/v1/topics/stream`, the lists pushed as
// server-sent events; `region=` on `/v1/trending`, its stream and `/v1/windows` picks a
// region's list (`query.go` `parseGroup`; responses name `window` and `region`);
// `reconciliation.go`: the newest reconciliation per level from the cache, as
// `/v1/reconciliation` and the `trending_reconciliation_*` gauges (the API is the
// long-running process that sees every list, however the batch runs); `topvideos.go`:
// `/v1/top-videos` (the video API's shape over the same lists, `k` up to the configured
// maximum: its video objects encoded once per list version, so k=1000 is one lookup and a
// write, `BenchmarkTopVideos`); `demo/`: the demo lists and the placeholder thumbnails
// `up` serves at `/demo/thumbnail` (never in `trending serve`); `windowsconfig.go`:
// `/v1/windows/config`, the configured windows the dashboard builds its pickers from;
// `fastpath.go`: the cached GETs served on a connection without net/http's per-request
// machinery (the same handler, about two thirds of the CPU), every other connection handed to
// net/http (`--fast-path=false` turns it off); a
// decayed list's items carry `score` beside `views`, the list `half_life_seconds`
// (`render.go`, Arrow's `score` column)
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"trending/serving/store"
)

// Server is the serving API: the cache, the routes and the HTTP server around them.
type Server struct {
	cfg    Config
	cache  *Cache
	log    *slog.Logger
	routes map[string]*route
	static map[string]*staticFile
	cors   map[string]bool // allowed origins; "*" for any

	cacheControl []string // shared header values: never appended to
	// windowsConfig is GET /v1/windows/config's body, fixed at New.
	windowsConfig []byte

	openStreams atomic.Int64 // GET /v1/trending/stream connections, bounded by MaxStreams
	// kafka, when set (ReportKafka), is the ingest's view of the brokers, shown by /readyz.
	kafka atomic.Pointer[KafkaState]
}

// KafkaState is what /readyz shows of the brokers: the ingest's eventlog.Health. Safe for
// concurrent use.
type KafkaState interface {
	Up() bool
	DownSince() time.Time
}

// ReportKafka makes /readyz show k's state (ReadyResponse.Kafka): call it when the server
// mounts an ingest.
func (s *Server) ReportKafka(k KafkaState) { s.kafka.Store(&k) }

// route is one path the server answers. The OpenAPI golden test compares this table with
// schemas/openapi.yaml: its methods, query parameters and statuses.
type route struct {
	path     string
	name     string // the metrics label
	methods  []string
	params   []string
	statuses []int
	h        http.HandlerFunc
	// stream: a 200 lasts as long as the client stays, so its duration is left out of the
	// request latency histogram (the stream metrics count streams).
	stream bool
}

// New builds a server over st. It loads nothing yet: Run (or Cache().Refresh) does.
func New(cfg Config, st store.Store, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := NewCache(cfg, st, log)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, cache: c, log: log, cors: map[string]bool{},
		cacheControl: []string{"public, max-age=" + strconv.Itoa(int(cfg.MaxAge/time.Second))}, windowsConfig: windowsConfigBody(cfg.Windows)}
	for _, o := range cfg.CORSOrigins {
		s.cors[strings.TrimSuffix(o, "/")] = true
	}
	s.static, err = loadStatic()
	if err != nil {
		return nil, err
	}
	s.routes = map[string]*route{}
	for _, r := range s.routeTable() {
		s.routes[r.path] = r
	}
	return s, nil
}

// Route is an endpoint another package mounts on the server with Handle, such as
// POST /v1/events: it gets the same routing, 405 handling, CORS and request metrics as the
// built-in routes. Wrap handlers that change data in RequireToken.
type Route struct {
	Path     string       // exact path, such as /v1/events
	Methods  []string     // such as POST; GET also answers HEAD
	Params   []string     // query parameters, for schemas/openapi.yaml's golden test
	Statuses []int        // statuses it can answer, for the same test
	Handler  http.Handler // called for the listed methods only
}

// Handle mounts r. Call it before serving; a path that is already served is an error.
func (s *Server) Handle(r Route) error {
	if _, dup := s.routes[r.Path]; dup || s.static[r.Path] != nil || !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("mount %q: the path is taken or does not start with /", r.Path)
	}
	methods := slices.Clone(r.Methods)
	if slices.Contains(methods, http.MethodGet) && !slices.Contains(methods, http.MethodHead) {
		methods = append(methods, http.MethodHead)
	}
	s.routes[r.Path] = &route{path: r.Path, name: r.Path, methods: methods, params: r.Params, statuses: r.Statuses, h: r.Handler.ServeHTTP}
	return nil
}

// Cache returns the server's cache.
func (s *Server) Cache() *Cache { return s.cache }

func (s *Server) routeTable() []*route {
	get := []string{http.MethodGet, http.MethodHead}
	rs := []*route{
		{path: "/v1/trending", name: "/v1/trending", methods: get, params: withGroups("window", "limit", "start"),
			statuses: []int{200, 304, 400, 404, 405, 503}, h: s.handleTrending},
		{path: "/v1/trending/stream", name: "/v1/trending/stream", methods: []string{http.MethodGet}, params: withGroups("window", "limit", "start"),
			statuses: []int{200, 400, 404, 405, 503}, h: s.handleStream, stream: true},
		{path: "/v1/top-videos", name: "/v1/top-videos", methods: get, params: []string{"window", "k"},
			statuses: []int{200, 400, 404, 405, 503}, h: s.handleTopVideos},
		{path: "/v1/windows", name: "/v1/windows", methods: get, params: withGroups("window", "from", "to"),
			statuses: []int{200, 304, 400, 405, 503}, h: s.handleWindows},
		{path: "/v1/windows/config", name: "/v1/windows/config", methods: get, statuses: []int{200, 400, 405}, h: s.handleWindowsConfig},
		{path: "/v1/reconciliation", name: "/v1/reconciliation", methods: get, statuses: []int{200, 405, 503}, h: s.handleReconciliation},
		{path: "/v1/topics", name: "/v1/topics", methods: get, params: []string{"region", "score", "limit", "hour"},
			statuses: []int{200, 304, 400, 404, 405, 503}, h: s.handleTopics},
		{path: "/v1/topics/stream", name: "/v1/topics/stream", methods: []string{http.MethodGet}, params: []string{"region", "score", "limit", "hour"},
			statuses: []int{200, 400, 404, 405, 503}, h: s.handleTopicsStream, stream: true},
		{path: "/healthz", name: "/healthz", methods: get, statuses: []int{200, 405}, h: s.handleHealthz},
		{path: "/readyz", name: "/readyz", methods: get, statuses: []int{200, 405, 503}, h: s.handleReadyz},
	}
	if s.cfg.Gatherer != nil {
		rs = append(rs, &route{path: "/metrics", name: "/metrics", methods: get, statuses: []int{200, 405},
			h: promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}).ServeHTTP})
	}
	return rs
}

// Handler returns the HTTP handler: routing, CORS, method checks and request metrics.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rt := s.routes[r.URL.Path]
	name := "static"
	if rt != nil {
		name = rt.name
	}
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	defer func() {
		if rt == nil || !rt.stream || sw.code != http.StatusOK {
			s.cache.m.observer(name, sw.code).Observe(time.Since(start).Seconds())
		}
	}()

	preflight := s.corsHeaders(sw, r)
	if preflight {
		sw.WriteHeader(http.StatusNoContent)
		return
	}
	if rt == nil {
		if f := s.static[r.URL.Path]; f != nil {
			if !isGet(r.Method) {
				methodNotAllowed(sw, []string{http.MethodGet, http.MethodHead})
				return
			}
			f.serve(sw, r)
			return
		}
		name = "unknown"
		writeError(sw, &apiError{http.StatusNotFound, codeNotFound,
			fmt.Sprintf("no such path %q: the API serves /v1/trending, /v1/trending/stream, /v1/windows, /v1/reconciliation, /v1/topics, /v1/topics/stream, /healthz, /readyz and /metrics, and the dashboard at /", trunc(r.URL.Path))})
		return
	}
	if !slices.Contains(rt.methods, r.Method) {
		methodNotAllowed(sw, rt.methods)
		return
	}
	rt.h(sw, r)
}

// corsHeaders adds the CORS headers for an allowed origin and reports whether r is a
// preflight request, which is answered with 204 and no body.
func (s *Server) corsHeaders(w http.ResponseWriter, r *http.Request) (preflight bool) {
	origin := r.Header.Get("Origin")
	if origin == "" || len(s.cors) == 0 {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if !s.cors["*"] && !s.cors[origin] {
		return false
	}
	if s.cors["*"] {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	h.Set("Access-Control-Expose-Headers", "ETag, Content-Length, Content-Encoding")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-None-Match")
		h.Set("Access-Control-Max-Age", "600")
		return true
	}
	return false
}

func isGet(m string) bool { return m == http.MethodGet || m == http.MethodHead }

func methodNotAllowed(w http.ResponseWriter, methods []string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, &apiError{http.StatusMethodNotAllowed, codeMethod, "use " + strings.Join(methods, " or ")})
}

// statusWriter records the status code for the request metrics.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (promhttp flushes).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Run loads the cache, serves HTTP on cfg.Addr until ctx ends, then drains in-flight requests
// for up to ShutdownTimeout (open streams end as the drain begins). The cache keeps
// refreshing in the background meanwhile.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener, which it closes.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.HTTPServer()
	cacheCtx, stopCache := context.WithCancel(context.WithoutCancel(ctx))
	cacheDone := make(chan struct{})
	go func() { defer close(cacheDone); s.cache.Run(cacheCtx) }()
	defer func() { stopCache(); <-cacheDone }()

	// The fast path (fastpath.go) accepts every connection and hands those it does not serve
	// to net/http; with Config.NoFastPath net/http accepts them itself.
	errc := make(chan error, 2)
	var fast *fastServer
	if s.cfg.NoFastPath {
		go func() { errc <- srv.Serve(coalescingListener{ln}) }()
	} else {
		fast = s.fastServer(srv, ln.Addr())
		go func() { errc <- srv.Serve(fast.handoff) }()
		go func() {
			if err := fast.acceptLoop(ln); err != nil {
				errc <- err
			}
		}()
	}
	s.log.Info("serving API listening", "addr", ln.Addr().String(), "fast_path", fast != nil)
	select {
	case err := <-errc:
		ln.Close()
		srv.Close()
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	var err error
	if fast != nil {
		ln.Close() // no new connections; net/http closes its handoff listener
		err = fast.shutdown(sctx)
	}
	err = errors.Join(err, srv.Shutdown(sctx))
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("drain http: %w", err)
	}
	s.log.Info("serving API stopped")
	return nil
}

// HTTPServer returns an http.Server for Handler with the configured timeouts and limits. Its
// Shutdown ends the open streams first: Shutdown waits for every connection to go idle, and a
// stream never does. (A stream also outlives WriteTimeout and ReadTimeout, which it replaces
// with a deadline per write.)
func (s *Server) HTTPServer() *http.Server {
	stop := make(chan struct{})
	srv := &http.Server{
		Addr:              s.cfg.Addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		// A value, not a cancelled context: other requests in flight must finish their
		// drain with a live context.
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), streamStopKey{}, (<-chan struct{})(stop))
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if cc, ok := c.(*coalescingConn); ok {
				return context.WithValue(ctx, connKey{}, cc)
			}
			return ctx
		},
	}
	var once sync.Once
	srv.RegisterOnShutdown(func() { once.Do(func() { close(stop) }) })
	return srv
}

// fastServer builds the fast path in front of srv, with srv's request context.
func (s *Server) fastServer(srv *http.Server, addr net.Addr) *fastServer {
	return &fastServer{s: s, handler: srv.Handler, ctx: srv.BaseContext(nil), handoff: newHandoffListener(addr), conns: map[*fastConn]struct{}{}}
}
