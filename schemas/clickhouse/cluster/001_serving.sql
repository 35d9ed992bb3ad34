-- Cluster variant of ../001_serving.sql (`trending migrate --cluster NAME`): the same table,
-- columns and read rule, created on every node of the cluster.
--
-- serving_lists is small (one row per admitted list write, a few thousand rows a day), so it
-- is not sharded: every node holds a full replica. The ZooKeeper path has no {shard}, so all
-- nodes of all shards are replicas of one table; an insert on any node reaches every node and
-- a read stays local. The server's {replica} macro must be unique across the whole cluster
-- (the host name is the usual choice). ${CLUSTER} and ${DB} are filled in by migrate.
CREATE TABLE IF NOT EXISTS serving_lists ON CLUSTER ${CLUSTER} (
    win         String,
    start       DateTime('UTC'),
    live        UInt8,
    ord         UInt64,
    seq         UInt64,
    version     Int64,
    source      String,
    body        String,
    written_at  DateTime('UTC')
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/${DB}/serving_lists', '{replica}', ord)
PARTITION BY toYYYYMM(start)
ORDER BY (win, start);
