package worker

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"trending/model/event"
	"trending/speed/viewcap"
	"trending/speed/window"
)

type metrics struct {
	events    *prometheus.CounterVec
	outcomes  [window.Invalid + 1]prometheus.Counter // resolved once: no label lookup per event
	dlq       *prometheus.CounterVec
	published prometheus.Counter
	// publishedBytes is the partials' JSON before compression.
	publishedBytes prometheus.Counter
	ckpts          prometheus.Counter
	ckptFailures   prometheus.Counter
	ckptBytes      prometheus.Gauge
	ckptSeconds    prometheus.Histogram
	ckptLocked     prometheus.Histogram // the part of a checkpoint that holds the partition's lock
	restores       prometheus.Counter
	assigned       prometheus.Gauge
	watermark      *prometheus.GaugeVec
	lag            *prometheus.GaugeVec // partition
	ckptTime       *prometheus.GaugeVec // partition
	salted         prometheus.Counter
	// groupDropped counts events of a group value that got no list, by reason (resolved once);
	// groupLists is each owned partition's number of group values with lists.
	groupDropped map[string]prometheus.Counter
	groupLists   *prometheus.GaugeVec // partition
	// topicsHours counts the hourly topic sketches saved, loaded, found missing and the
	// store's failures (by op); topicsBaseline is each partition's baseline days by state.
	topicsHours    *prometheus.CounterVec // outcome
	topicsBaseline *prometheus.GaugeVec   // partition, state
	// capped counts the views the per-account cap refused (lists of all items);
	// capUncapped the events it admitted uncapped, by reason (full, late).
	capped      prometheus.Counter
	capUncapped map[string]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		events:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_speed_events_total", Help: "Valid events by what the window state did with them: counted, late, too_late."}, []string{"outcome"}),
		dlq:            prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_speed_dlq_total", Help: "Events sent to the DLQ, by reason: the decoder's rejection reason, or future_ts (dated over --max-future ahead)."}, []string{"reason"}),
		published:      prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_partials_published_total", Help: "Per-partition top lists published."}),
		publishedBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_partials_bytes_total", Help: "Bytes of the per-partition top lists published, before compression."}),
		ckpts:          prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_checkpoints_total", Help: "Checkpoints saved."}),
		ckptFailures:   prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_checkpoint_failures_total", Help: "Checkpoints that failed to save (retried at the next tick)."}),
		ckptBytes:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "trending_speed_checkpoint_bytes", Help: "Bytes the last checkpoint wrote: its manifest and the pieces no earlier checkpoint stored."}),
		ckptSeconds:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "trending_speed_checkpoint_seconds", Help: "Time to snapshot and upload a checkpoint.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		ckptLocked:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "trending_speed_checkpoint_lock_seconds", Help: "Time a checkpoint holds the partition's lock (counting and publishing wait that long): the copy of the open state.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		restores:       prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_restores_total", Help: "Partitions restored from a checkpoint."}),
		salted: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_salted_events_total",
			Help: "Events that came as one share of a salted (hot) item: counted like any other, the item's count then reported in full for the merger to sum."}),
		assigned:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "trending_speed_partitions_assigned", Help: "Partitions this worker owns."}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_speed_watermark_seconds", Help: "Event-time watermark per partition (Unix seconds)."}, []string{"partition"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_speed_consumer_lag",
			Help: "Messages of each owned partition not yet counted: its high watermark minus the next offset to process, set at every publish tick (Kafka's high watermark read at most every 5s, else the one the fetches carried)."}, []string{"partition"}),
		ckptTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_speed_checkpoint_timestamp_seconds",
			Help: "Unix time of each owned partition's last saved checkpoint (its age is time() minus this)."}, []string{"partition"}),
	}
	groupDropped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_speed_group_events_dropped_total",
		Help: "Events of a group value (region) counted in the lists of all items but in no list of their value, by reason: cap (every value seen gets lists, and the partition holds its cap of values, or refused one before) or name (the value cannot name a list)."}, []string{"reason"})
	m.groupLists = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_speed_group_lists",
		Help: "Group values (regions) each owned partition keeps lists of: one window state each."}, []string{"partition"})
	m.topicsHours = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_speed_topics_hours_total",
		Help: "Hourly trending-topics sketches by outcome: saved, loaded, missing (the store has none: left out of the baseline), save_failed, load_failed (the store could not be read: the baseline uses the days in memory until a retry succeeds), pruned, dropped (closed hours dropped unsaved: the store failed for longer than --topics' UnsavedHours)."}, []string{"outcome"})
	m.topicsBaseline = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_speed_topics_baseline_days",
		Help: "Days in each partition's current trending-topics baseline by state: used, missing, unavailable (the store failed: the expected counts have fewer days than they should), pending."}, []string{"partition", "state"})
	m.groupDropped = map[string]prometheus.Counter{DropCap: groupDropped.WithLabelValues(DropCap), DropName: groupDropped.WithLabelValues(DropName)}
	m.capped = prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_speed_capped_views_total",
		Help: "Views the per-account cap (--cap-views) refused: beyond N views of one account to one item in one hour, in the lists of all items."})
	capUncapped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "trending_speed_cap_uncapped_events_total",
		Help: "Events of an account counted without the cap, by reason: full (no free slot in the caps' table: raise --cap-slots, see trending plan) or late (older than the kept hours)."}, []string{"reason"})
	m.capUncapped = map[string]prometheus.Counter{viewcap.ReasonFull: capUncapped.WithLabelValues(viewcap.ReasonFull), viewcap.ReasonLate: capUncapped.WithLabelValues(viewcap.ReasonLate)}
	for _, r := range event.Reasons() {
		m.dlq.WithLabelValues(string(r))
	}
	m.dlq.WithLabelValues(ReasonFutureTS)
	for _, o := range []window.Outcome{window.Counted, window.Late, window.TooLate, window.Invalid} {
		m.outcomes[o] = m.events.WithLabelValues(o.String())
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.events, m.dlq, m.published, m.publishedBytes, m.ckpts, m.ckptFailures, m.ckptBytes, m.ckptSeconds, m.ckptLocked, m.restores, m.assigned, m.watermark, m.lag, m.ckptTime, m.salted, groupDropped, m.groupLists, m.topicsHours, m.topicsBaseline, m.capped, capUncapped} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("speed metrics: %w", err)
		}
	}
	return m, nil
}
