package api

import (
	"errors"
	"strconv"
	"sync"
	"trending/model"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the serving API's Prometheus metrics. Request latency is recorded per request;
// everything about the lists (age, lag, counts, store health) is computed from the cache when
// Prometheus scrapes, so it costs nothing on the read path.
type metrics struct {
	c *Cache

	requests        *prometheus.HistogramVec
	refreshes       *prometheus.CounterVec
	refreshFailures *prometheus.CounterVec
	refreshDuration *prometheus.HistogramVec
	invalidLists    prometheus.Counter
	freshness       *prometheus.HistogramVec

	// GET /v1/trending/stream.
	streams, streamEvents, streamRefused, streamDropped prometheus.Counter
	streamsOpen                                         prometheus.Gauge

	observers sync.Map // route + "\x00" + code -> prometheus.Observer

	listAge, speedLag, batchLag, lists, cacheBytes, storeUp, lastRefresh *prometheus.Desc

	// The newest reconciliation per level (Cache.reconciliations): the speed layer's drift.
	reconRecall, reconMaxAbs, reconMeanAbs, reconMaxRel, reconBound, reconOverBound, reconDroppedLate, reconStart *prometheus.Desc
}

func newMetrics(c *Cache) *metrics {
	m := &metrics{
		c: c,
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trending_http_request_duration_seconds",
			Help: "Time to serve an HTTP request, by route and status code.",
			// From 50 µs (a cached list) to 1 s (a slow client on a large body).
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route", "code"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trending_serving_cache_refreshes_total",
			Help: "Cache refreshes from the serving store, by kind (hot, full, or changes: the lists whose stamp moved), failed ones included.",
		}, []string{"kind"}),
		refreshFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trending_serving_cache_refresh_failures_total",
			Help: "Cache refreshes that failed because the serving store did not answer, by kind.",
		}, []string{"kind"}),
		refreshDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trending_serving_cache_refresh_duration_seconds",
			Help:    "Time to load lists from the serving store, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"kind"}),
		invalidLists: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trending_serving_cache_invalid_lists_total",
			Help: "Lists the store returned that failed validation and were not served (a writer bug).",
		}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "trending_served_freshness_seconds",
			Help: "Produced-to-served age of each new version of a live list: from its as_of (the event time it is complete up to) to when the cache can serve it, by list.",
			// From a list published within a second of its newest event to one five minutes behind.
			Buckets: []float64{.1, .25, .5, 1, 2, 3, 5, 10, 15, 30, 60, 120, 300},
		}, []string{"window"}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trending_serving_stream_connections",
			Help: "Open GET /v1/trending/stream connections.",
		}),
		streams: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trending_serving_stream_connections_total",
			Help: "GET /v1/trending/stream connections accepted.",
		}),
		streamRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trending_serving_stream_refused_total",
			Help: "GET /v1/trending/stream connections refused with 503 because the most allowed (--max-streams) were open.",
		}),
		streamDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trending_serving_stream_dropped_slow_total",
			Help: "Streams disconnected because the reader did not take an event or heartbeat within the stream write timeout.",
		}),
		streamEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trending_serving_stream_events_total",
			Help: "List versions sent on streams (heartbeats not counted).",
		}),
		listAge: prometheus.NewDesc("trending_serving_list_age_seconds",
			"Age of each live list: now minus its as_of.", []string{"window"}, nil),
		speedLag: prometheus.NewDesc("trending_serving_speed_lag_seconds",
			"Age of the newest speed-layer list: now minus the newest as_of written by the speed layer.", nil, nil),
		batchLag: prometheus.NewDesc("trending_serving_batch_lag_seconds",
			"Age of the newest exact calendar window: now minus the end of the newest window the batch layer wrote.", nil, nil),
		lists: prometheus.NewDesc("trending_serving_cache_lists",
			"Lists held by the cache, by kind (live, hour, day, month) and source.", []string{"kind", "source"}, nil),
		cacheBytes: prometheus.NewDesc("trending_serving_cache_bytes",
			"Approximate memory held by cached lists and their pre-encoded bodies.", nil, nil),
		storeUp: prometheus.NewDesc("trending_serving_store_up",
			"1 when the last cache refresh reached the serving store, 0 when it failed.", nil, nil),
		lastRefresh: prometheus.NewDesc("trending_serving_cache_last_refresh_timestamp_seconds",
			"Unix time of the last successful cache refresh.", nil, nil),
		reconRecall: reconDesc("recall_at_k",
			"Recall@K of the speed layer's list against the exact one, in the newest reconciled window of each level."),
		reconMaxAbs: reconDesc("max_abs_error",
			"Largest |speed - exact| count of an item on the speed layer's list, in the newest reconciled window of each level."),
		reconMeanAbs: reconDesc("mean_abs_error",
			"Mean |speed - exact| count over the speed layer's list, in the newest reconciled window of each level."),
		reconMaxRel: reconDesc("max_rel_error",
			"Largest |speed - exact| / exact of an item on the speed layer's list, in the newest reconciled window of each level."),
		reconBound: reconDesc("bound_max_overcount",
			"The max_overcount the speed layer's sketch list stated, in the newest reconciled window of each level (absent for exact speed lists)."),
		reconOverBound: reconDesc("error_over_bound",
			"max_abs_error / the stated max_overcount, in the newest reconciled window of each level: above 1 the speed layer was further off than its bound (absent for exact speed lists)."),
		reconDroppedLate: reconDesc("dropped_late",
			"Events of the newest reconciled window of each level that came after it closed and so were missing from the speed layer's provisional list."),
		reconStart: reconDesc("window_start_timestamp_seconds",
			"Unix time of the start of the window the other trending_reconciliation_* metrics of the level describe."),
	}
	// The refresh kinds exist from the start, so a failure rate reads 0 rather than nothing.
	for _, kind := range []string{"hot", "full", "changes"} {
		m.refreshes.WithLabelValues(kind)
		m.refreshFailures.WithLabelValues(kind)
	}
	return m
}

func (m *metrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.requests), r.Register(m.refreshes), r.Register(m.refreshFailures),
		r.Register(m.refreshDuration), r.Register(m.invalidLists), r.Register(m.freshness), r.Register(m.streamsOpen),
		r.Register(m.streams), r.Register(m.streamRefused), r.Register(m.streamDropped), r.Register(m.streamEvents), r.Register(m))
}

// observer returns the latency histogram of one route and status code, resolving the label
// values once rather than per request.
func (m *metrics) observer(route string, code int) prometheus.Observer {
	key := route + "\x00" + strconv.Itoa(code)
	if o, ok := m.observers.Load(key); ok {
		return o.(prometheus.Observer)
	}
	o := m.requests.WithLabelValues(route, strconv.Itoa(code))
	m.observers.Store(key, o)
	return o
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.listAge, m.speedLag, m.batchLag, m.lists, m.cacheBytes, m.storeUp, m.lastRefresh,
		m.reconRecall, m.reconMaxAbs, m.reconMeanAbs, m.reconMaxRel, m.reconBound, m.reconOverBound, m.reconDroppedLate, m.reconStart} {
		ch <- d
	}
}

// Collect implements prometheus.Collector from the current snapshot.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	now := m.c.cfg.Now()
	var newestSpeed, newestBatchEnd int64
	counts := map[[2]string]int{}
	size := 0
	for k, e := range m.c.snap.Load().lists {
		l := &e.list
		kind := k.window
		if k.start == liveStart {
			kind = "live"
			ch <- prometheus.MustNewConstMetric(m.listAge, prometheus.GaugeValue, now.Sub(l.AsOf).Seconds(), k.window)
		}
		counts[[2]string{kind, string(l.Source)}]++
		size += e.approxBytes()
		if l.Source == model.SourceSpeed && l.AsOf.UnixNano() > newestSpeed {
			newestSpeed = l.AsOf.UnixNano()
		}
		if l.Source == model.SourceBatch && k.start != liveStart && l.End.UnixNano() > newestBatchEnd {
			newestBatchEnd = l.End.UnixNano()
		}
	}
	if newestSpeed != 0 {
		ch <- prometheus.MustNewConstMetric(m.speedLag, prometheus.GaugeValue, float64(now.UnixNano()-newestSpeed)/1e9)
	}
	if newestBatchEnd != 0 {
		ch <- prometheus.MustNewConstMetric(m.batchLag, prometheus.GaugeValue, float64(now.UnixNano()-newestBatchEnd)/1e9)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.lists, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(m.cacheBytes, prometheus.GaugeValue, float64(size))
	up, h := 0.0, m.c.StoreHealth()
	if h.Up {
		up = 1
	}
	last := h.LastOK
	ch <- prometheus.MustNewConstMetric(m.storeUp, prometheus.GaugeValue, up)
	if !last.IsZero() {
		ch <- prometheus.MustNewConstMetric(m.lastRefresh, prometheus.GaugeValue, float64(last.UnixNano())/1e9)
	}
	for _, lr := range m.c.reconciliations() {
		r := lr.Reconciliation
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lr.Level)
		}
		gauge(m.reconRecall, r.RecallAtK)
		gauge(m.reconMaxAbs, float64(r.MaxAbsError))
		gauge(m.reconMeanAbs, r.MeanAbsError)
		gauge(m.reconMaxRel, r.MaxRelError)
		gauge(m.reconDroppedLate, float64(r.SpeedDroppedLate))
		gauge(m.reconStart, float64(lr.Start.Unix()))
		if over, ok := r.ErrorOverBound(); ok {
			gauge(m.reconBound, r.SpeedErrorBound.MaxOvercount)
			gauge(m.reconOverBound, over)
		}
	}
}

// reconDesc describes one trending_reconciliation_* gauge, labelled by level: hour, day,
// month or a topics list (topics/<region>/<score>).
func reconDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("trending_reconciliation_"+name, help, []string{"level"}, nil)
}
