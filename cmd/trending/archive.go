package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"trending/archive"
	"trending/internal/eventlog"
	"trending/internal/objstore"
)

func init() { subcommands = append(subcommands, newArchiveCommand) }

// archiveFieldFlags are the flags of the archive.Config fields `archive` sets.
var archiveFieldFlags = map[string]string{
	"GroupID": "--consumer-group", "Root": "--archive-root", "RollBytes": "--roll-bytes", "RollAge": "--roll-age",
	"MaxBufferBytes": "--max-buffer", "RowGroupRows": "--row-group-rows", "RetryMax": "--retry-max",
	"StopTimeout": "--stop-timeout", "MaxFuture": "--max-future",
}

func newArchiveCommand() *cobra.Command {
	cfg := archive.DefaultConfig()
	var (
		metricsAddr          string
		partitions           int
		rollBytes, maxBuffer float64
	)
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
	fs := cmd.Flags()
	kf := addKafkaFlags(fs, "127.0.0.1:39092", "Kafka bootstrap brokers, comma separated")
	cfg.GroupID = ""
	addGroupFlag(fs, &cfg.GroupID, "archive")
	addPartitionsFlag(fs, &partitions, 8, "partitions of the input topic when it has to be created")
	addArchiveRootFlag(fs, &cfg.Root, cfg.Root)
	rollBytes, maxBuffer = float64(cfg.RollBytes), float64(cfg.MaxBufferBytes)
	fs.Var(bytesFlag{&rollBytes}, "roll-bytes", "roll a partition's buffer at this many message bytes, such as 64MiB")
	fs.DurationVar(&cfg.RollAge, "roll-age", cfg.RollAge, "roll a partition's buffer once its oldest event waited this long")
	fs.Var(bytesFlag{&maxBuffer}, "max-buffer", "message bytes buffered over all partitions before the largest rolls early")
	fs.Int64Var(&cfg.RowGroupRows, "row-group-rows", cfg.RowGroupRows, "rows per Parquet row group")
	fs.DurationVar(&cfg.RetryMax, "retry-max", cfg.RetryMax, "longest wait between S3 retries")
	fs.DurationVar(&cfg.StopTimeout, "stop-timeout", cfg.StopTimeout, "how long a graceful stop may spend uploading buffers")
	addMaxFutureFlag(fs, &cfg.MaxFuture)
	addMetricsAddrFlag(fs, &metricsAddr, "127.0.0.1:9466")
	s3f := addS3Settings(fs, "http://127.0.0.1:39000", "S3 API URL (MinIO, or empty for AWS S3)")

	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		a := appFrom(cmd.Context())
		kc, err := kf.client(cmd)
		if err != nil {
			return err
		}
		names := kf.names()
		cfg.Kafka, cfg.Topic = kc, names.Views
		if cfg.GroupID == "" {
			cfg.GroupID = names.ArchiveGroup
		}
		cfg.RollBytes, cfg.MaxBufferBytes = int64(rollBytes), int64(maxBuffer)
		if partitions < 1 {
			return usagef("--partitions %d: must be at least 1", partitions)
		}
		if _, err := maxFuture(cfg.MaxFuture); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return usageOf(err, archiveFieldFlags)
		}
		obj, err := objstore.New(cmd.Context(), s3f.config())
		if err != nil {
			return usageOf(err, nil)
		}
		arch, err := archive.New(cfg, obj, a.log, a.registry)
		if err != nil {
			return usageOf(err, archiveFieldFlags)
		}
		if _, err := kc.EnsureTopics(cmd.Context(), eventlog.Spec{Name: cfg.Topic, Partitions: partitions}); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		metrics, err := metricsRole(metricsAddr, a)
		if err != nil {
			return err
		}
		return runProcess(cmd.Context(), a.log, stage{{"archive", arch.Run}}, metrics)
	}
	return cmd
}
