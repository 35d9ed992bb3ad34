-- Cluster variant of ../002_batch.sql (`trending migrate --cluster NAME`).
--
-- The rollups are the large tables (at 10x an hour holds up to 300 million items:
-- docs/scale-out.md), so they are sharded by item: each shard keeps rollup_x_local, a ReplicatedMergeTree
-- replicated within the shard ({shard} and {replica} are the server's macros), and
-- rollup_x is a Distributed table over them with the same columns, for reads. Sharding by
-- cityHash64(item_id) puts all of an item's rows on one shard, so a shard's top list is exact
-- for its items and the global top K is the merge of the shards' top lists: the same argument
-- as partitioning the log by item.
--
-- Writes go to the _local tables (a partition is replaced per shard); reads go to rollup_x.
-- rollup_meta is small and, like serving_lists, fully replicated on every node.
-- ${CLUSTER} and ${DB} are filled in by migrate.

CREATE TABLE IF NOT EXISTS rollup_hour_local ON CLUSTER ${CLUSTER} (
    hour     DateTime('UTC'),
    item_id  String,
    views    UInt64
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/${DB}/rollup_hour_local', '{replica}')
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, item_id);

CREATE TABLE IF NOT EXISTS rollup_hour ON CLUSTER ${CLUSTER} (
    hour     DateTime('UTC'),
    item_id  String,
    views    UInt64
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_hour_local, cityHash64(item_id));

CREATE TABLE IF NOT EXISTS rollup_day_local ON CLUSTER ${CLUSTER} (
    day      Date,
    item_id  String,
    views    UInt64
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/${DB}/rollup_day_local', '{replica}')
PARTITION BY toYYYYMM(day)
ORDER BY (day, item_id);

CREATE TABLE IF NOT EXISTS rollup_day ON CLUSTER ${CLUSTER} (
    day      Date,
    item_id  String,
    views    UInt64
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_day_local, cityHash64(item_id));

CREATE TABLE IF NOT EXISTS rollup_month_local ON CLUSTER ${CLUSTER} (
    month    Date,
    item_id  String,
    views    UInt64
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/${DB}/rollup_month_local', '{replica}')
PARTITION BY toYear(month)
ORDER BY (month, item_id);

CREATE TABLE IF NOT EXISTS rollup_month ON CLUSTER ${CLUSTER} (
    month    Date,
    item_id  String,
    views    UInt64
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_month_local, cityHash64(item_id));

CREATE TABLE IF NOT EXISTS rollup_meta ON CLUSTER ${CLUSTER} (
    level        String,
    start        DateTime('UTC'),
    version      Int64,
    fingerprint  String,
    through      DateTime('UTC'),
    input_rows   UInt64,
    items        UInt64,
    views        UInt64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/${DB}/rollup_meta', '{replica}', version)
PARTITION BY level
ORDER BY (level, start);
