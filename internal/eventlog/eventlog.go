// Package eventlog is trending's glue to the log (Kafka): the topics it uses, creating them
// when missing, and an embedded Kafka-protocol broker (kfake) for `make run` and fast tests.
// Producers and consumers use kafka-go through a Client (client.go): the brokers with their
// TLS and SASL (security.go), one value built by the command and passed to every component,
// on one code path for the real cluster and the embedded broker. The package functions
// taking a broker list are the plaintext Client's (Plain), for tests and local tools.
//
// In detail (DESIGN.md's file map has the line): `client.go`: the one Kafka `Client` value
// of a process (brokers, TLS, SASL: dialer and transport settings built once, every broker
// tried), its readers, consumer groups, writers and admin calls, and `NamesFor` (the DLQ,
// partials topic, the two-level merge's top topic, the hot set's topic and consumer groups
// derived from the input topic); create-when-missing (`Spec.Compact` for a compacted
// topic), the embedded kfake broker; `SourceBalancer` (a partial goes to partials
// partition p mod G by its `trending-source` header); `errors.go`: `Retryable` and
// `ErrUnrecoverable`, the one classification of Kafka failures every role's retry loop
// uses; `health.go`: `Health`, a role's view of the brokers (up or down, one log line per
// change, the gauge `trending_kafka_up{role}`, giving up on an unrecoverable error) and
// `Backoff`; `partition.go`: `PartitionReader`, one partition read from its leader a fetch
// response at a time on the caller's goroutine (kafka-go's `Conn.ReadBatch`; no reader
// goroutine, channel or lock per message, half the CPU of `kafka.Reader`), retrying what
// it can outlast and skipping to the log's start as `kafka.Reader` does; `security.go`:
// Kafka TLS and SASL (plain; SCRAM-SHA-256/512 through kafka-go's `sasl/scram`).
// kafka-go's package defaults (`DefaultDialer`, `DefaultTransport`) are never changed
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"
	"trending/internal/setting"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// Topic and consumer group names of the default input topic (ARCHITECTURE.md data flow);
// NamesFor derives them for any input topic.
const (
	TopicViews    = "views"             // key = item_id, value = one JSON event
	TopicDLQ      = "views.dlq"         // invalid events, original bytes, reason header
	TopicPartials = "trending.partials" // per-partition top m*K lists for the merger
	// TopicPartialsTop holds the shard mergers' partials for the top merger (a two-level
	// merge).
	TopicPartialsTop = "trending.partials.top"
	TopicSalted      = "views.salted" // the hot set producers share (compacted, key = item)

	GroupSpeed   = "trending-speed"   // the speed workers
	GroupArchive = "trending-archive" // the archiver
)

// Spec describes one topic to ensure.
type Spec struct {
	Name       string
	Partitions int
	// Replication defaults to 1 (one broker); production sets 3.
	Replication int
	// Compact makes a new topic compacted (cleanup.policy=compact): it keeps the newest
	// message of every key, for good.
	Compact bool
}

// ErrNotAllowed is returned when a topic is missing and the broker refused to create it.
var ErrNotAllowed = errors.New("not allowed to create topic")

// EnsureTopics creates every missing topic. An existing topic with fewer partitions than
// asked is left alone (partitions are never changed behind an operator's back) but reported
// in the returned map of actual partition counts. It is Plain(brokers...).EnsureTopics.
func EnsureTopics(ctx context.Context, brokers []string, specs ...Spec) (map[string]int, error) {
	if len(brokers) == 0 {
		return nil, setting.Invalid("Brokers", "no Kafka brokers")
	}
	return Plain(brokers...).EnsureTopics(ctx, specs...)
}

func ensureTopics(ctx context.Context, c *Client, specs ...Spec) (map[string]int, error) {
	conn, err := c.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	actual, err := partitionCounts(conn, names...)
	if err != nil {
		return nil, err
	}
	var create []kafka.TopicConfig
	for _, s := range specs {
		if _, ok := actual[s.Name]; ok {
			continue
		}
		if s.Partitions < 1 {
			return nil, fmt.Errorf("topic %s: partitions %d: must be at least 1", s.Name, s.Partitions)
		}
		rf := s.Replication
		if rf == 0 {
			rf = 1
		}
		tc := kafka.TopicConfig{Topic: s.Name, NumPartitions: s.Partitions, ReplicationFactor: rf}
		if s.Compact {
			// Retention off: a compacted topic keeps the newest message of every key for good,
			// also on a broker whose default retention trims (the embedded one with Retain,
			// which applies retention to every topic).
			tc.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"},
				{ConfigName: "retention.ms", ConfigValue: "-1"}, {ConfigName: "retention.bytes", ConfigValue: "-1"}}
		}
		create = append(create, tc)
	}
	if len(create) > 0 {
		ctrl, err := conn.Controller()
		if err != nil {
			return nil, fmt.Errorf("find Kafka controller: %w", err)
		}
		cc, err := c.dialer.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
		if err != nil {
			return nil, fmt.Errorf("dial Kafka controller: %w", err)
		}
		defer cc.Close()
		if err := cc.CreateTopics(create...); err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			if errors.Is(err, kafka.TopicAuthorizationFailed) || errors.Is(err, kafka.ClusterAuthorizationFailed) || errors.Is(err, kafka.PolicyViolation) {
				return nil, fmt.Errorf("%w: %v: create the topics %s yourself or grant CreateTopics", ErrNotAllowed, err, topicList(create))
			}
			return nil, fmt.Errorf("create topics %s: %w", topicList(create), err)
		}
		// Metadata for a new topic propagates asynchronously: wait until every partition of
		// every topic has a leader that answers, or the first produce fails with
		// UnknownTopicOrPartition or NotLeaderForPartition.
		deadline := time.Now().Add(30 * time.Second)
		for {
			actual, err = partitionCounts(conn, names...)
			if err == nil && len(actual) == len(specs) && leadersReady(ctx, c, conn, create, actual) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("created topics %s but they did not appear within 30s", topicList(create))
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return actual, nil
}

// leadersReady reports whether every partition of the new topics has a leader that accepts a
// connection for it. A topic another process created first (with its own partition count:
// two roles starting together) is waited for with the count it has.
func leadersReady(ctx context.Context, c *Client, conn *kafka.Conn, created []kafka.TopicConfig, actual map[string]int) bool {
	for _, tc := range created {
		parts, err := conn.ReadPartitions(tc.Topic)
		if err != nil || len(parts) == 0 || len(parts) != actual[tc.Topic] {
			return false
		}
		for _, p := range parts {
			if p.Leader.Host == "" || p.Leader.ID < 0 {
				return false
			}
			lc, err := c.dialer.DialLeader(ctx, "tcp", net.JoinHostPort(p.Leader.Host, strconv.Itoa(p.Leader.Port)), tc.Topic, p.ID)
			if err != nil {
				return false
			}
			_, err = lc.ReadLastOffset()
			lc.Close()
			if err != nil {
				return false
			}
		}
	}
	return true
}

func topicList(cfgs []kafka.TopicConfig) string {
	s := ""
	for i, c := range cfgs {
		if i > 0 {
			s += ", "
		}
		s += c.Topic
	}
	return s
}

// partitionCounts returns the partition count of each named topic that exists.
func partitionCounts(conn *kafka.Conn, names ...string) (map[string]int, error) {
	parts, err := conn.ReadPartitions(names...)
	out := map[string]int{}
	if err != nil {
		// ReadPartitions fails as a whole when one topic is unknown: ask one at a time.
		if !errors.Is(err, kafka.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("read Kafka metadata: %w", err)
		}
		for _, n := range names {
			p, err := conn.ReadPartitions(n)
			if errors.Is(err, kafka.UnknownTopicOrPartition) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read Kafka metadata for %s: %w", n, err)
			}
			out[n] = len(p)
		}
		return out, nil
	}
	for _, p := range parts {
		out[p.Topic]++
	}
	return out, nil
}

// Embedded is an in-process Kafka-protocol broker (kfake from franz-go): the log of
// `make run`. kafka-go talks to it exactly as to a real cluster.
type Embedded struct {
	cluster *kfake.Cluster
	// Addr is the broker address to give kafka-go.
	Addr string
	stop chan struct{}
	done chan struct{}
}

// EmbeddedOption tunes StartEmbedded.
type EmbeddedOption func(*embeddedOptions)

type embeddedOptions struct {
	retainFor   time.Duration
	retainBytes int64
	trimEvery   time.Duration
}

// Retain bounds the embedded broker's log as Kafka's log.retention.ms and
// log.retention.bytes do: each partition of a topic keeps its messages at most age after
// they were written and at most bytes, the oldest going first; 0 leaves that kind unbounded.
// Compacted topics (cleanup.policy=compact, created with retention off by EnsureTopics) are
// not trimmed. The broker trims every 10 seconds, deleting whole segment files from its data
// directory (segments are a quarter of bytes, so a partition holds at most 1.25 times
// bytes). A consumer further behind than the retention loses what was trimmed, as on
// Kafka: give it room (up keeps a day).
func Retain(age time.Duration, bytes int64) EmbeddedOption {
	return func(o *embeddedOptions) { o.retainFor, o.retainBytes = age, bytes }
}

// trimEvery sets how often a retaining broker trims (tests).
func trimEvery(d time.Duration) EmbeddedOption {
	return func(o *embeddedOptions) { o.trimEvery = d }
}

// StartEmbedded starts a one-broker cluster on port (0 = any free port), persisting to dir
// when dir is not empty so a restart keeps every topic, offset and committed group offset.
func StartEmbedded(dir string, port int, options ...EmbeddedOption) (*Embedded, error) {
	o := embeddedOptions{trimEvery: 10 * time.Second}
	for _, opt := range options {
		opt(&o)
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.GroupMinSessionTimeout(time.Second)}
	if dir != "" {
		opts = append(opts, kfake.DataDir(dir))
	}
	retain := o.retainFor > 0 || o.retainBytes > 0
	if retain {
		ms, bytes := int64(-1), int64(-1)
		if o.retainFor > 0 {
			ms = o.retainFor.Milliseconds()
		}
		if o.retainBytes > 0 {
			bytes = o.retainBytes
		}
		// Trimming deletes whole segments: they are a quarter of the byte bound (at most
		// 64 MiB), so a partition stays within 1.25 times it.
		segment := int64(64 << 20)
		if bytes > 0 {
			segment = min(segment, max(bytes/4, 16<<10))
		}
		opts = append(opts, kfake.BrokerConfigs(map[string]string{
			"log.retention.ms": strconv.FormatInt(ms, 10), "log.retention.bytes": strconv.FormatInt(bytes, 10),
			"log.segment.bytes": strconv.FormatInt(segment, 10)}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded Kafka: %w", err)
	}
	e := &Embedded{cluster: c, Addr: c.ListenAddrs()[0], stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		if !retain {
			return
		}
		t := time.NewTicker(o.trimEvery)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-t.C:
				c.ApplyRetention()
			}
		}
	}()
	return e, nil
}

// Close stops the broker (flushing its data directory).
func (e *Embedded) Close() {
	close(e.stop)
	<-e.done
	e.cluster.Close()
}

// NewWriter returns a kafka-go Writer for trending's topics: keyed by item (hash balancer, the
// same partitioning as the Java client's default for the keys we use), acks from all replicas,
// a 5 ms batch timeout (kafka-go's 1 s default would add a second to every synchronous
// write), and a transport of its own: kafka-go's shared default transport caches topic
// metadata, so a writer for a topic created after that cache was filled fails with
// UnknownTopicOrPartition until it refreshes. A writer of one topic asks the cluster for that
// topic's metadata only, not every topic's. topic may be empty when every message names its
// own. It is Plain(brokers...).NewWriter; a secured writer comes from Client.NewWriter.
func NewWriter(brokers []string, topic string) *Writer {
	return newWriter(Plain(brokers...), topic)
}

// newWriter returns a writer of topic, or with topic "" of the messages' own topics; a
// transport that asks for the metadata of topic, or of every topic in names when names are
// given, or else of every topic.
func newWriter(c *Client, topic string, names ...string) *Writer {
	tr := c.Transport()
	if topic != "" {
		tr.MetadataTopics = []string{topic}
	} else if len(names) > 0 {
		tr.MetadataTopics = slices.Clone(names)
	}
	return &Writer{&kafka.Writer{
		Addr: kafka.TCP(c.brokers...), Topic: topic, Balancer: &kafka.Hash{},
		BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll,
		Transport: tr,
	}}
}

// Writer is a kafka-go writer that owns its transport: Close closes both. kafka-go's
// Writer.Close leaves the Transport set on it open, and an open transport keeps, per broker
// it reached, a connection and a goroutine that reads the cluster's metadata every
// MetadataTTL for good (a process that opened a writer a minute held thousands of them).
type Writer struct {
	*kafka.Writer
}

// Close flushes and closes the writer, then its transport's connections and metadata
// refresh.
func (w *Writer) Close() error {
	err := w.Writer.Close()
	if tr, ok := w.Writer.Transport.(*kafka.Transport); ok {
		tr.CloseIdleConnections()
	}
	return err
}

// SourceHeader names the partition of the input topic a message is about (in decimal): a
// speed worker sets it on every partial it publishes, for SourceBalancer.
const SourceHeader = "trending-source"

// SourceBalancer places a message that carries SourceHeader (p) on partition p mod n of its
// topic's n partitions, and any other message by the hash of its key (kafka.Hash, the
// default). With it the partials of views partition p go to trending.partials partition
// p mod G, so the shard merger of partition g merges the views partitions {p : p mod G = g}
// (a two-level merge, docs/scale-out.md); with one partials partition nothing changes.
type SourceBalancer struct{ hash kafka.Hash }

// Balance implements kafka.Balancer.
func (b *SourceBalancer) Balance(msg kafka.Message, partitions ...int) int {
	for _, h := range msg.Headers {
		if h.Key != SourceHeader {
			continue
		}
		if p, err := strconv.Atoi(string(h.Value)); err == nil && p >= 0 && len(partitions) > 0 {
			return partitions[p%len(partitions)]
		}
	}
	return b.hash.Balance(msg, partitions...)
}

// Partitions returns the partition count of topic; 0 when it does not exist. It is
// Plain(brokers...).Partitions.
func Partitions(ctx context.Context, brokers []string, topic string) (int, error) {
	if len(brokers) == 0 {
		return 0, setting.Invalid("Brokers", "no Kafka brokers")
	}
	return partitions(ctx, Plain(brokers...), topic)
}

func partitions(ctx context.Context, c *Client, topic string) (int, error) {
	conn, err := c.Dial(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	got, err := partitionCounts(conn, topic)
	if err != nil {
		return 0, err
	}
	return got[topic], nil
}

// Offsets is one partition's offset range: First is the oldest offset the log still holds,
// Last the high watermark (the offset the next message will get). First == Last: the
// partition holds nothing.
type Offsets struct {
	Partition   int
	First, Last int64
}

// TopicOffsets returns the offset range of every partition of topic, by partition, asking
// the cluster's metadata for the partitions (so a partition that never received a message
// is there too). A topic that does not exist is an error. It is Plain(brokers...).TopicOffsets.
func TopicOffsets(ctx context.Context, brokers []string, topic string) ([]Offsets, error) {
	if len(brokers) == 0 {
		return nil, setting.Invalid("Brokers", "no Kafka brokers")
	}
	return topicOffsets(ctx, Plain(brokers...), topic)
}

func topicOffsets(ctx context.Context, kc *Client, topic string) ([]Offsets, error) {
	// A transport of the one topic's metadata, closed when done: an open one keeps a
	// connection and a metadata refresh running for good, and the archive asks every few
	// seconds.
	tr := kc.Transport()
	tr.MetadataTopics = []string{topic}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(kc.brokers...), Transport: tr, Timeout: 10 * time.Second}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("read Kafka metadata of %s: %w", topic, err)
	}
	var parts []kafka.Partition
	for _, t := range meta.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("read Kafka metadata of %s: %w", topic, t.Error)
		}
		parts = t.Partitions
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("read Kafka metadata of %s: %w", topic, kafka.UnknownTopicOrPartition)
	}
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	res, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	out := make([]Offsets, 0, len(parts))
	for _, po := range res.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("list offsets of %s partition %d: %w", topic, po.Partition, po.Error)
		}
		out = append(out, Offsets{Partition: po.Partition, First: po.FirstOffset, Last: po.LastOffset})
	}
	if len(out) != len(parts) {
		return nil, fmt.Errorf("list offsets of %s: %d of %d partitions answered", topic, len(out), len(parts))
	}
	slices.SortFunc(out, func(a, b Offsets) int { return a.Partition - b.Partition })
	return out, nil
}
