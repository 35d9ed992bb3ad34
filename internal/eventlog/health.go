package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/setting"
)

// HealthConfig configures a Health. Start from DefaultHealthConfig and set Role.
type HealthConfig struct {
	// Role names the role in logs and in the metric's role label ("speed", "archive",
	// "merge", "ingest", "loadgen"). Required.
	Role string
	// MissingTopicAfter is how long a broker that answers may keep saying a topic or
	// partition is unknown before Failed gives up with ErrUnrecoverable (the topic was
	// deleted); default 2 minutes, positive. A restarting broker says so for seconds, until
	// it has loaded its logs.
	MissingTopicAfter time.Duration
	// Log receives one line per change of state; nil discards.
	Log *slog.Logger
	// Registerer takes the gauge trending_kafka_up{role}; nil registers nothing. Several
	// roles of one process (trending up) share the gauge, one label each.
	Registerer prometheus.Registerer
}

// DefaultHealthConfig returns the defaults, without Role.
func DefaultHealthConfig() HealthConfig {
	return HealthConfig{MissingTopicAfter: 2 * time.Minute}
}

// Validate reports every setting that cannot work, by field.
func (c HealthConfig) Validate() error {
	var errs []error
	if c.Role == "" {
		errs = append(errs, setting.Invalid("Role", "must not be empty"))
	}
	if c.MissingTopicAfter <= 0 {
		errs = append(errs, setting.Invalid("MissingTopicAfter", "%s: must be positive (default %s)", c.MissingTopicAfter, DefaultHealthConfig().MissingTopicAfter))
	}
	return errors.Join(errs...)
}

// Health is one role's view of the brokers: up until a Kafka call fails with a retryable
// error (Retryable), down until one succeeds. Each change is logged once (a warning when the
// brokers go away, saying what the role does meanwhile; an info line with the outage's
// length when they return), not once per failed call, and exported as the gauge
// trending_kafka_up{role} (1 up, 0 down). A role keeps its state and retries with a bounded
// backoff while down; Failed says when to give up instead. Safe for concurrent use: the
// partitions of a speed worker share one.
type Health struct {
	cfg   HealthConfig
	log   *slog.Logger
	gauge prometheus.Gauge

	mu        sync.Mutex
	down      bool
	since     time.Time // when the current outage began
	failures  int       // failed calls in the current outage
	missingAt time.Time // the first of the current run of unknown-topic answers (zero: none)
	now       func() time.Time
}

// NewHealth returns a Health that starts up (no call has failed yet).
func NewHealth(cfg HealthConfig) (*Health, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Health{cfg: cfg, log: log, gauge: upGauge(cfg.Registerer).WithLabelValues(cfg.Role), now: time.Now}
	h.gauge.Set(1)
	return h, nil
}

// upGauge returns the process's trending_kafka_up gauge from reg, registering it the first
// time (nil reg: an unregistered one).
func upGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "trending_kafka_up",
		Help: "1 while the role's last Kafka call succeeded, 0 while it waits for the brokers to answer again (it retries and keeps its state).",
	}, []string{"role"})
	if reg == nil {
		return g
	}
	if err := reg.Register(g); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.GaugeVec); ok {
				return existing
			}
		}
		panic("BUG: registering trending_kafka_up: " + err.Error())
	}
	return g
}

// OK records a Kafka call that succeeded: the end of an outage, if one was on.
func (h *Health) OK() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.missingAt = time.Time{}
	if !h.down {
		return
	}
	h.down = false
	h.gauge.Set(1)
	h.log.Info("Kafka reachable again; resuming from the offsets held", "role", h.cfg.Role,
		"down_for", h.now().Sub(h.since).Round(time.Millisecond), "failed_calls", h.failures)
}

// Failed records a Kafka call that failed with err (what names the call, for the log) and
// returns nil when the caller should retry it after a pause, or an error wrapping
// ErrUnrecoverable when it should stop: err is not Retryable, or the broker has said the
// topic or partition is unknown for MissingTopicAfter without a call succeeding between.
func (h *Health) Failed(what string, err error) error {
	if err == nil {
		return nil
	}
	if !Retryable(err) {
		h.setDown(what, err)
		return fmt.Errorf("%w: %s: %v: fix the credentials, ACLs or certificates (or the topic) and start again", ErrUnrecoverable, what, err)
	}
	h.mu.Lock()
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		if h.missingAt.IsZero() {
			h.missingAt = h.now()
		} else if d := h.now().Sub(h.missingAt); d >= h.cfg.MissingTopicAfter {
			h.mu.Unlock()
			h.setDown(what, err)
			return fmt.Errorf("%w: %s: the brokers have said for %s that the topic or partition does not exist (deleted?): %v; recreate it and start again",
				ErrUnrecoverable, what, d.Round(time.Second), err)
		}
	} else {
		h.missingAt = time.Time{}
	}
	h.mu.Unlock()
	h.setDown(what, err)
	return nil
}

func (h *Health) setDown(what string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures++
	if h.down {
		h.log.Debug("Kafka still unreachable", "role", h.cfg.Role, "what", what, "err", err)
		return
	}
	h.down, h.since, h.failures = true, h.now(), 1
	h.gauge.Set(0)
	h.log.Warn("Kafka unreachable; keeping state and retrying with backoff until it answers (logged once per outage)",
		"role", h.cfg.Role, "what", what, "err", err)
}

// Up reports whether the last call succeeded (true before any call).
func (h *Health) Up() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.down
}

// DownSince returns when the current outage began (zero while up).
func (h *Health) DownSince() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return time.Time{}
	}
	return h.since
}

// Backoff is a bounded exponential pause: each Wait sleeps about twice as long as the one
// before (with jitter, between half and all of it), from Min up to Max; Reset starts again
// from Min. Not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	next     time.Duration
}

// Wait sleeps the next pause and reports whether it ran to its end (false: ctx ended).
func (b *Backoff) Wait(ctx context.Context) bool {
	if b.next < b.Min {
		b.next = b.Min
	}
	d := b.next/2 + rand.N(b.next/2+1)
	b.next = min(2*b.next, b.Max)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reset makes the next Wait pause Min again.
func (b *Backoff) Reset() { b.next = 0 }

// Gauge returns the role's trending_kafka_up series (tests read it).
func (h *Health) Gauge() prometheus.Gauge { return h.gauge }
