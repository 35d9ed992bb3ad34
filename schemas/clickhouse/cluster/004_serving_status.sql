-- Cluster variant of ../004_serving_status.sql: the same columns, added on every node
-- (serving_lists is replicated, not sharded, so there is no _local table to alter).
ALTER TABLE serving_lists ON CLUSTER ${CLUSTER} ADD COLUMN status String DEFAULT '' AFTER source;
ALTER TABLE serving_lists ON CLUSTER ${CLUSTER} ADD COLUMN dropped_late UInt64 DEFAULT 0 AFTER status;
