package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/setting"
	"trending/model"
)

// ScheduleConfig configures Schedule. Start from DefaultScheduleConfig: Schedule takes every
// field as it is.
type ScheduleConfig struct {
	// Every is how often the scheduler looks for newly closed windows; default 1m. Must be
	// positive.
	Every time.Duration
	// Lookback is how far back it looks; default 48h. Older windows are the nightly run's.
	// Must be positive.
	Lookback time.Duration
	// NightlyAt is the time after midnight UTC of the daily Nightly run, under 24h; default
	// 30m. Zero runs it at midnight; negative disables it.
	NightlyAt time.Duration
	// Topics, when set, also recomputes the trending-topics lists of every hour that
	// closed within Lookback whose archived inputs (the hour and its baseline days inside
	// Lookback) changed since it last ran them.
	Topics *Topics
	// Log receives the scheduler's lines; nil uses the Runner's logger.
	Log *slog.Logger
	// Registry receives the scheduler's metrics (trending_batch_*); nil exports none.
	Registry prometheus.Registerer
}

// DefaultScheduleConfig returns the defaults.
func DefaultScheduleConfig() ScheduleConfig {
	return ScheduleConfig{Every: time.Minute, Lookback: 48 * time.Hour, NightlyAt: 30 * time.Minute}
}

// Validate reports settings that cannot work, by field (setting.ErrConfig).
func (c ScheduleConfig) Validate() error {
	d := DefaultScheduleConfig()
	var errs []error
	if c.Every <= 0 {
		errs = append(errs, setting.Invalid("Every", "%s: must be positive (default %s)", c.Every, d.Every))
	}
	if c.Lookback <= 0 {
		errs = append(errs, setting.Invalid("Lookback", "%s: must be positive (default %s)", c.Lookback, d.Lookback))
	}
	if c.NightlyAt >= 24*time.Hour {
		errs = append(errs, setting.Invalid("NightlyAt", "%s: must be under 24h after midnight UTC, or negative for no nightly run (default %s)", c.NightlyAt, d.NightlyAt))
	}
	return errors.Join(errs...)
}

// Schedule is the built-in scheduler of long-running processes (trending up): every Every it
// recomputes each hour, day and month that closed within Lookback (its end plus the allowed
// lateness passed and the archive complete) and whose archived inputs changed since it last
// ran it, and once a day at NightlyAt it runs Nightly. It returns when ctx ends, or at once
// when sc does not Validate; failures are logged and retried at the next tick. cron or
// Airflow call `trending batch nightly` instead.
func (r *Runner) Schedule(ctx context.Context, sc ScheduleConfig) error {
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("batch schedule: %w", err)
	}
	if sc.Log == nil {
		sc.Log = r.log
	}
	m, err := newScheduleMetrics(sc.Registry)
	if err != nil {
		return fmt.Errorf("batch schedule: %w", err)
	}
	done := map[Window]string{} // fingerprint of the inputs each window was last run with
	var lastNightly time.Time
	t := time.NewTicker(sc.Every)
	defer t.Stop()
	for {
		err := r.scheduleOnce(ctx, sc, done, m)
		if ctx.Err() != nil {
			return nil
		}
		m.run("scheduled", err)
		failed := err != nil
		if err != nil {
			sc.Log.Warn("scheduled batch failed; retrying at the next tick", "err", err)
		}
		if sc.NightlyAt >= 0 {
			now := r.cfg.Now().UTC()
			day := now.Truncate(24 * time.Hour)
			if now.Sub(day) >= sc.NightlyAt && lastNightly.Before(day) {
				rep, err := r.Nightly(ctx, time.Time{})
				switch {
				case err == nil:
					lastNightly = day
					m.run("nightly", nil)
					sc.Log.Info("nightly batch done", "published", rep.Published())
				case errors.Is(err, ErrWindowOpen):
					sc.Log.Debug("nightly batch waiting", "why", err)
				case ctx.Err() == nil:
					failed = true
					m.run("nightly", err)
					sc.Log.Warn("nightly batch failed; retrying at the next tick", "err", err)
				}
			}
		}
		if !failed {
			m.succeeded(r.cfg.Now())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *Runner) scheduleOnce(ctx context.Context, sc ScheduleConfig, done map[Window]string, m *scheduleMetrics) error {
	now := r.cfg.Now().UTC()
	from := now.Add(-sc.Lookback)
	hourFP := map[time.Time]string{}
	var due []Window
	pending := map[string]int{}
	levels := model.PeriodStrings(r.cfg.Windows.Calendar())
	defer func() {
		for _, lv := range levels {
			m.pending.WithLabelValues(lv).Set(float64(pending[lv]))
		}
	}()
	for _, lv := range levels {
		lvFrom := from
		if p := model.Period(lv); levelOf(lv).schedulePrevious {
			// Look back to the start of the last closed window (level.schedulePrevious).
			lvFrom = minTime(from, p.Back(p.Align(now), 1))
		}
		ws, err := Span(lv, lvFrom, now)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if w.End().After(now) {
				continue
			}
			if r.Closed(ctx, w) != nil {
				pending[lv]++ // ended, waiting for the lateness or the archive
				continue
			}
			var fps []string
			for _, h := range w.Hours(time.Time{}) {
				fp, ok := hourFP[h.Start]
				if !ok {
					var err error
					if fp, err = r.arc.Fingerprint(ctx, h.Start); err != nil {
						return err
					}
					hourFP[h.Start] = fp
				}
				fps = append(fps, fp)
			}
			// The removed items' digest too: a moderation change publishes the lists again.
			fp := strings.Join(fps, ",") + "|" + r.removed().Digest()
			if done[w] == fp {
				continue
			}
			due = append(due, w)
			done[w] = fp
		}
	}
	if len(due) > 0 {
		rep, err := r.Recompute(ctx, due)
		if err != nil {
			for _, w := range due {
				delete(done, w) // try them again
				pending[w.Level]++
				m.failed.WithLabelValues(w.Level).Inc()
			}
			return err
		}
		sc.Log.Info("scheduled batch", "windows", len(due), "published", rep.Published())
	}
	// Late data the archive marked, beyond the lookback too; clears the marks.
	if rep, err := r.RecomputeDirty(ctx); err != nil {
		return err
	} else if n := rep.Published(); n > 0 {
		sc.Log.Info("late data recomputed", "windows", len(rep.Outcomes), "published", n)
	}
	if sc.Topics == nil {
		return nil
	}
	// Topics lists: the closed hours whose inputs changed. hourFP holds every closed hour
	// of the lookback now; a baseline day older than the lookback is not watched (late
	// data that old is rare, and `trending batch nightly --topics` covers yesterday).
	var hours []Window
	for _, h := range mustSpan(Hour, from, now) {
		fp, ok := hourFP[h.Start]
		if !ok {
			continue // open
		}
		fps := []string{fp}
		for _, b := range sc.Topics.baseline(h.Start)[1:] {
			fps = append(fps, hourFP[b])
		}
		w := Window{TopicsRollup, h.Start}
		if key := strings.Join(fps, ","); done[w] != key {
			hours = append(hours, h)
			done[w] = key
		}
	}
	if len(hours) == 0 {
		return nil
	}
	rep, err := sc.Topics.Recompute(ctx, hours)
	if err != nil {
		for _, h := range hours {
			delete(done, Window{TopicsRollup, h.Start})
		}
		return err
	}
	sc.Log.Info("scheduled topics batch", "hours", len(hours), "published", rep.Published())
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func mustSpan(level string, from, to time.Time) []Window {
	ws, err := Span(level, from, to)
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return ws
}
