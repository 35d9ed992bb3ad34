package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/speed/merge"
)

func init() { subcommands = append(subcommands, newMergeCommand) }

func newMergeCommand() *cobra.Command {
	var (
		topic, storeSpec, titles, metricsAddr string
		k, partitions                         int
		staleness, publishEvery               time.Duration
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
are reused. 'trending loadgen --metadata' writes such a file for its generated items.`,
		Example: `  trending merge --kafka 127.0.0.1:39092 --store clickhouse://127.0.0.1:39100/trending --titles titles.csv`,
		Args:    cobra.NoArgs,
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

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		if k < 1 || k > 1000 {
			return usagef("--k %d: must be 1..1000", k)
		}
		if staleness <= 0 || publishEvery <= 0 {
			return usagef("--staleness and --publish-every must be positive durations such as 3m or 5s")
		}
		src, err := merge.OpenTitles(titles)
		if err != nil {
			return usageOf(err, nil)
		}
		kc, err := kf.client(cmd)
		if err != nil {
			return err
		}
		if topic == "" {
			topic = kf.names().Partials
		}
		if partitions == 0 {
			n, err := kc.Partitions(cmd.Context(), kf.names().Views)
			if err != nil {
				return fmt.Errorf("merge: %w", err)
			}
			partitions = n // 0 when the topic does not exist yet: expect whatever reports
		}
		if _, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: topic, Partitions: 1}); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		st, err := openStore(storeSpec)
		if err != nil {
			return err
		}
		defer st.Close()
		ws, err := wsf.set()
		if err != nil {
			return err
		}
		mcfg := merge.DefaultConfig()
		mcfg.Windows = ws
		mcfg.K, mcfg.Partitions, mcfg.Staleness, mcfg.Titles, mcfg.Store, mcfg.Log, mcfg.Registry = k, partitions, staleness, src, st, a.log, a.registry
		m, err := merge.New(mcfg)
		if err != nil {
			return usageOf(err, nil)
		}
		metrics, err := metricsRole(metricsAddr, a)
		if err != nil {
			return err
		}
		a.log.Info("merger starting", "kafka", kc.Brokers(), "partials", topic, "store", redactDSN(storeSpec), "expected_partitions", partitions)
		return runProcess(cmd.Context(), a.log, stage{{"merge", func(ctx context.Context) error {
			rc := merge.DefaultRunConfig()
			// Lookback follows --staleness, as it always has: 2 x staleness + 1m.
			rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = kc, topic, publishEvery, 2*staleness+time.Minute
			return m.Run(ctx, rc)
		}}}, metrics)
	}
	return withClickHouseSecurity(cmd)
}

// addTitlesFlag adds --titles, the merger's titles source (merge, up).
func addTitlesFlag(fs *pflag.FlagSet, titles *string) {
	fs.StringVar(titles, "titles", "", "titles source for the lists: a .csv or .json file, or an http(s) URL (empty: no titles)")
}
