// Package batch is the batch layer: it recomputes closed calendar windows exactly from the
// Parquet archive and writes their top-K lists to the serving store as source=batch, which
// supersedes the speed layer's approximate list ("approximate now, exact later":
// docs/requirements.md).
//
// It keeps full per-item rollups per level (hour, day, month), so a day is the sum of 24
// hour rollups and a month the sum of its day rollups, never a rescan of raw events; all
// time is the sum over months. Each rollup records the fingerprint of its inputs (the
// archive's per-hour fingerprint, combined upward), so a later run knows whether late data
// changed a closed window and rebuilds just that window and the windows above it.
//
// Two engines compute the rollups (Engine): ClickHouse (production; raw rows are loaded with
// columnar batch inserts, deduplicated by (kafka_partition, kafka_offset) and aggregated in
// SQL, each level swapped in a partition at a time with REPLACE PARTITION) and a Go-native
// one over the same archive reader with rollups in a bbolt file (the embedded mode, no
// ClickHouse). Both pass the same test suite.
//
// Trending topics (topics.go, docs/topics.md) are recomputed the same way: exact per-(region,
// topic) hour rollups with the archive fingerprint (and the rules': blocklist, account age,
// dedupe slot) recorded, the 7-day same-hour baseline summed from them, and one exact list
// per closed hour and list under model.TopicsKey(list, score) with the hour as start.
//
// The Runner plans windows, refuses open ones (ErrWindowOpen), builds what is stale,
// publishes lists with a Reconciliation against the speed list they replace, and reports
// status. `trending batch` is its command line.
//
// In detail (DESIGN.md's file map has the line): `trending batch`: exact recompute of
// closed calendar windows (ClickHouse engine, and a Go-native engine for the embedded
// mode), rollups hour -> day -> month, each holding every item's rows and those of each
// region with lists (ClickHouse: the `grp` column, 005; native: a second value per
// rollup), so a run publishes each closed window's list per region too (`Engine.Groups`,
// `TopK`/`Counts` by group; every value seen: the `--groups-max` with the most views; the
// hour fingerprint names the groups, so a change rebuilds), the ISO week summed from its
// seven day rollups when published (no rollup of its own, so no DDL: a range on
// `rollup_day`), only the configured windows published (`Config.Windows`; the rollups
// below them still built), reconciliation with the speed lists, the exact all-time base
// through the last closed day (`publishBase`); `clickhouse.go`: an archive hour loaded as
// one INSERT of `ChunkRows`-row blocks, each sent as soon as it is built so the server
// writes one while the next is read (`Load`); on a cluster (`ClickHouseConfig.Cluster`):
// raw rows inserted through a Distributed table sharded like the rollups, each shard's
// `rollup_x_local` partitions built and swapped on its own server, reads through the
// Distributed `rollup_x`; `topics.go`: the exact trending-topics lists of closed hours
// (per-(region, topic) hour rollups `topics_hour`, 7-day baselines, the deterministic
// abuse rules)
package batch
