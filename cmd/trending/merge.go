package main

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/internal/modsync"
	"trending/internal/objstore"
	"trending/model/moderation"
	"trending/speed/merge"
)

func init() { subcommands = append(subcommands, newMergeCommand) }

func newMergeCommand() *cobra.Command {
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
	f := addMergeCommandFlags(cmd.Flags())
	addModerationFlag(cmd, &f.moderated)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		mf := f.merge
		if mf.level == "group" {
			a.log.Warn("--level group is deprecated: use --level shard")
			mf.level = "shard"
		}
		switch {
		case mf.level != "one" && mf.level != "shard" && mf.level != "top":
			return usagef("--level %q: one, shard or top", mf.level)
		case mf.level == "shard" && mf.shard < 0:
			return usagef("--level shard needs --shard: the partials partition this merger merges (0 to G-1)")
		case mf.level != "shard" && mf.shard >= 0:
			return usagef("--shard is for --level shard")
		case mf.partialsN < 1:
			return usagef("--partials-partitions %d: at least 1", mf.partialsN)
		}
		// The flags are checked before anything is opened.
		if _, _, err := mergeConfig(mf, &infra{}); err != nil {
			return err
		}
		kc, err := f.kf.client(cmd)
		if err != nil {
			return err
		}
		in := &infra{app: a, kc: kc, names: f.kf.names()}
		topic, topTopic := cmp.Or(mf.topic, in.names.Partials), cmp.Or(mf.topTopic, in.names.PartialsTop)
		if mf.partitions == 0 {
			n, err := kc.Partitions(cmd.Context(), in.names.Views)
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			mf.partitions = n // 0 when the topic does not exist yet: expect whatever reports
		}
		got, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: topic, Partitions: mf.partialsN}, eventlog.Spec{Name: topTopic, Partitions: 1})
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		if mf.level == "shard" && mf.shard >= got[topic] {
			return usagef("--shard %d: %s has %d partitions (0..%d): raise them (kafka-topics.sh --alter --partitions %d), or run shard mergers 0..%d only",
				mf.shard, topic, got[topic], got[topic]-1, mf.shard+1, got[topic]-1)
		}
		if mf.level != "shard" {
			if in.attach, err = openTitles(f.titles, a); err != nil {
				return err
			}
			if in.st, err = openStore(f.storeSpec); err != nil {
				return err
			}
			defer in.st.Close()
		}
		mcfg, rc, err := mergeConfig(mf, in)
		if err != nil {
			return err
		}
		if mf.level == "shard" {
			// A shard merger writes no list: its partials go to the top merger.
			gw := kc.NewWriter(topTopic)
			gw.Compression = kafka.Zstd
			defer gw.Close()
			mcfg.Shard.Emit = merge.ShardWriter(gw, topTopic)
		}
		var watch *modsync.Watcher
		var side []role
		if f.moderated && mf.level != "shard" { // a shard merger's lists are not served: the top merger applies it
			obj, err := objstore.New(cmd.Context(), f.s3.config())
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
		metrics, err := metricsRole(f.metricsAddr, a)
		if err != nil {
			return err
		}
		if mf.level == "shard" {
			a.log.Info("shard merger starting", "kafka", kc.Brokers(), "reads", rc.Topic, "partition", mf.shard, "writes", topTopic)
		} else {
			a.log.Info("merger starting", "level", mf.level, "kafka", kc.Brokers(), "reads", rc.Topic, "store", redactDSN(f.storeSpec), "expected_partitions", mf.partitions)
		}
		// The moderation watcher stops after the merger's last publish.
		return runProcess(cmd.Context(), a.log, stage{{"merge", func(ctx context.Context) error { return m.Run(ctx, rc) }}}, append(stage{}, side...), metrics)
	}
	return withClickHouseSecurity(cmd)
}

// mergeCommandFlags are merge's flags: the merger's (mergeFlags) and the infra's.
type mergeCommandFlags struct {
	merge                          *mergeFlags
	kf                             *kafkaFlags
	s3                             *s3Settings // with --moderation: the bucket of the shared list
	storeSpec, titles, metricsAddr string
	moderated                      bool
}

// addMergeCommandFlags adds merge's flags.
func addMergeCommandFlags(fs *pflag.FlagSet) *mergeCommandFlags {
	f := &mergeCommandFlags{merge: newMergeFlags()}
	mf := f.merge
	f.kf = addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	fs.StringVar(&mf.topic, "partials-topic", "", "topic the speed workers publish their lists to (default: the one named after --views-topic, trending.partials for views)")
	addStoreFlag(fs, &f.storeSpec, "bolt:./data/serving.db", "")
	mf.windows = addWindowSetFlags(fs, "")
	addTitlesFlag(fs, &f.titles)
	addKFlag(fs, &mf.k, "length of each served list (1..1000)")
	addPartitionsFlag(fs, &mf.partitions, 0, "partitions expected to report (0: the input topic's partition count)")
	addStalenessFlag(fs, &mf.staleness, merge.DefaultStaleness, "a partition's list this far behind the newest is stale: reused and marked partial")
	addPublishEveryFlag(fs, &mf.publishEvery, mf.publishEvery, "the longest a newer list waits to be merged and written (sooner once every live partition has sent one)")
	addMetricsAddrFlag(fs, &f.metricsAddr, "127.0.0.1:9465")
	fs.StringVar(&mf.level, "level", "one", "one: merge every partials partition into the served lists; shard: merge partials partition --shard into shard lists on --top-topic; top: merge the shard lists of --top-topic into the served lists")
	fs.IntVar(&mf.shard, "shard", -1, "with --level shard: the partials partition this shard merger merges (0 to the partials topic's partitions - 1)")
	// The names before lists per region were "groups" too (--level group, --group-index).
	fs.IntVar(&mf.shard, "group-index", -1, "")
	_ = fs.MarkDeprecated("group-index", "use --shard")
	addPartialsPartitionsFlag(fs, &mf.partialsN)
	f.s3 = addS3Settings(fs, "http://127.0.0.1:39000", "with --moderation: S3 API URL of the bucket holding the shared moderation list (empty for AWS S3)")
	fs.StringVar(&mf.topTopic, "top-topic", "", "topic of the shard mergers' lists, read by the top merger (default: the one named after --views-topic, trending.partials.top for views)")
	return f
}

// addStalenessFlag adds --staleness, the merger's staleness (merge; up: 0 derives it from
// the workers' --publish-every, merge.StalenessFor).
func addStalenessFlag(fs *pflag.FlagSet, d *time.Duration, def time.Duration, usage string) {
	fs.DurationVar(d, "staleness", def, usage)
}
