// Package archive owns the raw-event archive: every event of the Kafka topic views kept as
// Parquet on S3, the immutable source of truth the batch layer recomputes closed windows from.
//
// The Archiver (archiver.go) is a consumer group of its own (trending-archive). It buffers
// events per partition, rolls a partition's buffer by size, by age, under memory pressure and
// on graceful stop, writes one Parquet object per event-time hour the roll touched, puts
// invalid messages under a quarantine prefix, records the partition's progress, and only then
// commits the Kafka offset. S3 being down stops it advancing; it never drops an event.
//
// The Reader (reader.go) is how the batch layer reads an hour back: deduplicated by
// (kafka_partition, kafka_offset), so an upload that was retried, or a roll repeated after a
// crash between upload and commit, never counts twice. It also says whether an hour is
// complete (Complete) and whether its contents changed (Fingerprint).
//
// Object layout, file schema, the dedup rule for other readers and the evolution rule are in
// docs/format/parquet.md; the schema's golden copy is schemas/parquet/views.schema.txt.
//
// In detail (DESIGN.md's file map has the line): `trending archive`: every event as
// Parquet on S3 by event-time hour, committed only after upload; the reader that
// deduplicates by (partition, offset), fingerprints and completeness (format
// (docs/format/parquet.md)); `sortrows.go`: a roll's rows into (ts, offset) order by
// keeping the in-order ones and merging the few late ones back; `fault.go`: the test-only
// `TRENDING_FAULT=archive-after-upload` crash between upload and commit; `retention.go`:
// how long raw events are kept (`trending archive retention`: lifecycle rules on the
// bucket, recorded in `views/_retention.json`; the batch refuses a window past it)
package archive
