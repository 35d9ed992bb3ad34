package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/objstore"
)

func init() { subcommands = append(subcommands, newArchiveCommand) }

// archiveFieldFlags are the flags of the archive.Config fields `archive` sets.
var archiveFieldFlags = map[string]string{
	"Root": "--archive-root", "RollBytes": "--roll-bytes", "RollAge": "--roll-age",
	"MaxBufferBytes": "--max-buffer", "RowGroupRows": "--row-group-rows", "RetryMax": "--retry-max",
	"StopTimeout": "--stop-timeout", "MaxFuture": "--max-future",
}

// archiveCommandFlags are archive's flags: the archiver's (archiveFlags) and the infra's.
type archiveCommandFlags struct {
	archive     *archiveFlags
	kf          *kafkaFlags
	s3          *s3Settings
	metricsAddr string
}

// addArchiveCommandFlags adds archive's flags.
func addArchiveCommandFlags(fs *pflag.FlagSet) *archiveCommandFlags {
	f := &archiveCommandFlags{archive: newArchiveFlags()}
	af := f.archive
	cfg := &af.cfg
	f.kf = addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	addConsumerGroupFlag(fs, &cfg.ConsumerGroup, "archive")
	addPartitionsFlag(fs, &af.partitions, 8, "partitions of the input topic when it has to be created")
	addArchiveRootFlag(fs, &cfg.Root, cfg.Root)
	fs.Var(bytesFlag{&af.rollBytes}, "roll-bytes", "roll a partition's buffer at this many message bytes, such as 64MiB")
	fs.DurationVar(&cfg.RollAge, "roll-age", cfg.RollAge, "roll a partition's buffer once its oldest event waited this long")
	fs.Var(bytesFlag{&af.maxBuffer}, "max-buffer", "message bytes buffered over all partitions before the largest rolls early")
	fs.Int64Var(&cfg.RowGroupRows, "row-group-rows", cfg.RowGroupRows, "rows per Parquet row group")
	fs.DurationVar(&cfg.RetryMax, "retry-max", cfg.RetryMax, "longest wait between S3 retries")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "how long a graceful stop may spend uploading buffers")
	addMaxFutureFlag(fs, &cfg.MaxFuture)
	addMetricsAddrFlag(fs, &f.metricsAddr, "127.0.0.1:9466")
	f.s3 = addS3Settings(fs, "http://127.0.0.1:39000", "S3 API URL (MinIO, or empty for AWS S3)")
	return f
}

func newArchiveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Archive every event of the views topic as Parquet on S3, exactly once for readers",
		Long: `archive joins its own consumer group (trending-archive) on the views topic and keeps every
raw event as Parquet on S3, the source of truth the batch layer recomputes from.

Per partition it buffers events and rolls them to S3 when the buffer reaches --roll-bytes,
when its oldest event has waited --roll-age, when all buffers together pass --max-buffer,
and on a graceful stop (Ctrl-C). A roll writes one object per event-time hour it touched:

  archive/views/dt=YYYY-MM-DD/hour=HH/pPPPP-oFIRST-oLAST.parquet
  archive/quarantine/dt=YYYY-MM-DD/pPPPP-oFIRST-oLAST.jsonl   invalid messages, raw bytes and reason
  archive/views/_progress/pPPPP.json                           archived offset and event-time watermark

and only then commits the Kafka offset. A crash between upload and commit archives those
offsets again; readers deduplicate by (kafka_partition, kafka_offset), so nothing counts
twice (docs/format/parquet.md). While S3 is unreachable it stops fetching, commits nothing,
retries with exponential backoff and logs each failure; nothing is lost.`,
		Example: `  # against the local services (make services-up)
  trending archive --kafka 127.0.0.1:39092 --s3-endpoint http://127.0.0.1:39000

  # smaller, more frequent files
  trending archive --roll-bytes 16MiB --roll-age 1m`,
		Args: cobra.NoArgs,
	}
	f := addArchiveCommandFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		kc, err := f.kf.client(cmd)
		if err != nil {
			return err
		}
		obj, err := objstore.New(cmd.Context(), f.s3.config())
		if err != nil {
			return usageOf(err, nil)
		}
		in := &infra{app: a, kc: kc, names: f.kf.names(), obj: obj, fieldFlags: archiveFieldFlags}
		arch, err := newArchiveRole(f.archive, in)
		if err != nil {
			return err
		}
		if _, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: in.names.Views, Partitions: f.archive.partitions}); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		metrics, err := metricsRole(f.metricsAddr, a)
		if err != nil {
			return err
		}
		return runProcess(cmd.Context(), a.log, stage{{"archive", arch.Run}}, metrics)
	}
	cmd.AddCommand(newArchiveRetentionCommand())
	return cmd
}

// newArchiveRetentionCommand is `trending archive retention`: how long the raw events are
// kept, as lifecycle rules on the bucket.
func newArchiveRetentionCommand() *cobra.Command {
	var days int
	var root string
	cmd := &cobra.Command{
		Use:   "retention",
		Short: "Keep the archive's raw events for --days (lifecycle rules on the bucket), or show what is kept",
		Long: `retention puts lifecycle rules on the bucket that delete the archive's Parquet files and
quarantine files --days after they were written (S3 and MinIO apply them once a day), and
records the retention beside the archive (archive/views/_retention.json), so the batch
refuses to recompute a window whose events are gone (its published list stays) instead of
publishing a wrong one. The progress markers, the topic manifest and the speed layer's
checkpoints (pruned by the workers themselves) are not affected. Without --days it prints
the rules in force. The embedded S3 of 'trending up' keeps no lifecycle rules.

Seed 004 keeps raw events about a year: docs/archive.md has the size that takes.`,
		Example: `  trending archive retention --days 365 --s3-endpoint http://127.0.0.1:39000
  trending archive retention --s3-endpoint http://127.0.0.1:39000     # what is kept`,
		Args: cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.IntVar(&days, "days", 0, fmt.Sprintf("keep raw events this many days (at least %d); 0 shows the rules in force", archive.MinRetentionDays))
	addArchiveRootFlag(fs, &root, archive.DefaultRoot)
	s3f := addS3Settings(fs, "http://127.0.0.1:39000", "S3 API URL of the archive's bucket (MinIO, or empty for AWS S3)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		obj, err := objstore.New(ctx, s3f.config())
		if err != nil {
			return usageOf(err, nil)
		}
		w := cmd.OutOrStdout()
		if days != 0 {
			if days < archive.MinRetentionDays {
				return usagef("--days %d: at least %d, so a month and the batch's nightly lookback stay recomputable", days, archive.MinRetentionDays)
			}
			r, err := archive.ApplyRetention(ctx, obj, root, days, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "the archive under %s/ keeps raw events %d days (applied %s)\n", root, r.Days, r.Applied.Format(time.RFC3339))
		}
		rules, err := obj.Expiries(ctx)
		if err != nil {
			return err
		}
		if len(rules) == 0 {
			fmt.Fprintf(w, "bucket %s: no lifecycle rules; every object is kept\n", obj.Bucket())
			return nil
		}
		fmt.Fprintf(w, "bucket %s lifecycle rules:\n", obj.Bucket())
		for _, r := range rules {
			fmt.Fprintf(w, "  %-30s objects under %-28s deleted %d days after they were written\n", r.ID, r.Prefix, r.Days)
		}
		return nil
	}
	return cmd
}
