package batch

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scheduleMetrics are the built-in scheduler's (Schedule, trending up) Prometheus series. The
// one-shot commands (`trending batch nightly` from cron or Airflow) export none: the
// serving API's trending_serving_batch_lag_seconds watches the batch however it runs.
type scheduleMetrics struct {
	runs        *prometheus.CounterVec // kind: scheduled, nightly; result: ok, failed
	pending     *prometheus.GaugeVec   // level
	failed      *prometheus.CounterVec // level
	lastSuccess prometheus.Gauge
}

func newScheduleMetrics(reg prometheus.Registerer) (*scheduleMetrics, error) {
	m := &scheduleMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_batch_runs_total",
			Help: "Passes of the built-in batch scheduler, by kind (scheduled: the closed windows, late data and topics lists; nightly) and result (ok, failed: retried at the next tick)."}, []string{"kind", "result"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_batch_windows_pending",
			Help: "Calendar windows of the scheduler's lookback that have ended but are not exact with their current archived inputs, by level: waiting for the allowed lateness or the archive's completeness, or failed; at the end of each pass."}, []string{"level"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_batch_windows_failed_total",
			Help: "Calendar windows whose scheduled recompute failed (retried at the next tick), by level."}, []string{"level"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "trending_batch_last_success_timestamp_seconds",
			Help: "Unix time of the end of the scheduler's last pass that failed nowhere."}),
	}
	for _, k := range []string{"scheduled", "nightly"} {
		for _, r := range []string{"ok", "failed"} {
			m.runs.WithLabelValues(k, r)
		}
	}
	// The series of the levels with a rollup of their own start at zero; a week's once the
	// window set serves weeks and a pass counts them.
	for _, lv := range rollupLevels() {
		m.pending.WithLabelValues(lv)
		m.failed.WithLabelValues(lv)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.runs, m.pending, m.failed, m.lastSuccess} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("batch metrics: %w", err)
		}
	}
	return m, nil
}

func (m *scheduleMetrics) run(kind string, err error) {
	result := "ok"
	if err != nil {
		result = "failed"
	}
	m.runs.WithLabelValues(kind, result).Inc()
}

func (m *scheduleMetrics) succeeded(now time.Time) { m.lastSuccess.Set(float64(now.Unix())) }
