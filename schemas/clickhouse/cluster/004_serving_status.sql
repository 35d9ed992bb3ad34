-- Cluster variant of ../004_serving_status.sql: the same columns. serving_lists is
-- replicated on every node (one replica set, not sharded), so it is altered on the node
-- migrate is connected to and replication alters the others: ON CLUSTER would run the ALTER
-- on every shard, where all but the first fail because the column is already there.
ALTER TABLE serving_lists ADD COLUMN status String DEFAULT '' AFTER source;
ALTER TABLE serving_lists ADD COLUMN dropped_late UInt64 DEFAULT 0 AFTER status;
