package worker

import (
	"context"
	"strconv"
	"sync"
	"time"

	"trending/speed/sketch"
)

// The hourly topic sketches in the object store (docs/topics.md, "Baseline in the object
// store"): at every publish tick, outside the partition's lock, each partition saves the
// closed hours its topics state has not saved yet, loads the same-hour sketches its
// baseline wants (after an hour change or a restore), and once an hour removes the hours
// past the baseline depth. A store that fails leaves the unsaved hours in memory (and in
// the checkpoint) and the baseline on the days in memory; loads are retried every
// hourRetry, and trending_speed_topics_baseline_days{state="unavailable"} says how many
// days the expected counts are missing meanwhile.

// hourRetry is how long a partition waits to read the store again after a failed load, and
// hourTimeout bounds each call, so a store that hangs delays a publish tick by seconds, not
// by the client's minute.
const (
	hourRetry   = 30 * time.Second
	hourTimeout = 10 * time.Second
)

// hourStore is where the hourly sketches go: *topicstore.Hours, or a test's wrapper (one
// whose store is down). Safe for concurrent use.
type hourStore interface {
	Put(ctx context.Context, topic string, partition int, hour int64, body []byte) error
	Get(ctx context.Context, topic string, partition int, hour int64) ([]byte, error)
	Prune(ctx context.Context, topic string, partition int, before int64) (int, error)
}

// hourSync is one partition's hourly-sketch I/O state, owned by its tick goroutine.
type hourSync struct {
	retryAt time.Time // no load is retried before it
	pruned  int64     // the cut of the last prune (Unix hour)
	failing bool      // the last call failed (logged once until one succeeds)
	dropped uint64    // the state's UnsavedDropped at the last tick
}

// syncHours saves, loads and prunes the partition's hourly topic sketches; mu is the
// partition's lock, taken only to read and update the state.
func (p *partition) syncHours(ctx context.Context, mu *sync.Mutex, hs *hourSync, now time.Time) {
	store := p.w.hours
	if p.topics == nil || store == nil {
		return
	}
	c, m := p.w.cfg, p.w.m
	mu.Lock()
	unsaved := p.topics.Unsaved()
	need := p.topics.NeedBaseline(!now.Before(hs.retryAt))
	cut := p.topics.Minute()/60 - int64(p.topics.Config().BaselineDays)*24
	dropped := p.topics.UnsavedDropped()
	mu.Unlock()
	if dropped > hs.dropped {
		m.topicsHours.WithLabelValues("dropped").Add(float64(dropped - hs.dropped))
		c.Log.Warn("topics hourly sketches dropped unsaved: the object store has been failing for longer than the state keeps hours",
			"partition", p.id, "dropped", dropped-hs.dropped, "keeps", p.topics.Config().UnsavedHours)
	}
	hs.dropped = dropped
	fail := func(op string, hour int64, err error) {
		m.topicsHours.WithLabelValues(op + "_failed").Inc()
		if !hs.failing {
			c.Log.Warn("topics hourly sketches: object store failed; the baseline uses the days in memory until it answers",
				"partition", p.id, "op", op, "hour", time.Unix(hour*3600, 0).UTC(), "err", err)
		}
		hs.failing = true
	}
	ok := func() {
		if hs.failing {
			c.Log.Info("topics hourly sketches: object store answers again", "partition", p.id)
		}
		hs.failing = false
	}
	saved := len(unsaved) > 0
	for _, u := range unsaved {
		b, err := u.Sketch.MarshalBinary()
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, hourTimeout)
			err = store.Put(cctx, c.Topic, p.id, u.Hour, b)
			cancel()
		}
		if err != nil {
			fail("save", u.Hour, err)
			saved = false
			break // the rest stay in memory for the next tick
		}
		ok()
		mu.Lock()
		p.topics.Saved(u.Hour)
		mu.Unlock()
		m.topicsHours.WithLabelValues("saved").Inc()
	}
	var loadErr error
	for _, h := range need {
		var sk *sketch.Sketch
		err := loadErr // after one failure, the others are not tried this time
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, hourTimeout)
			var b []byte
			b, err = store.Get(cctx, c.Topic, p.id, h)
			cancel()
			switch {
			case err != nil:
				loadErr = err
				fail("load", h, err)
			case b == nil:
				ok()
				m.topicsHours.WithLabelValues("missing").Inc()
			default:
				ok()
				sk = new(sketch.Sketch)
				if derr := sk.UnmarshalBinary(b); derr != nil {
					c.Log.Warn("topics hourly sketch does not decode; left out of the baseline", "partition", p.id, "hour", time.Unix(h*3600, 0).UTC(), "err", derr)
					sk = nil
					m.topicsHours.WithLabelValues("missing").Inc()
				} else {
					m.topicsHours.WithLabelValues("loaded").Inc()
				}
			}
		}
		if ctx.Err() != nil {
			return // stopping: the hour stays wanted
		}
		mu.Lock()
		serr := p.topics.SetBaseline(h, sk, err)
		mu.Unlock()
		if serr != nil {
			c.Log.Warn("topics hourly sketch of other settings; left out of the baseline", "partition", p.id, "err", serr)
		}
	}
	if loadErr != nil {
		hs.retryAt = now.Add(p.w.hourRetry)
	}
	if saved && cut > hs.pruned {
		cctx, cancel := context.WithTimeout(ctx, hourTimeout)
		n, err := store.Prune(cctx, c.Topic, p.id, cut)
		cancel()
		if err != nil {
			fail("prune", cut, err)
		} else {
			hs.pruned = cut
			m.topicsHours.WithLabelValues("pruned").Add(float64(n))
		}
	}
	mu.Lock()
	b := p.topics.Baseline()
	mu.Unlock()
	for state, n := range map[string]int{"used": b.Days, "missing": b.Missing, "unavailable": b.Unavailable, "pending": b.Pending} {
		m.topicsBaseline.WithLabelValues(strconv.Itoa(p.id), state).Set(float64(n))
	}
}
