package main

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"

	"trending/internal/eventlog"
	"trending/internal/modsync"
	"trending/internal/objstore"
	"trending/model/moderation"
	"trending/serving/store"
	"trending/speed/merge"
)

func init() { subcommands = append(subcommands, newMergeCommand) }

func newMergeCommand() *cobra.Command {
	var (
		topic, storeSpec, titles, metricsAddr string
		level, topTopic                       string
		k, partitions, shard, partialsN       int
		staleness, publishEvery               time.Duration
		moderated                             bool
	)
	cmd := &cobra.Command{
		Use:   "merge",
		Short: "Merge the speed workers' per-partition top lists into the served lists",
		Long: `merge reads trending.partials, keeps the newest list of every partition for every window,
and writes the global top k of each window to the serving store with a version (the as-of
minute). Because events are partitioned by item, the merge of per-partition lists is exact.

A partition whose list is missing, or older than --staleness behind the newest, is not
dropped: its last list is reused and the served list is marked partial, naming it.

The store refuses a version older than the one it holds, so a standby merger (run a second
'trending merge' anywhere) or one that paused and woke late can never regress a list.

Titles and thumbnails come from --titles: a CSV (item_id,title[,thumbnail_url]) or JSON
file (an object of id to a title or to {"title","thumbnail_url"}, or an array of
{"item_id","title","thumbnail_url"}), reloaded when it changes, or an http(s) endpoint
answering GET URL?ids=a,b,c with such an object; when the lookup fails, the previous titles
are reused. 'trending loadgen --metadata' writes such a file for its generated items. Give
'trending batch' the same --titles, so a closed window's exact list shows the titles its live
list had.

Two levels, for thousands of partitions (docs/scale-out.md, "How many mergers"): give the
partials topic G partitions (--partials-partitions, on the speed workers too, when it is
created; or kafka-topics.sh --alter); the workers put partition p's lists on partials
partition p mod G. Run G
shard mergers, '--level shard --shard g' for g in 0..G-1, each merging its partitions
into one list per window (its best 3 x k, every salted item summed, every member's version)
on --top-topic, and one '--level top' merger that writes the served lists from them, as one
merger would. A salted item's counts are summed at each level; versions only move forward
and the staleness rule applies to partitions at both. Standbys work at both levels.`,
		Example: `  trending merge --kafka 127.0.0.1:39092 --store clickhouse://127.0.0.1:39100/trending --titles titles.csv

  # 3,200 partitions: 32 shard mergers (g = 0..31) and one top merger
  trending merge --level shard --shard 7 --partials-partitions 32 --kafka kafka:9092
  trending merge --level top --partitions 3200 --kafka kafka:9092 --store clickhouse://ch:9000/trending`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	kf := addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	fs.StringVar(&topic, "partials-topic", "", "topic the speed workers publish their lists to (default: the one named after --views-topic, trending.partials for views)")
	addStoreFlag(fs, &storeSpec, "bolt:./data/serving.db", "")
	wsf := addWindowSetFlags(fs, "")
	addTitlesFlag(fs, &titles)
	addKFlag(fs, &k, "length of each served list (1..1000)")
	addPartitionsFlag(fs, &partitions, 0, "partitions expected to report (0: the input topic's partition count)")
	fs.DurationVar(&staleness, "staleness", 3*time.Minute, "a partition's list this far behind the newest is stale: reused and marked partial")
	addPublishEveryFlag(fs, &publishEvery, time.Second, "the longest a newer list waits to be merged and written (sooner once every live partition has sent one)")
	addMetricsAddrFlag(fs, &metricsAddr, "127.0.0.1:9465")
	fs.StringVar(&level, "level", "one", "one: merge every partials partition into the served lists; shard: merge partials partition --shard into shard lists on --top-topic; top: merge the shard lists of --top-topic into the served lists")
	fs.IntVar(&shard, "shard", -1, "with --level shard: the partials partition this shard merger merges (0 to the partials topic's partitions - 1)")
	// The names before lists per region were "groups" too (--level group, --group-index).
	fs.IntVar(&shard, "group-index", -1, "")
	_ = fs.MarkDeprecated("group-index", "use --shard")
	addPartialsPartitionsFlag(fs, &partialsN)
	addModerationFlag(cmd, &moderated)
	s3f := addS3Settings(fs, "http://127.0.0.1:39000", "with --moderation: S3 API URL of the bucket holding the shared moderation list (empty for AWS S3)")
	fs.StringVar(&topTopic, "top-topic", "", "topic of the shard mergers' lists, read by the top merger (default: the one named after --views-topic, trending.partials.top for views)")

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		if k < 1 || k > 1000 {
			return usagef("--k %d: must be 1..1000", k)
		}
		if staleness <= 0 || publishEvery <= 0 {
			return usagef("--staleness and --publish-every must be positive durations such as 3m or 5s")
		}
		if level == "group" {
			a.log.Warn("--level group is deprecated: use --level shard")
			level = "shard"
		}
		switch {
		case level != "one" && level != "shard" && level != "top":
			return usagef("--level %q: one, shard or top", level)
		case level == "shard" && shard < 0:
			return usagef("--level shard needs --shard: the partials partition this merger merges (0 to G-1)")
		case level != "shard" && shard >= 0:
			return usagef("--shard is for --level shard")
		case partialsN < 1:
			return usagef("--partials-partitions %d: at least 1", partialsN)
		}
		attach, err := openTitles(titles, a)
		if err != nil {
			return err
		}
		kc, err := kf.client(cmd)
		if err != nil {
			return err
		}
		if topic == "" {
			topic = kf.names().Partials
		}
		if topTopic == "" {
			topTopic = kf.names().PartialsTop
		}
		if partitions == 0 {
			n, err := kc.Partitions(cmd.Context(), kf.names().Views)
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			partitions = n // 0 when the topic does not exist yet: expect whatever reports
		}
		got, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: topic, Partitions: partialsN}, eventlog.Spec{Name: topTopic, Partitions: 1})
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		if level == "shard" && shard >= got[topic] {
			return usagef("--shard %d: %s has %d partitions (0..%d): raise them (kafka-topics.sh --alter --partitions %d), or run shard mergers 0..%d only",
				shard, topic, got[topic], got[topic]-1, shard+1, got[topic]-1)
		}
		ws, err := wsf.set()
		if err != nil {
			return err
		}
		mcfg := merge.DefaultConfig()
		mcfg.Windows = ws
		mcfg.K, mcfg.Partitions, mcfg.Staleness, mcfg.Log, mcfg.Registry = k, partitions, staleness, a.log, a.registry
		readTopic := topic
		switch level {
		case "shard":
			// A shard merger writes no list: its partials go to the top merger.
			gw := kc.NewWriter(topTopic)
			gw.Compression = kafka.Zstd
			defer gw.Close()
			mcfg.Group = merge.DefaultGroup(shard)
			mcfg.Group.Emit = merge.GroupWriter(gw, topTopic)
			mcfg.Partitions = 0 // the top merger names the missing partitions
		default:
			if level == "top" {
				readTopic = topTopic
			}
			st, err := openStore(storeSpec)
			if err != nil {
				return err
			}
			defer st.Close()
			mcfg.Store = store.WithTitles(st, attach)
		}
		var watch *modsync.Watcher
		var side []role
		if moderated && level != "shard" { // a shard merger's lists are not served: the top merger applies it
			obj, err := objstore.New(cmd.Context(), s3f.config())
			if err != nil {
				return usagef("%v", err)
			}
			var r role
			if watch, r, err = moderationWatcher(cmd.Context(), obj, a); err != nil {
				return err
			}
			mcfg.Removed, side = watch.Removed, append(side, r)
		}
		m, err := merge.New(mcfg)
		if err != nil {
			return usageOf(err, nil)
		}
		if watch != nil {
			watch.OnChange(func(*moderation.Set) { m.ModerationChanged() })
		}
		metrics, err := metricsRole(metricsAddr, a)
		if err != nil {
			return err
		}
		if level == "shard" {
			a.log.Info("shard merger starting", "kafka", kc.Brokers(), "reads", readTopic, "partition", shard, "writes", topTopic)
		} else {
			a.log.Info("merger starting", "level", level, "kafka", kc.Brokers(), "reads", readTopic, "store", redactDSN(storeSpec), "expected_partitions", partitions)
		}
		// The moderation watcher stops after the merger's last publish.
		return runProcess(cmd.Context(), a.log, stage{{"merge", func(ctx context.Context) error {
			rc := merge.DefaultRunConfig()
			// Lookback follows --staleness, as it always has: 2 x staleness + 1m.
			rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = kc, readTopic, publishEvery, 2*staleness+time.Minute
			return m.Run(ctx, rc)
		}}}, append(stage{}, side...), metrics)
	}
	return withClickHouseSecurity(cmd)
}
