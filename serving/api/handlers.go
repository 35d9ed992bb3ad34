package api

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"trending/model"
)

// Header values shared by every response; net/http only reads them.
var (
	hdrJSON        = []string{"application/json"}
	hdrArrow       = []string{ArrowMediaType}
	hdrGzip        = []string{"gzip"}
	hdrVary        = []string{"Accept, Accept-Encoding"}
	hdrNoStore     = []string{"no-store"}
	hdrNoSniff     = []string{"nosniff"}
	hdrRetryAfter5 = []string{"5"}
)

// handleTrending serves one list: live, or one calendar window with start.
func (s *Server) handleTrending(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	q, aerr := parseTrending(r.URL.RawQuery, &s.cfg, now)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	e, ok := s.cache.Get(q.name, q.start)
	if !ok {
		writeError(w, s.missing(q, now))
		return
	}
	s.writeList(w, r, e, q.limit, now)
}

// handleTopics serves one region's trending-topics list (docs/topics.md).
func (s *Server) handleTopics(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	q, aerr := parseTopics(r.URL.RawQuery, &s.cfg, now)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	e, ok := s.cache.Get(q.window, q.hour)
	if !ok {
		if !s.cache.Loaded() {
			writeError(w, notReady(s.cache.Ready()))
			return
		}
		writeError(w, topicsMissing(q))
		return
	}
	s.writeList(w, r, e, q.limit, now)
}

// topicsMissing explains a topics list the loaded cache does not hold.
func topicsMissing(q topicsQuery) *apiError {
	detail := fmt.Sprintf("no %s topics list for %s yet: the speed layer has not published one", q.score, q.region)
	if !q.hour.IsZero() {
		detail = fmt.Sprintf("no exact %s topics list for %s in the hour from %s: the batch recomputes closed hours (or the hour is older than the API keeps)",
			q.score, q.region, q.hour.Format(time.RFC3339))
	}
	return &apiError{http.StatusNotFound, codeNotFound, detail}
}

// writeList writes the first limit items of a cached list: JSON (gzipped when accepted) or
// Arrow, with the ETag and caching headers.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, e *entry, limit int, now time.Time) {
	n := e.served(limit)
	arrow := strings.Contains(r.Header.Get("Accept"), ArrowMediaType)
	gz := !arrow && acceptsGzip(r.Header.Get("Accept-Encoding"))
	variant := ""
	switch {
	case arrow:
		variant = "-arrow"
	case gz:
		variant = "-gz"
	}
	etag := e.etag(n, variant)
	h := w.Header()
	h["Cache-Control"] = s.cacheControl
	h["Vary"] = hdrVary
	h["Etag"] = []string{etag}
	h["X-Content-Type-Options"] = hdrNoSniff
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var body []byte
	switch {
	case arrow:
		h["Content-Type"] = hdrArrow
		body = e.arrowBody(n)
	case gz:
		h["Content-Type"] = hdrJSON
		h["Content-Encoding"] = hdrGzip
		body = e.json(n, now).gzipped()
	default:
		h["Content-Type"] = hdrJSON
		body = e.json(n, now).raw
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// missing explains a list the cache does not hold: not loaded yet (503) or not computed (404).
func (s *Server) missing(q trendingQuery, now time.Time) *apiError {
	if !s.cache.Loaded() {
		return notReady(s.cache.Ready())
	}
	of := q.of(&s.cfg)
	if q.start.IsZero() {
		detail := fmt.Sprintf("no live %s list%s yet: the speed layer has not published one", q.window, of)
		if q.group != "" {
			detail += fmt.Sprintf(" (it does once a partition counts an event of %s %s)", s.cfg.Windows.Groups.By, q.group)
		}
		return &apiError{http.StatusNotFound, codeNotFound, detail}
	}
	if oldest := s.cache.oldest(model.Period(q.window), now); q.start.Before(oldest) {
		return &apiError{http.StatusNotFound, codeNotFound,
			fmt.Sprintf("the %s window%s starting %s is older than the API keeps: the last %d %s windows, from %s on",
				q.window, of, q.start.Format(time.RFC3339), s.cfg.retain(model.Period(q.window)), q.window, oldest.Format(time.RFC3339))}
	}
	query := "window=" + q.window
	if q.group != "" {
		query += "&" + s.cfg.Windows.Groups.By + "=" + url.QueryEscape(q.group)
	}
	return &apiError{http.StatusNotFound, codeNotFound,
		fmt.Sprintf("nobody computed the %s window%s starting %s: see GET /v1/windows?%s for the windows that exist",
			q.window, of, q.start.Format(time.RFC3339), query)}
}

func notReady(err error) *apiError {
	if err == nil {
		err = ErrNotLoaded
	}
	return &apiError{http.StatusServiceUnavailable, codeNotReady, err.Error()}
}

// handleWindows serves the status of calendar windows in a bounded range, built from the cache
// per request (at most a few hundred small entries; dashboards poll it every few seconds).
func (s *Server) handleWindows(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	q, aerr := parseWindows(r.URL.RawQuery, &s.cfg, now)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if !s.cache.Loaded() {
		writeError(w, notReady(s.cache.Ready()))
		return
	}
	name := model.Key{Window: string(q.window), Group: q.group}.Name()
	resp := WindowsResponse{Window: string(q.window), Region: q.group, From: q.from, To: q.to, Now: now.UTC().Truncate(time.Second),
		Windows: make([]WindowStatus, 0, q.count),
		Counts:  map[string]int{StatusLive: 0, StatusProvisional: 0, StatusExact: 0, StatusMissing: 0}}
	for t := q.from; t.Before(q.to); t = q.window.Next(t) {
		ws := WindowStatus{Start: t, End: q.window.Next(t), Status: StatusMissing}
		ws.Open = !now.Before(ws.Start) && now.Before(ws.End)
		if e, ok := s.cache.Get(name, t); ok {
			l := &e.list
			ws.Status = string(l.Status)
			asOf, computed := l.AsOf, l.ComputedAt
			ws.Source, ws.Version, ws.AsOf, ws.ComputedAt = l.Source, l.Version, &asOf, &computed
			ws.Items, ws.Incomplete, ws.DroppedLate, ws.Reconciliation = len(l.Items), l.Incomplete, l.DroppedLate, l.Reconciliation
		}
		resp.Counts[ws.Status]++
		resp.Windows = append(resp.Windows, ws)
	}
	// now changes every second; the ETag covers what a client acts on.
	tagBody, err := json.Marshal(struct {
		W []WindowStatus
		F time.Time
	}{resp.Windows, resp.From})
	if err != nil {
		panic("BUG: encode windows: " + err.Error())
	}
	hs := fnv.New64a()
	hs.Write(tagBody)
	etag := `W/"w` + strconv.FormatUint(hs.Sum64(), 36) + `"`
	body, err := json.Marshal(resp)
	if err != nil {
		panic("BUG: encode windows: " + err.Error())
	}
	h := w.Header()
	h["Cache-Control"] = s.cacheControl
	h["Vary"] = hdrVary
	h["Etag"] = []string{etag}
	h["X-Content-Type-Options"] = hdrNoSniff
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, http.StatusOK, body)
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeBody(w, r, http.StatusOK, []byte(`{"status":"ok"}`))
}

// handleReadyz is 200 while the cache is loaded and either the store is reachable or the
// newest load is younger than ServeStaleFor, with the store's state in the body (and, with
// an ingest, Kafka's: ReadyResponse.Kafka); else 503 with the reason. Lists keep being
// served either way.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.cache.Ready(); err != nil {
		writeError(w, notReady(err))
		return
	}
	h := s.cache.StoreHealth()
	resp := ReadyResponse{Status: "ready", LastRefresh: h.LastOK.UTC(), Lists: len(s.cache.snap.Load().lists), Store: StoreOK}
	if !h.Up {
		resp.Store, resp.StoreFailingSince = StoreUnreachable, h.FailingSince.UTC()
		if h.Err != nil {
			resp.StoreError = h.Err.Error()
		}
	}
	if k := s.kafka.Load(); k != nil {
		resp.Kafka = KafkaOK
		if !(*k).Up() {
			resp.Kafka, resp.KafkaDownSince = KafkaUnreachable, (*k).DownSince().UTC()
		}
	}
	body, err := json.Marshal(resp)
	if err != nil {
		panic("BUG: encode readiness: " + err.Error())
	}
	writeBody(w, r, http.StatusOK, body)
}

// writeError is the one place an error becomes an HTTP response: status, and a JSON body
// {"error": code, "detail": what is allowed}.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Del("Etag")
	h.Del("Content-Encoding")
	h["Cache-Control"] = hdrNoStore
	h["X-Content-Type-Options"] = hdrNoSniff
	if e.status == http.StatusServiceUnavailable {
		h["Retry-After"] = hdrRetryAfter5
	}
	body, err := json.Marshal(ErrorResponse{Error: e.code, Detail: e.detail})
	if err != nil {
		panic("BUG: encode error: " + err.Error())
	}
	h["Content-Type"] = hdrJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(e.status)
	w.Write(body)
}

// writeBody writes a JSON body, gzipped when the client accepts it and it is worth it.
func writeBody(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	if h.Get("Cache-Control") == "" {
		h["Cache-Control"] = hdrNoStore
	}
	if len(body) > 1024 && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body = gzipBytes(body)
		h["Content-Encoding"] = hdrGzip
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip: "gzip" or "*" without
// q=0.
func acceptsGzip(ae string) bool {
	if ae == "" {
		return false
	}
	for part := range strings.SplitSeq(ae, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// etagMatch is If-None-Match's weak comparison: "*" or any listed tag equal to etag once W/
// prefixes are dropped.
func etagMatch(inm, etag string) bool {
	if inm == "" {
		return false
	}
	etag = strings.TrimPrefix(etag, "W/")
	for part := range strings.SplitSeq(inm, ",") {
		part = strings.TrimSpace(part)
		if part == "*" || strings.TrimPrefix(part, "W/") == etag {
			return true
		}
	}
	return false
}
