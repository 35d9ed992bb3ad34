package eventlog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"
	"trending/internal/setting"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
)

// Client is the one Kafka connection value of a process: the bootstrap brokers and how to
// reach them (TLS, SASL), built once by the command and passed to every component. Nothing
// here touches kafka-go's package defaults (DefaultDialer, DefaultTransport): every reader,
// consumer group, writer and admin connection of trending takes its dialer or transport from
// a Client, so two clients with different security can live in one process (tests do).
//
// Every client tries every broker: a dial goes to the first that answers.
type Client struct {
	brokers  []string
	security Security
	tls      *tls.Config
	sasl     sasl.Mechanism
	dialer   *kafka.Dialer
}

// NewClient checks security and builds the TLS configuration and SASL mechanism once.
// brokers may not be empty.
func NewClient(brokers []string, security Security) (*Client, error) {
	if len(brokers) == 0 {
		return nil, setting.Invalid("Brokers", "no Kafka brokers")
	}
	if err := security.Validate(); err != nil {
		return nil, err
	}
	t, err := security.TLSConfig()
	if err != nil {
		return nil, err
	}
	m, err := security.Mechanism()
	if err != nil {
		return nil, err
	}
	return &Client{
		brokers: append([]string(nil), brokers...), security: security, tls: t, sasl: m,
		dialer: &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: t, SASLMechanism: m},
	}, nil
}

// Plain is a plaintext, unauthenticated client of brokers: the embedded broker, the local
// services and tests. It panics on no brokers (a programming error).
func Plain(brokers ...string) *Client {
	c, err := NewClient(brokers, Security{})
	if err != nil {
		panic("BUG: eventlog.Plain: " + err.Error())
	}
	return c
}

// Brokers returns the bootstrap brokers.
func (c *Client) Brokers() []string { return append([]string(nil), c.brokers...) }

// Security returns the security settings (String redacts the password).
func (c *Client) Security() Security { return c.security }

// Dialer returns the dialer of every reader, consumer group and admin connection: shared,
// not to be modified.
func (c *Client) Dialer() *kafka.Dialer { return c.dialer }

// Transport returns a new transport with the client's TLS and SASL and a metadata cache of
// its own (see NewWriter for why each writer needs its own). The caller closes it
// (CloseIdleConnections) when done: until then it keeps a connection and a metadata
// refresh goroutine per broker it reached.
func (c *Client) Transport() *kafka.Transport {
	return &kafka.Transport{MetadataTTL: 10 * time.Second, TLS: c.tls, SASL: c.sasl}
}

// Reader returns a kafka-go reader over the client's brokers and dialer; cfg's Brokers and
// Dialer are set here.
func (c *Client) Reader(cfg kafka.ReaderConfig) *kafka.Reader {
	cfg.Brokers, cfg.Dialer = c.Brokers(), c.dialer
	return kafka.NewReader(cfg)
}

// ConsumerGroup returns a kafka-go consumer group over the client's brokers and dialer;
// cfg's Brokers and Dialer are set here.
func (c *Client) ConsumerGroup(cfg kafka.ConsumerGroupConfig) (*kafka.ConsumerGroup, error) {
	cfg.Brokers, cfg.Dialer = c.Brokers(), c.dialer
	return kafka.NewConsumerGroup(cfg)
}

// Dial connects to the first broker that answers.
func (c *Client) Dial(ctx context.Context) (*kafka.Conn, error) {
	var errs []error
	for _, b := range c.brokers {
		conn, err := c.dialer.DialContext(ctx, "tcp", b)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("reach Kafka at %v: %w", c.brokers, errors.Join(errs...))
}

// NewWriter returns a writer for topic through this client (see the package's NewWriter).
func (c *Client) NewWriter(topic string) *Writer {
	return newWriter(c, topic)
}

// NewTopicsWriter returns a writer whose messages each name one of topics (the speed
// worker's partial lists and DLQ): its transport refreshes those topics' metadata only, not
// every topic's on the cluster (NewWriter("") does, every 10 s, for good).
func (c *Client) NewTopicsWriter(topics ...string) *Writer {
	return newWriter(c, "", topics...)
}

// EnsureTopics creates every missing topic (see the package's EnsureTopics).
func (c *Client) EnsureTopics(ctx context.Context, specs ...Spec) (map[string]int, error) {
	return ensureTopics(ctx, c, specs...)
}

// Partitions returns the partition count of topic; 0 when it does not exist.
func (c *Client) Partitions(ctx context.Context, topic string) (int, error) {
	return partitions(ctx, c, topic)
}

// TopicOffsets returns the offset range of every partition of topic (see the package's
// TopicOffsets).
func (c *Client) TopicOffsets(ctx context.Context, topic string) ([]Offsets, error) {
	return topicOffsets(ctx, c, topic)
}

// Names are the topics and consumer groups of one input topic, derived in one place
// (NamesFor) for every command: speed, merge, archive, serve and up agree on them without
// being told each name.
type Names struct {
	Views, DLQ, Partials     string
	SpeedGroup, ArchiveGroup string
	// PartialsTop is where shard mergers write for the top merger; Salted the producers'
	// shared hot set.
	PartialsTop, Salted string
}

// NamesFor derives the names from the input topic: the default topic keeps the historic
// names (views.dlq, trending.partials, trending.partials.top, views.salted, trending-speed,
// trending-archive); any other topic T gets T.dlq, T.partials, T.partials.top, T.salted,
// trending-speed-T and trending-archive-T, so two pipelines can share a cluster. An empty
// topic is the default.
func NamesFor(topic string) Names {
	if topic == "" || topic == TopicViews {
		return Names{Views: TopicViews, DLQ: TopicDLQ, Partials: TopicPartials, SpeedGroup: GroupSpeed, ArchiveGroup: GroupArchive,
			PartialsTop: TopicPartialsTop, Salted: TopicSalted}
	}
	return Names{Views: topic, DLQ: topic + ".dlq", Partials: topic + ".partials",
		SpeedGroup: GroupSpeed + "-" + topic, ArchiveGroup: GroupArchive + "-" + topic,
		PartialsTop: topic + ".partials.top", Salted: topic + ".salted"}
}
