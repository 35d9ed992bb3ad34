package main

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/internal/titles"
)

// The flag groups every command builds its roles from. Each flag is registered by exactly
// one function in this package (TestEachFlagDefinedOnce checks it); a command that wants
// another default passes it, never redefines the flag. The groups:
//
//	addKafkaFlags       --kafka, --views-topic and the Kafka TLS and SASL flags: one eventlog.Client
//	addGroupFlag        --consumer-group (a role's consumer group, derived from --views-topic by default)
//	addPartitionsFlag   --partitions
//	addStoreFlag        --store (storeopen.go opens it)
//	addS3Settings       --s3-* (speed.go)
//	addWindowFlags      the speed core's windows (speed.go); addMaxFutureFlag --max-future
//	addTopicsFlags      trending topics (topicsflags.go)
//	addTitlesFlag       --titles: the items' titles of every writer of served lists (openTitles)
//	addAPIFlags         the serving API's flags (serve.go; apiFlags.config builds its configuration)
//	withClickHouseSecurity  --clickhouse-user/-password/-tls/-ca (security.go)

// kafkaFlags is the Kafka flag group: the brokers, the input topic every other name derives
// from (eventlog.NamesFor), and the security of every client.
type kafkaFlags struct {
	brokers, topic string
	sec            eventlog.Security
}

// addKafkaFlags adds --kafka (default defaultBrokers; brokersHelp says what it is for in
// this command), --views-topic and the security flags. The password is best given as
// TRENDING_KAFKA_PASSWORD (a Kubernetes Secret): a flag shows in the process list, and no
// file of ours holds it.
func addKafkaFlags(fs *pflag.FlagSet, defaultBrokers, brokersHelp string) *kafkaFlags {
	k := &kafkaFlags{}
	fs.StringVar(&k.brokers, "kafka", defaultBrokers, brokersHelp)
	fs.StringVar(&k.topic, "views-topic", eventlog.TopicViews, "the Kafka topic of view events (key = item_id, value = one JSON event; not to be confused with --topics, the trending-topics regions); the DLQ, the partials topic and the consumer groups are named after it: TOPIC.dlq, TOPIC.partials, trending-speed-TOPIC, trending-archive-TOPIC, except for the default (views.dlq, trending.partials, trending-speed, trending-archive)")
	fs.BoolVar(&k.sec.TLS, "kafka-tls", false, "connect to Kafka over TLS (system CAs unless --kafka-ca)")
	fs.StringVar(&k.sec.CAFile, "kafka-ca", "", "PEM file of the CAs that sign the brokers' certificates (implies --kafka-tls)")
	fs.StringVar(&k.sec.CertFile, "kafka-cert", "", "client certificate (PEM) for mutual TLS, with --kafka-key")
	fs.StringVar(&k.sec.KeyFile, "kafka-key", "", "client key (PEM) for mutual TLS, with --kafka-cert")
	fs.StringVar(&k.sec.SASLMechanism, "kafka-sasl", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512 (empty: none)")
	fs.StringVar(&k.sec.Username, "kafka-user", "", "SASL user")
	fs.StringVar(&k.sec.Password, "kafka-password", "", "SASL password; set it as TRENDING_KAFKA_PASSWORD rather than on the command line")
	return k
}

// set reports whether --kafka names any broker.
func (k *kafkaFlags) set() bool { return len(splitList(k.brokers)) > 0 }

// names returns the topics and groups derived from --views-topic.
func (k *kafkaFlags) names() eventlog.Names { return eventlog.NamesFor(k.topic) }

// client builds the process's one Kafka client from the flags; brokers overrides --kafka
// when given (up's embedded broker). Mistakes are reported by the flags to change.
func (k *kafkaFlags) client(cmd *cobra.Command, brokers ...string) (*eventlog.Client, error) {
	if len(brokers) == 0 {
		brokers = splitList(k.brokers)
	}
	if len(brokers) == 0 {
		return nil, usagef("--kafka: give at least one broker address, such as 127.0.0.1:39092")
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	c, err := eventlog.NewClient(brokers, k.sec)
	if err != nil {
		return nil, usagef("--kafka-tls/--kafka-ca/--kafka-cert/--kafka-key/--kafka-sasl/--kafka-user/--kafka-password: %v", err)
	}
	if k.sec.Enabled() {
		appFrom(cmd.Context()).log.Info("kafka security", "settings", k.sec.String())
	}
	return c, nil
}

// check reports security flags without --kafka (up's embedded broker speaks plain text).
func (k *kafkaFlags) check() error {
	if !k.set() && k.sec.Enabled() {
		return usagef("--kafka-tls/--kafka-ca/--kafka-cert/--kafka-sasl apply to an external --kafka; the embedded broker speaks plain text")
	}
	return nil
}

// addConsumerGroupFlag adds --consumer-group, the consumer group of role ("speed" or "archive");
// empty (the default) derives it from --views-topic. --group, its name before the lists per
// region (--groups), still works and says it is deprecated: beside --groups it read as one.
func addConsumerGroupFlag(fs *pflag.FlagSet, group *string, role string) {
	fs.StringVar(group, "consumer-group", "", "Kafka consumer group of the "+role+" role (default trending-"+role+", or trending-"+role+"-TOPIC for another --views-topic); must differ between roles: each group gets every event")
	fs.StringVar(group, "group", "", "")
	_ = fs.MarkDeprecated("group", "use --consumer-group (--groups is the regions with lists of their own)")
}

// addPartitionsFlag adds --partitions with this command's default and meaning.
func addPartitionsFlag(fs *pflag.FlagSet, p *int, def int, usage string) {
	fs.IntVar(p, "partitions", def, usage)
}

// addPartialsPartitionsFlag adds --partials-partitions: the partials topic's partitions when a
// role creates it (speed, merge).
func addPartialsPartitionsFlag(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "partials-partitions", 1, "partitions of the partials topic when it is created: G, the shard mergers of a two-level merge (1: one merger; give the speed workers and the mergers the same)")
}

// addStoreFlag adds --store, the serving store: def is this command's default ("" for up:
// DATA/serving.db).
func addStoreFlag(fs *pflag.FlagSet, spec *string, def, usage string) {
	if usage == "" {
		usage = "serving store: bolt:PATH (the embedded file store) or clickhouse://host:port/database"
	}
	fs.StringVar(spec, "store", def, usage)
}

// addClickHouseFlag adds --clickhouse, a ClickHouse DSN (migrate, batch); withClickHouseSecurity
// folds the credentials flags into it.
func addClickHouseFlag(fs *pflag.FlagSet, dsn *string, def, usage string) {
	fs.StringVar(dsn, "clickhouse", def, usage)
}

// addArchiveRootFlag adds --archive-root, the archive's key prefix in the bucket (archive, batch).
func addArchiveRootFlag(fs *pflag.FlagSet, root *string, def string) {
	fs.StringVar(root, "archive-root", def, "key prefix of the archive in the bucket")
}

// addMetricsAddrFlag adds --metrics-addr for commands without an API (metricsRole serves it).
func addMetricsAddrFlag(fs *pflag.FlagSet, addr *string, def string) {
	fs.StringVar(addr, "metrics-addr", def, "serve /metrics here (\"\" to disable)")
}

// addKFlag adds --k, the length of the lists a role writes (default 100).
func addKFlag(fs *pflag.FlagSet, k *int, usage string) {
	fs.IntVar(k, "k", 100, usage)
}

// addLatenessFlag adds --lateness: the speed core's allowed lateness, or the batch's.
func addLatenessFlag(fs *pflag.FlagSet, d *time.Duration, def time.Duration, usage string) {
	fs.DurationVar(d, "lateness", def, usage)
}

// The one-shot commands' arguments. Each means the same wherever it appears, so each is
// registered here once, with the command's default and wording passed in.

// addJSONFlag adds --json: print what (the report, the plan, the list) as JSON for machines.
func addJSONFlag(fs *pflag.FlagSet, asJSON *bool, what string) {
	fs.BoolVar(asJSON, "json", false, "print "+what+" as JSON")
}

// addForceFlag adds --force: also compute windows that are not closed yet (batch).
func addForceFlag(fs *pflag.FlagSet, force *bool, usage string) {
	fs.BoolVar(force, "force", false, usage)
}

// addStartFlag adds --start, where the command begins in event time (parseWhen's forms).
func addStartFlag(fs *pflag.FlagSet, start *string, def, usage string) {
	fs.StringVar(start, "start", def, usage)
}

// addSeedFlag adds --seed, the random seed of a generated stream: the same flags and seed
// give the same stream.
func addSeedFlag(fs *pflag.FlagSet, seed *int64, def int64) {
	*seed = def
	fs.Var(countFlag{seed}, "seed", "random seed: the same flags and seed give the same stream")
}

// addQueueFlag adds --queue, a local review queue file (JSON, docs/topics.md) instead of the
// shared queue in S3.
func addQueueFlag(fs *pflag.FlagSet, queue *string, usage string) {
	fs.StringVar(queue, "queue", "", usage)
}

// addSketchShapeFlags adds --sketch-width (default defWidth) and, where their pointers are
// not nil, --sketch-depth and --counter-bytes: the count-min sketch a speed worker runs, or
// the one a planner sizes (bytes per cell). The pointed-to depth and counter bytes hold
// their defaults.
func addSketchShapeFlags(fs *pflag.FlagSet, width *int, defWidth int, widthUsage string, depth *int, depthUsage string, counterBytes *int, counterUsage string) {
	fs.IntVar(width, "sketch-width", defWidth, widthUsage)
	if depth != nil {
		fs.IntVar(depth, "sketch-depth", *depth, depthUsage)
	}
	if counterBytes != nil {
		fs.IntVar(counterBytes, "counter-bytes", *counterBytes, counterUsage)
	}
}

// addTitlesFlag adds --titles, the one source of the items' titles and thumbnails of every
// writer of served lists (merge, batch, up); openTitles builds it.
func addTitlesFlag(fs *pflag.FlagSet, titles *string) {
	fs.StringVar(titles, "titles", "", "titles and thumbnails of the lists' items: a .csv or .json file, or an http(s) URL (empty: no titles); give the merger and the batch the same, so a list shows the same titles live and exact")
}

// openTitles builds the process's one titles.Attacher from --titles: the writers of served
// lists write through store.WithTitles(st, it), so they share its memory of the last known
// titles and its trending_title_failures_total.
func openTitles(spec string, a *app) (*titles.Attacher, error) {
	src, err := titles.Open(spec)
	if err != nil {
		return nil, usageOf(err, nil)
	}
	cfg := titles.DefaultConfig()
	cfg.Source, cfg.Log, cfg.Registry = src, a.log.With("part", "titles"), a.registry
	return titles.New(cfg)
}

// addByFlag adds --by: who decides, recorded with an operator's decision (topics review,
// moderation).
func addByFlag(fs *pflag.FlagSet, by *string) {
	fs.StringVar(by, "by", "", "who decides, recorded with the decision (default $USER)")
}

// addAllFlag adds --all: list decided entries too (topics review, moderation list).
func addAllFlag(fs *pflag.FlagSet, all *bool, usage string) {
	fs.BoolVar(all, "all", false, usage)
}
