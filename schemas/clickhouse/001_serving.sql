-- The serving store (serving/store/clickhouse.go): one row per admitted write of a list.
--
-- A list is one row, so a reader sees a whole list or the previous one (an INSERT of one
-- block is atomic). Readers pick, per key, the row with the largest (ord, seq):
--   ord = (1 << 62 if an exact batch list of a calendar window) + version
--   seq = the writer's monotonic write sequence (Unix nanoseconds), the tie-breaker
-- which is the order store.Admit admits writes in, so a stale write that slipped past a
-- concurrent writer's check can never win a read. ReplacingMergeTree(ord) lets merges drop
-- superseded rows in the background; reads never rely on merges having happened.
--
-- win is the window kind (hour, day, month, all); live = 1 for the sliding lists (start is
-- then 0); body is the whole store.List as JSON.
CREATE TABLE IF NOT EXISTS serving_lists (
    win         String,
    start       DateTime('UTC'),
    live        UInt8,
    ord         UInt64,
    seq         UInt64,
    version     Int64,
    source      String,
    body        String,
    written_at  DateTime('UTC')
) ENGINE = ReplacingMergeTree(ord)
PARTITION BY toYYYYMM(start)
ORDER BY (win, start);
