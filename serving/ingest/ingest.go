// Package ingest is the HTTP write path: POST /v1/events accepts one event or a
// batch, validates every event with the same strict decoder the speed layer uses, pre-sums
// per (item, region, second) in memory, and publishes the sums to Kafka keyed by item,
// answering 202 Accepted. Events that carry user_id or account_age_days (trending topics'
// mentions, docs/topics.md) are passed through one by one, as they came: a sum would lose the
// user the topics dedupe counts once, and the account age that weighs the mention.
//
// Durability: accepted events wait in memory for at most FlushEvery (default 1 s) before they
// are written to Kafka; a graceful shutdown (Close) flushes them all, so nothing accepted is
// lost on a clean stop: once Run is asked to stop, the handler refuses new events with 503
// (and Retry-After) before the last flush, so no event answered 202 can miss it. Stop the
// HTTP server (drain it) before Run, so requests in flight are answered 202 and flushed
// rather than refused. A crash can lose up to FlushEvery of accepted events; producers that
// cannot accept that send straight to Kafka.
//
// In detail (DESIGN.md's file map has the line): `POST /v1/events` (`ts` optional: the
// server's clock) and `POST /v1/views` (the requirements' video API: one view at the
// server's clock): strict validation, per-second pre-summing, publish to Kafka (salted
// items' sums keyed by sub-key, `Config.Salter`; mentions never); 503 once its `Run` is
// stopping, so nothing answered 202 misses the last flush
package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/hotset"
	"trending/internal/setting"
	"trending/model/event"
	"trending/model/salt"
)

// Config configures the ingest handler. Start from DefaultConfig: New takes every field as
// it is, and a zero field means zero (see each field).
type Config struct {
	// MaxBodyBytes bounds a request body; larger is 413. Default 4 MiB; must be positive.
	MaxBodyBytes int64
	// MaxEvents bounds the events in one batch; more is 413. Default 10,000; must be
	// positive.
	MaxEvents int
	// FlushEvery is the longest an accepted event waits before it is written. Default 1s;
	// must be positive.
	FlushEvery time.Duration
	// MaxPending is how many pre-summed events may wait; past it a request flushes before it
	// is answered. Default 100,000. Zero flushes after every request: each is written to
	// Kafka before its 202 (while Kafka is up).
	MaxPending int
	// MaxPendingBytes bounds the memory of what waits to be written (while Kafka is away,
	// accepted events pile up here). A request that would pass it is refused with 503 and
	// Retry-After, never answered 202 for what the server cannot keep. Default 64 MiB; must
	// be positive.
	MaxPendingBytes int64
	// MaxFuture refuses at the door, with 400 and reason future_ts, an event dated more than
	// this ahead of the server's clock: the speed layer would send it to the DLQ and the
	// archive to its quarantine by the same rule (event.Ahead), so a 202 would promise what
	// the pipeline throws away. Give it the speed layer's --max-future. Default
	// event.DefaultMaxFuture (10m); 0 turns the check off (as the worker's); negative is refused.
	MaxFuture time.Duration
	// Log receives flush failures; nil discards them.
	Log *slog.Logger
	// Now is the clock that stamps events sent without ts (and every POST /v1/views); nil
	// is time.Now.
	Now func() time.Time
	// Registry, when set, gets the ingest's metrics; nil registers none.
	Registry prometheus.Registerer
	// Salter keys the pre-summed messages of salted (hot) items by their sub-keys
	// (docs/scale-out.md, "Hot keys"), and detects hot items when it has a threshold; nil
	// (the default) salts nothing. Events carrying a user (trending topics' mentions) are
	// never salted: their per-user dedupe needs all of a topic's mentions on one partition.
	Salter *salt.Salter
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: 4 << 20, MaxEvents: 10_000, FlushEvery: time.Second, MaxPending: 100_000, MaxPendingBytes: 64 << 20,
		MaxFuture: event.DefaultMaxFuture}
}

// Validate reports settings that cannot work, by field (setting.ErrConfig).
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, setting.Invalid("MaxBodyBytes", "%d: must be positive (default %d)", c.MaxBodyBytes, d.MaxBodyBytes))
	}
	if c.MaxEvents <= 0 {
		errs = append(errs, setting.Invalid("MaxEvents", "%d: must be positive (default %d)", c.MaxEvents, d.MaxEvents))
	}
	if c.FlushEvery <= 0 {
		errs = append(errs, setting.Invalid("FlushEvery", "%s: must be positive (default %s)", c.FlushEvery, d.FlushEvery))
	}
	if c.MaxPending < 0 {
		errs = append(errs, setting.Invalid("MaxPending", "%d: must not be negative (0 flushes after every request; default %d)", c.MaxPending, d.MaxPending))
	}
	if c.MaxPendingBytes <= 0 {
		errs = append(errs, setting.Invalid("MaxPendingBytes", "%d: must be positive (default %d)", c.MaxPendingBytes, d.MaxPendingBytes))
	}
	if c.MaxFuture < 0 {
		errs = append(errs, setting.Invalid("MaxFuture", "%s: must not be negative (0: no limit; default %s)", c.MaxFuture, d.MaxFuture))
	}
	return errors.Join(errs...)
}

// Writer is what the ingest publishes through (a *kafka.Writer for topic views).
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

type sumKey struct {
	item, region string
	second       int64
}

// Ingest is the POST /v1/events handler and its flusher. Safe for concurrent use.
type Ingest struct {
	cfg Config
	w   Writer

	mu      sync.Mutex
	closed  bool // Run is flushing for the last time: refuse new events
	pending map[sumKey]uint64
	// single holds the events that must not be summed, in arrival order.
	single []event.Event
	// pendingBytes estimates the memory of pending and single (pendingCost each).
	pendingBytes int64
	flushMu      sync.Mutex // one flush at a time, in order

	accepted, published, rejected prometheus.Counter
	failures                      prometheus.Counter
	full                          prometheus.Counter

	// kafka is the ingest's view of the brokers: an outage is logged once, shown as
	// trending_kafka_up{role="ingest"} and in /readyz (Kafka); the flusher retries while
	// the handlers keep accepting up to MaxPendingBytes.
	kafka *eventlog.Health
}

// Kafka returns the ingest's view of the brokers (for /readyz).
func (in *Ingest) Kafka() *eventlog.Health { return in.kafka }

// New builds an Ingest writing through w; cfg must Validate.
func New(cfg Config, w Writer) (*Ingest, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	in := &Ingest{cfg: cfg, w: w, pending: map[sumKey]uint64{},
		accepted:  prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_ingest_events_accepted_total", Help: "Events accepted by POST /v1/events."}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_ingest_messages_published_total", Help: "Pre-summed events written to Kafka."}),
		rejected:  prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_ingest_requests_rejected_total", Help: "Requests refused with 4xx."}),
		failures:  prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_ingest_flush_failures_total", Help: "Flushes to Kafka that failed (retried)."}),
		full: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_ingest_refused_full_total",
			Help: "Requests refused with 503 because the events waiting for Kafka had reached MaxPendingBytes (64 MiB: Kafka slow or away)."}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{in.accepted, in.published, in.rejected, in.failures, in.full} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("ingest metrics: %w", err)
			}
		}
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "ingest", cfg.Log, cfg.Registry
	h, err := eventlog.NewHealth(hc)
	if err != nil {
		return nil, fmt.Errorf("ingest: %w", err)
	}
	in.kafka = h
	return in, nil
}

type apiError struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
	// Reason is an invalid event's stable reason code (bad_count, future_ts, ...: the codes
	// of the DLQ's reason header), absent on other errors.
	Reason string `json:"reason,omitempty"`
}

// rejection is why a request's events were refused: the status, the detail naming the bad
// event and field, and an invalid event's reason code.
type rejection struct {
	status int
	detail string
	reason event.Reason
}

func badRequest(detail string) *rejection {
	return &rejection{status: http.StatusBadRequest, detail: detail}
}

// invalid is a 400 for event i's decode error (i < 0: the body's one event).
func invalid(i int, err error) *rejection {
	detail := err.Error()
	if i >= 0 {
		detail = fmt.Sprintf("events[%d].%s", i, detail)
	}
	return &rejection{status: http.StatusBadRequest, detail: detail, reason: event.ReasonOf(err)}
}

func (in *Ingest) fail(w http.ResponseWriter, code int, msg, detail string) {
	in.failWith(w, code, msg, detail, "")
}

func (in *Ingest) failWith(w http.ResponseWriter, code int, msg, detail string, reason event.Reason) {
	in.rejected.Inc()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(apiError{Error: msg, Detail: detail, Reason: string(reason)})
}

// ServeHTTP handles POST /v1/events. The body is one event object, a JSON array of them, or
// {"events": [...]}. A batch is all or nothing: one invalid event refuses the whole request
// with 400 naming it (events[3].count: ...), so a client can fix and resend without
// duplicating the rest.
func (in *Ingest) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.serve(w, r, "POST one event or a batch of events as JSON", in.parse)
}

// Views is POST /v1/views, the requirements' video API: {"video_id": "...", "position_s": 31}
// is one view of video_id at the server's clock (the viewer and the time are the server's,
// not the client's). position_s, the playback position, is checked (a number of seconds, at
// least 0) and not kept: each POST is one view. Answered like /v1/events: 202, or 400
// naming the bad field, 413, 503.
func (in *Ingest) Views() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.serve(w, r, `POST {"video_id": "...", "position_s": 31}`, in.parseView)
	})
}

// parseView reads one view: {"video_id", "position_s"}, nothing else.
func (in *Ingest) parseView(body []byte) ([]event.Event, *rejection) {
	var v struct {
		VideoID   *string  `json:"video_id"`
		PositionS *float64 `json:"position_s"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("body: want {\"video_id\": \"...\", \"position_s\": 31}: " + err.Error())
	}
	if dec.More() {
		return nil, badRequest("body: one view object per request")
	}
	if v.VideoID == nil {
		return nil, badRequest("video_id: is required")
	}
	if v.PositionS != nil && *v.PositionS < 0 {
		return nil, badRequest(fmt.Sprintf("position_s: %g: want a number of seconds, at least 0", *v.PositionS))
	}
	// The event's own rules (item_id length and characters) apply to video_id.
	id, _ := json.Marshal(*v.VideoID)
	ev, err := event.DecodeAt(append(append([]byte(`{"item_id":`), id...), `,"count":1}`...), in.now())
	if err != nil {
		r := invalid(-1, err)
		r.detail = strings.Replace(r.detail, event.FieldItemID, "video_id", 1)
		return nil, r
	}
	return []event.Event{ev}, nil
}

// now is the server's clock, to the millisecond.
func (in *Ingest) now() time.Time {
	if in.cfg.Now != nil {
		return in.cfg.Now().UTC().Truncate(time.Millisecond)
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

// serve reads a POST body, parses it with parse and takes its events, or answers why not.
func (in *Ingest) serve(w http.ResponseWriter, r *http.Request, usage string, parse func([]byte) ([]event.Event, *rejection)) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		in.fail(w, http.StatusMethodNotAllowed, "method not allowed", usage)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, in.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			in.fail(w, http.StatusRequestEntityTooLarge, "body too large", fmt.Sprintf("at most %d bytes per request; split the batch", in.cfg.MaxBodyBytes))
			return
		}
		in.fail(w, http.StatusBadRequest, "unreadable body", err.Error())
		return
	}
	evs, rej := parse(body)
	if rej == nil {
		rej = in.future(evs)
	}
	if rej != nil {
		msg := "invalid event"
		if rej.status == http.StatusRequestEntityTooLarge {
			msg = "batch too large"
		}
		in.failWith(w, rej.status, msg, rej.detail, rej.reason)
		return
	}
	switch in.add(evs) {
	case addClosed:
		w.Header().Set("Retry-After", "1")
		in.fail(w, http.StatusServiceUnavailable, "shutting down", "this server is stopping and accepts no more events; send them to another one or retry")
		return
	case addFull:
		in.full.Inc()
		w.Header().Set("Retry-After", "5")
		in.fail(w, http.StatusServiceUnavailable, "overloaded",
			fmt.Sprintf("%d bytes of events are waiting for Kafka (at most %d); none of this request was accepted: retry later", in.pendingSize(), in.cfg.MaxPendingBytes))
		return
	}
	if in.size() >= in.cfg.MaxPending {
		if err := in.Flush(r.Context()); err != nil {
			in.cfg.Log.Warn("ingest flush under pressure failed", "err", err)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"accepted":%d}`+"\n", len(evs))
}

func (in *Ingest) parse(body []byte) ([]event.Event, *rejection) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, badRequest("empty body: send one event object or a JSON array of events")
	}
	var raws []json.RawMessage
	switch trimmed[0] {
	case '[':
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, badRequest("body: not a JSON array of events: " + err.Error())
		}
	case '{':
		var wrapper struct {
			Events []json.RawMessage `json:"events"`
		}
		if bytes.Contains(trimmed[:min(len(trimmed), 32)], []byte(`"events"`)) && json.Unmarshal(trimmed, &wrapper) == nil && wrapper.Events != nil {
			raws = wrapper.Events
		} else {
			ev, err := event.DecodeAt(trimmed, in.now())
			if err != nil {
				return nil, invalid(-1, err)
			}
			return []event.Event{ev}, nil
		}
	default:
		return nil, badRequest("body: want one event object, a JSON array of events, or {\"events\": [...]}")
	}
	if len(raws) == 0 {
		return nil, badRequest("empty batch: send at least one event")
	}
	if len(raws) > in.cfg.MaxEvents {
		return nil, &rejection{status: http.StatusRequestEntityTooLarge, detail: fmt.Sprintf("%d events: at most %d per request; split the batch", len(raws), in.cfg.MaxEvents)}
	}
	evs := make([]event.Event, len(raws))
	now := in.now() // one clock reading for the events of a request that leave out ts
	for i, raw := range raws {
		ev, err := event.DecodeAt(raw, now)
		if err != nil {
			return nil, invalid(i, err)
		}
		evs[i] = ev
	}
	return evs, nil
}

// future refuses the request when one of its events is dated over MaxFuture ahead of the
// server's clock, by the rule the speed layer and the archive apply (event.Ahead), so that
// nothing answered 202 is then thrown away.
func (in *Ingest) future(evs []event.Event) *rejection {
	if in.cfg.MaxFuture <= 0 {
		return nil
	}
	now := in.now()
	for i, ev := range evs {
		if ahead := event.Ahead(ev.TS, time.Time{}, now); ahead > in.cfg.MaxFuture {
			where := event.FieldTS
			if len(evs) > 1 {
				where = fmt.Sprintf("events[%d].%s", i, event.FieldTS)
			}
			return &rejection{status: http.StatusBadRequest, reason: event.ReasonFutureTS,
				detail: fmt.Sprintf("%s: event time %s is %s ahead of the server's clock, over the %s allowed (--max-future): the pipeline would not count it",
					where, ev.TS.UTC().Format(time.RFC3339Nano), ahead.Round(time.Millisecond), in.cfg.MaxFuture)}
		}
	}
	return nil
}

// addResult is what add did with a request's events.
type addResult int

const (
	added     addResult = iota
	addClosed           // Run is stopping
	addFull             // over MaxPendingBytes: nothing was added
)

// pendingCost estimates the memory one waiting event takes: its strings and a map entry or
// slice element with its bookkeeping.
func pendingCost(ev event.Event) int64 {
	return int64(len(ev.ItemID)+len(ev.Region)+len(ev.UserID)) + 96
}

// add queues all of evs, or none: when the ingest is closed, or when the new ones would
// take the waiting events over MaxPendingBytes (an event that adds to a sum already
// waiting costs nothing).
func (in *Ingest) add(evs []event.Event) addResult {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return addClosed
	}
	var cost int64
	for _, ev := range evs {
		if ev.UserID != "" || ev.HasAccountAge {
			cost += pendingCost(ev)
		} else if _, ok := in.pending[sumKey{ev.ItemID, ev.Region, ev.TS.Unix()}]; !ok {
			cost += pendingCost(ev) // a batch summing into a new key twice is counted twice: an overestimate
		}
	}
	if in.pendingBytes+cost > in.cfg.MaxPendingBytes {
		return addFull
	}
	for _, ev := range evs {
		if ev.UserID != "" || ev.HasAccountAge {
			in.single = append(in.single, ev)
			continue
		}
		in.pending[sumKey{ev.ItemID, ev.Region, ev.TS.Unix()}] += uint64(ev.Count)
	}
	in.pendingBytes += cost
	in.accepted.Add(float64(len(evs)))
	return added
}

// pendingSize is the estimated memory of the events waiting to be written.
func (in *Ingest) pendingSize() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.pendingBytes
}

func (in *Ingest) size() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.pending) + len(in.single)
}

// Flush writes every pending sum to Kafka. On failure the sums are put back and the error
// returned; the next flush retries them.
func (in *Ingest) Flush(ctx context.Context) error {
	in.flushMu.Lock()
	defer in.flushMu.Unlock()
	in.mu.Lock()
	batch, single, bytes := in.pending, in.single, in.pendingBytes
	in.pending, in.single, in.pendingBytes = make(map[sumKey]uint64, len(batch)), nil, 0
	in.mu.Unlock()
	if len(batch) == 0 && len(single) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, 0, len(batch)+len(single))
	for _, ev := range single {
		msgs = append(msgs, kafka.Message{Key: []byte(ev.ItemID), Value: ev.AppendJSON(nil)})
	}
	for k, n := range batch {
		for n > 0 {
			c := min(n, event.MaxCount)
			n -= c
			ev := event.Event{ItemID: k.item, Region: k.region, Count: uint32(c), TS: time.Unix(k.second, 0).UTC()}
			msgs = append(msgs, kafka.Message{Key: []byte(k.item), Value: ev.AppendJSON(nil)})
		}
	}
	hotset.Key(in.cfg.Salter, msgs[len(single):], time.Now())
	if err := in.w.WriteMessages(ctx, msgs...); err != nil {
		in.failures.Inc()
		in.mu.Lock()
		for k, n := range batch {
			if _, ok := in.pending[k]; ok {
				bytes -= int64(len(k.item)+len(k.region)) + 96 // merged into a sum that arrived meanwhile
			}
			in.pending[k] += n
		}
		in.single = append(single, in.single...)
		in.pendingBytes += max(bytes, 0)
		in.mu.Unlock()
		return fmt.Errorf("ingest: write %d events to Kafka: %w", len(msgs), err)
	}
	in.published.Add(float64(len(msgs)))
	in.kafka.OK()
	return nil
}

// Run flushes every FlushEvery until ctx ends, then flushes what remains (with its own
// 30-second budget), so nothing accepted is lost on a graceful stop; from then on the
// handler answers 503.
func (in *Ingest) Run(ctx context.Context) error {
	t := time.NewTicker(in.cfg.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := in.Flush(ctx); err != nil && ctx.Err() == nil {
				// kafka-go's writer has retried it already (about 10 s); the next tick tries
				// again, the sums kept. An outage is logged once.
				if ferr := in.kafka.Failed("write to Kafka", err); ferr != nil {
					return fmt.Errorf("ingest: %w", ferr)
				}
			}
		case <-ctx.Done():
			in.mu.Lock()
			in.closed = true
			in.mu.Unlock()
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for attempt := 0; ; attempt++ {
				err := in.Flush(fctx)
				if err == nil {
					return nil
				}
				if fctx.Err() != nil {
					return fmt.Errorf("ingest: events lost at shutdown: %w", err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}
