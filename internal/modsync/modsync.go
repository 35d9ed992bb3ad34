// Package modsync keeps the shared moderation list (model/moderation) in the object store
// every role already uses, as one object (Key): changed by an ETag-conditional
// read-merge-write (Update), read by the roles that apply it (Load, and the Watcher of the
// long-running ones, which polls it so that a decision reaches every role within a minute).
//
// In detail (DESIGN.md's file map has the line): the shared moderation list in the bucket
// (`moderation/removed.json`): `Update` (an ETag-conditional read-modify-write, retried on
// a conflict), `Load`, and the `Watcher` of long-running processes (reads it every 10 s,
// swaps the set in, calls `OnChange`; `trending_moderation_removed_items`,
// `trending_moderation_read_failures_total`). Where removal applies: the merger
// (`merge.Config.Removed`, `ModerationChanged`), the batch (`batch.Config.Removed`: K plus
// the removed ranked, the set's digest in each list's fingerprint), the API's cache
// (`api.Config.Removed`: every served list, the net for lists written before a change) and
// `/v1/moderation` (`serving/api/moderation.go`); `cmd/trending/moderation.go`: `trending
// moderation remove|restore|list`, `merge --moderation`, `serve --moderation`
package modsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/objstore"
	"trending/model/moderation"
)

// Key is the object that holds the shared moderation list: its bytes are the list's JSON
// (moderation.List.MarshalJSON).
const Key = "moderation/removed.json"

// DefaultEvery is how often a Watcher reads the list: a decision reaches every role within
// DefaultEvery plus one publish (the merger's second, the API's refresh).
const DefaultEvery = 10 * time.Second

// attempts bounds Update's read-merge-write loop under contention.
const attempts = 8

// ErrContended means Update lost the conditional write attempts times in a row.
var ErrContended = errors.New("modsync: the moderation list kept changing under the write")

func backoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(attempt) * time.Duration(5+rand.IntN(20)) * time.Millisecond):
		return nil
	}
}

// Update reads the shared list under key, applies change to it and writes it back, on the
// condition that nobody wrote in between (If-Match on the ETag, If-None-Match for the first
// write); on a conflict it reads again and reapplies change. change's error (a restore of an
// item that is not removed) ends it with nothing written. It returns the list as written.
// A corrupt object is an error and is left alone: it holds operators' decisions.
func Update(ctx context.Context, st *objstore.Client, key string, change func(*moderation.List) error) (*moderation.List, error) {
	var last error
	for attempt := range attempts {
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
		b, etag, err := st.GetVersion(ctx, key)
		l := moderation.NewList()
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			b, etag = nil, ""
		case err != nil:
			if last = fmt.Errorf("read moderation list: %w", err); objstore.IsRetryable(err) {
				continue
			}
			return nil, last
		default:
			if err := l.UnmarshalJSON(b); err != nil {
				last = fmt.Errorf("moderation list %s: %w", key, err) // retried: the read may be torn
				continue
			}
		}
		if err := change(l); err != nil {
			return nil, err
		}
		out, err := json.Marshal(l)
		if err != nil {
			return nil, fmt.Errorf("encode moderation list: %w", err)
		}
		if bytes.Equal(out, b) {
			return l, nil
		}
		if etag == "" {
			_, err = st.PutIfAbsent(ctx, key, out)
		} else {
			_, err = st.PutIfMatch(ctx, key, out, etag)
		}
		if err == nil {
			return l, nil
		}
		last = fmt.Errorf("write moderation list: %w", err)
		if !errors.Is(err, objstore.ErrExists) && !errors.Is(err, objstore.ErrChanged) && !objstore.IsRetryable(err) {
			return nil, last
		}
	}
	if errors.Is(last, objstore.ErrExists) || errors.Is(last, objstore.ErrChanged) {
		return nil, fmt.Errorf("%s: %w after %d attempts", key, ErrContended, attempts)
	}
	return nil, last
}

// Load reads the shared list under key. No object yet is an empty list (nothing removed). A
// read that fails or does not decode is retried a few times, then returned as an error: a
// writer that cannot see the list must not publish as if nothing were removed.
func Load(ctx context.Context, st *objstore.Client, key string) (*moderation.List, error) {
	var last error
	for attempt := range attempts {
		if err := backoff(ctx, attempt); err != nil {
			return nil, err
		}
		b, _, err := st.GetVersion(ctx, key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			return moderation.NewList(), nil
		case err != nil:
			if last = fmt.Errorf("read moderation list: %w", err); !objstore.IsRetryable(err) {
				return nil, last
			}
			continue
		}
		l := moderation.NewList()
		if err := l.UnmarshalJSON(b); err != nil {
			last = fmt.Errorf("moderation list %s: %w", key, err)
			continue
		}
		return l, nil
	}
	return nil, last
}

// Watcher is a long-running role's copy of the removed set: Run reads the shared list every
// Every and swaps the set in, calling the OnChange functions after each change. Removed is
// safe for concurrent use and never blocks.
type Watcher struct {
	st    *objstore.Client
	key   string
	every time.Duration
	log   *slog.Logger

	cur    atomic.Pointer[moderation.Set]
	loaded atomic.Bool
	mu     sync.Mutex
	on     []func(*moderation.Set)

	removed  prometheus.Gauge
	failures prometheus.Counter
}

// NewWatcher returns a Watcher of the list under key; every must be positive. Until its
// first read it holds the empty set. reg, when set, receives trending_moderation_removed_items
// and trending_moderation_read_failures_total.
func NewWatcher(st *objstore.Client, key string, every time.Duration, log *slog.Logger, reg prometheus.Registerer) (*Watcher, error) {
	if every <= 0 {
		return nil, fmt.Errorf("moderation watcher: interval %s must be positive", every)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{st: st, key: key, every: every, log: log,
		removed:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "trending_moderation_removed_items", Help: "Items the shared moderation list removes from the served lists, as this process last read it."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_moderation_read_failures_total", Help: "Reads of the shared moderation list that failed (the last set read stays in force)."}),
	}
	w.cur.Store(moderation.NewSet())
	if reg != nil {
		for _, c := range []prometheus.Collector{w.removed, w.failures} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("moderation metrics: %w", err)
			}
		}
	}
	return w, nil
}

// Removed returns the set read last.
func (w *Watcher) Removed() *moderation.Set { return w.cur.Load() }

// OnChange adds f, called (on Run's goroutine) with the new set after every change.
func (w *Watcher) OnChange(f func(*moderation.Set)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = append(w.on, f)
}

// Refresh reads the list once and swaps in its set; on a failure the set read before stays.
func (w *Watcher) Refresh(ctx context.Context) error {
	l, err := Load(ctx, w.st, w.key)
	if err != nil {
		w.failures.Inc()
		return err
	}
	w.Set(l.Removed())
	return nil
}

// Set swaps in s, as a read of the list would (a process that changed the list itself need
// not wait for the next read), and calls the OnChange functions when it differs.
func (w *Watcher) Set(s *moderation.Set) {
	old := w.cur.Swap(s)
	first := !w.loaded.Swap(true)
	w.removed.Set(float64(s.Len()))
	if old.Equal(s) {
		return
	}
	if !first {
		w.log.Info("moderation list changed", "removed", s.Len())
	}
	w.mu.Lock()
	on := append([]func(*moderation.Set){}, w.on...)
	w.mu.Unlock()
	for _, f := range on {
		f(s)
	}
}

// Run refreshes at once and then every Every until ctx ends; a failed read is logged and
// retried at the next tick, the set read before staying in force.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		if err := w.Refresh(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("moderation list read failed; the last one read stays in force", "key", w.key, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
