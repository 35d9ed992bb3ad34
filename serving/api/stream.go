package api

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// GET /v1/trending/stream (and /v1/topics/stream) pushes a list to dashboards as server-sent
// events: the current version at once, then every new one as the cache swaps it in, each
// event's id the list's version and its data the very bytes GET /v1/trending (/v1/topics)
// would answer at that moment (the cache's pre-encoded body, so a stream costs no encoding
// either).
//
// A stream holds no queue. Its goroutine (the handler's) waits on the superseded channel of
// the entry it sent last and, when woken, sends whatever the cache holds then: a reader
// that is still writing an older version when newer ones arrive gets only the newest next, as
// if it had a buffer of one pending version that each new one replaces. A write (event or
// heartbeat) that the reader does not take within StreamWriteTimeout ends the stream, so a
// slow reader costs a goroutine and its socket buffers, never memory that grows.

var (
	hdrEventStream = []string{"text/event-stream"}
	hdrNoBuffering = []string{"no"}
)

// Error code of a stream refused because MaxStreams are open.
const codeTooManyStreams = "too_many_streams"

// streamStopKey is the request-context key of the channel that closes when the http.Server
// begins its shutdown (HTTPServer): a stream never goes idle, so Shutdown would wait for it
// until its deadline.
type streamStopKey struct{}

// connKey is the request-context key of the connection (HTTPServer's ConnContext), so a
// stream can turn off the write coalescing of coalescingConn.
type connKey struct{}

// handleStream serves GET /v1/trending/stream: the query of GET /v1/trending (window, limit,
// start, region), the list pushed as it changes.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Now()
	q, aerr := parseTrending(r.URL.RawQuery, &s.cfg, now)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.stream(w, r, q.name, q.start, q.limit, func() *apiError { return s.missing(q, now) })
}

// handleTopicsStream serves GET /v1/topics/stream: the query of GET /v1/topics (region,
// score, limit, hour), one region's topics list pushed as it changes.
func (s *Server) handleTopicsStream(w http.ResponseWriter, r *http.Request) {
	q, aerr := parseTopics(r.URL.RawQuery, &s.cfg, s.cfg.Now())
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	s.stream(w, r, q.window, q.hour, q.limit, func() *apiError { return topicsMissing(q) })
}

// stream pushes the list named window (model.Key.Name) at start, limit items, until the
// client leaves or the server shuts down. missing explains a calendar list the cache does not
// hold; a live list that does not exist yet is streamed once it does.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, window string, start time.Time, limit int, missing func() *apiError) {
	if !s.cache.Loaded() {
		writeError(w, notReady(s.cache.Ready()))
		return
	}
	if _, ok := s.cache.Get(window, start); !ok && !start.IsZero() {
		writeError(w, missing())
		return
	}
	if n := s.openStreams.Add(1); n > int64(s.cfg.MaxStreams) {
		s.openStreams.Add(-1)
		s.cache.m.streamRefused.Inc()
		writeError(w, &apiError{http.StatusServiceUnavailable, codeTooManyStreams,
			fmt.Sprintf("%d streams are open, the most this server takes: retry later, or poll GET %s?%s",
				s.cfg.MaxStreams, strings.TrimSuffix(r.URL.Path, "/stream"), r.URL.RawQuery)})
		return
	}
	s.cache.m.streams.Inc()
	s.cache.m.streamsOpen.Inc()
	defer func() {
		s.openStreams.Add(-1)
		s.cache.m.streamsOpen.Dec()
	}()

	// Resume: a client that reconnects with the id of the version it has (or a newer one)
	// gets nothing until the next version.
	resume := int64(-1)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if v, err := strconv.ParseInt(id, 10, 64); err == nil {
			resume = v
		}
	}
	var stop <-chan struct{}
	if ch, ok := r.Context().Value(streamStopKey{}).(<-chan struct{}); ok {
		stop = ch
	}
	if c, ok := r.Context().Value(connKey{}).(*coalescingConn); ok {
		c.writeThrough()
	}
	// The server's WriteTimeout, set when the request was read, would end the stream: every
	// write sets its own deadline instead. (The ReadTimeout does not: net/http clears the
	// read deadline for its background read while a handler runs.)
	rc := http.NewResponseController(w)

	h := w.Header()
	h["Content-Type"] = hdrEventStream
	h["Cache-Control"] = hdrNoStore
	h["X-Content-Type-Options"] = hdrNoSniff
	h["X-Accel-Buffering"] = hdrNoBuffering // nginx: pass events through unbuffered
	w.WriteHeader(http.StatusOK)
	sw := streamWriter{w: w, rc: rc, timeout: s.cfg.StreamWriteTimeout}
	if err := sw.flush(); err != nil {
		s.streamFailed(err)
		return
	}

	heartbeat := time.NewTicker(s.cfg.StreamHeartbeat)
	defer heartbeat.Stop()
	key := keyOf(window, start)
	var sent *entry
	first := true
	for {
		snap := s.cache.snap.Load()
		e := snap.lists[key]
		if e != nil && e != sent {
			if first && resume >= e.list.Version {
				sent = e // the client has it
			} else {
				if err := sw.event(e.list.Version, e.json(e.served(limit), s.cfg.Now()).raw); err != nil {
					s.streamFailed(err)
					return
				}
				s.cache.m.streamEvents.Inc()
				sent = e
			}
		}
		first = false
		wait := snap.replaced // the list does not exist (yet, or any more)
		if e != nil {
			wait = e.superseded
		}
		select {
		case <-wait:
		case <-heartbeat.C:
			if err := sw.comment(); err != nil {
				s.streamFailed(err)
				return
			}
		case <-stop:
			sw.end()
			return
		case <-r.Context().Done():
			return
		}
	}
}

// streamFailed counts a stream whose reader did not take a write in time; any other error is
// a reader that went away.
func (s *Server) streamFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.cache.m.streamDropped.Inc()
		s.log.Debug("stream reader too slow; disconnected", "err", err)
	}
}

// streamWriter writes server-sent events, each under its own write deadline and flushed.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     [32]byte
}

var (
	sseID      = []byte("id: ")
	sseData    = []byte("\ndata: ")
	sseEnd     = []byte("\n\n")
	sseComment = []byte(": heartbeat\n\n")
)

// event writes one list version. body is one line: encoding/json escapes every newline.
func (sw *streamWriter) event(version int64, body []byte) error {
	sw.deadline()
	b := strconv.AppendInt(append(sw.buf[:0], sseID...), version, 10)
	b = append(b, sseData...)
	if _, err := sw.w.Write(b); err != nil {
		return err
	}
	if _, err := sw.w.Write(body); err != nil {
		return err
	}
	if _, err := sw.w.Write(sseEnd); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// comment writes the heartbeat, a comment line EventSource ignores.
func (sw *streamWriter) comment() error {
	sw.deadline()
	if _, err := sw.w.Write(sseComment); err != nil {
		return err
	}
	return sw.rc.Flush()
}

func (sw *streamWriter) flush() error {
	sw.deadline()
	return sw.rc.Flush()
}

// end gives the last chunk net/http writes after the handler returns a deadline of its own.
func (sw *streamWriter) end() { sw.deadline() }

func (sw *streamWriter) deadline() {
	sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
}
