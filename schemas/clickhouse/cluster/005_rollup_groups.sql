-- Cluster variant of ../005_rollup_groups.sql: the group column on every shard's local rollup
-- tables (ON CLUSTER: each shard's tables are its own, unlike serving_lists, which is one
-- replica set). A row of a group value lives with its item's other rows, on the shard
-- cityHash64(item_id) picks.
--
-- The Distributed tables over them hold no data, and 18.16 refuses ALTER ... ON CLUSTER of a
-- table that is not replicated on a cluster whose shards are ("Table rollup_hour isn't
-- replicated, but shard #1 is replicated according to its cluster definition"), so each is
-- dropped and created again with the column, on every node. migrate drops nothing but a
-- Distributed table (it checks the engine first).
ALTER TABLE rollup_hour_local ON CLUSTER ${CLUSTER} ADD COLUMN grp String DEFAULT '';
ALTER TABLE rollup_day_local ON CLUSTER ${CLUSTER} ADD COLUMN grp String DEFAULT '';
ALTER TABLE rollup_month_local ON CLUSTER ${CLUSTER} ADD COLUMN grp String DEFAULT '';

DROP TABLE IF EXISTS rollup_hour ON CLUSTER ${CLUSTER};
CREATE TABLE IF NOT EXISTS rollup_hour ON CLUSTER ${CLUSTER} (
    hour     DateTime('UTC'),
    item_id  String,
    views    UInt64,
    grp      String DEFAULT ''
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_hour_local, cityHash64(item_id));

DROP TABLE IF EXISTS rollup_day ON CLUSTER ${CLUSTER};
CREATE TABLE IF NOT EXISTS rollup_day ON CLUSTER ${CLUSTER} (
    day      Date,
    item_id  String,
    views    UInt64,
    grp      String DEFAULT ''
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_day_local, cityHash64(item_id));

DROP TABLE IF EXISTS rollup_month ON CLUSTER ${CLUSTER};
CREATE TABLE IF NOT EXISTS rollup_month ON CLUSTER ${CLUSTER} (
    month    Date,
    item_id  String,
    views    UInt64,
    grp      String DEFAULT ''
) ENGINE = Distributed(${CLUSTER}, ${DB}, rollup_month_local, cityHash64(item_id));
