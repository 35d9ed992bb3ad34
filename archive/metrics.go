package archive

import (
	"github.com/prometheus/client_golang/prometheus"

	"trending/model/event"
)

// metrics are the archiver's Prometheus series, all prefixed trending_archive_.
type metrics struct {
	events          prometheus.Counter
	bytes           prometheus.Counter
	objects         *prometheus.CounterVec // kind: parquet, quarantine, progress
	uploadFailures  prometheus.Counter
	uploadRetries   prometheus.Counter
	stalled         prometheus.Gauge
	quarantined     *prometheus.CounterVec // reason
	rolls           *prometheus.CounterVec // why: size, age, memory, stop
	commitFailures  prometheus.Counter
	discarded       prometheus.Counter
	bufferBytes     prometheus.Gauge
	bufferEvents    prometheus.Gauge
	lag             *prometheus.GaugeVec // partition
	consumerLag     *prometheus.GaugeVec // partition
	refreshFailures prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "trending", "archive"
	m := &metrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "events_total",
			Help: "Valid events written to Parquet objects that uploaded successfully."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "uploaded_bytes_total",
			Help: "Bytes of objects uploaded successfully (Parquet, quarantine and progress)."}),
		objects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "objects_total",
			Help: "Objects uploaded successfully, by kind (parquet, quarantine, progress, dirty: a late-data marker)."}, []string{"kind"}),
		uploadFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "upload_failures_total",
			Help: "Failed S3 requests (uploads and progress reads); each is retried."}),
		uploadRetries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "upload_retries_total",
			Help: "S3 requests retried after a failure."}),
		stalled: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "stalled",
			Help: "1 while the archiver is retrying S3 and so neither fetching nor committing."}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "quarantined_total",
			Help: "Invalid messages written to quarantine, by event.Reason."}, []string{"reason"}),
		rolls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rolls_total",
			Help: "Partition buffers rolled to S3, by what triggered the roll."}, []string{"why"}),
		commitFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "commit_failures_total",
			Help: "Offset commits Kafka refused after a successful upload; the next roll's commit covers them."}),
		discarded: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "rewound_total",
			Help: "Partition buffers dropped because Kafka rewound the partition (a rebalance); the messages are fetched again."}),
		bufferBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "buffer_bytes",
			Help: "Message bytes buffered in memory, not yet uploaded."}),
		bufferEvents: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "buffer_messages",
			Help: "Messages buffered in memory, not yet uploaded."}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "lag_messages",
			Help: "Messages in the partition after the last one fetched (high watermark - offset - 1), as of that fetch: it does not move while nothing is fetched (see consumer_lag)."}, []string{"partition"}),
		consumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "consumer_lag",
			Help: "Messages of each partition this archiver consumes not yet fetched: the high watermark minus the next offset to process, at every fetch and at every refresh from Kafka's high watermark, so it grows while fetching stalls. A partition is reported from its first message after a consumer-group rebalance."}, []string{"partition"}),
		refreshFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "refresh_failures_total",
			Help: "Failed refreshes of the partition count and caught-up markers (Kafka offsets or S3); they only delay completeness."}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.bytes, m.objects, m.uploadFailures, m.uploadRetries, m.stalled,
			m.quarantined, m.rolls, m.commitFailures, m.discarded, m.bufferBytes, m.bufferEvents, m.lag, m.consumerLag, m.refreshFailures)
	}
	// Pre-create label values so dashboards see zeros rather than gaps.
	for _, r := range append(event.Reasons(), event.ReasonFutureTS) {
		m.quarantined.WithLabelValues(string(r))
	}
	for _, k := range []string{kindParquet, kindQuarantine, kindProgress, kindDirty} {
		m.objects.WithLabelValues(k)
	}
	for _, w := range []string{whySize, whyAge, whyMemory, whyStop} {
		m.rolls.WithLabelValues(w)
	}
	return m
}

const (
	kindParquet    = "parquet"
	kindQuarantine = "quarantine"
	kindProgress   = "progress"
	kindDirty      = "dirty"

	whySize   = "size"
	whyAge    = "age"
	whyMemory = "memory"
	whyStop   = "stop"
)
