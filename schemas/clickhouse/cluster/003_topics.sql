-- Cluster variant of ../003_topics.sql (`trending migrate --cluster NAME`): sharded by
-- topic like the item rollups, so every region's row of a topic sits on one shard and a
-- shard's list of its topics is exact. Writes go to topics_hour_local, reads to topics_hour.
-- ${CLUSTER} and ${DB} are filled in by migrate.

CREATE TABLE IF NOT EXISTS topics_hour_local ON CLUSTER ${CLUSTER} (
    hour        DateTime('UTC'),
    region      String,
    item_id     String,
    tenths      UInt64,
    new_tenths  UInt64
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/${DB}/topics_hour_local', '{replica}')
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, region, item_id);

CREATE TABLE IF NOT EXISTS topics_hour ON CLUSTER ${CLUSTER} (
    hour        DateTime('UTC'),
    region      String,
    item_id     String,
    tenths      UInt64,
    new_tenths  UInt64
) ENGINE = Distributed(${CLUSTER}, ${DB}, topics_hour_local, cityHash64(item_id));
