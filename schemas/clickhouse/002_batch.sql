-- The batch layer (batch/): exact per-item rollups of closed windows.
--
-- Each level is replaced one partition at a time: a recompute builds the whole partition in
-- a staging table (CREATE TABLE ... AS rollup_x) and swaps it in with
-- ALTER TABLE rollup_x REPLACE PARTITION p FROM staging, so a reader sees the old or the new
-- partition, never half of one, and a rerun leaves the same rows.
--
-- Day and month are sums over the level below, never rescans of raw events: a month costs
-- about 30 days of rollups, and all time costs one row per item per month.

-- Exact views per item per UTC hour, from the deduplicated archive. One partition per day.
CREATE TABLE IF NOT EXISTS rollup_hour (
    hour     DateTime('UTC'),
    item_id  String,
    views    UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, item_id);

-- Sum of a day's 24 hour rollups. One partition per month.
CREATE TABLE IF NOT EXISTS rollup_day (
    day      Date,
    item_id  String,
    views    UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (day, item_id);

-- Sum of a month's day rollups (the running month to date while it is open). One partition
-- per year. All time is the sum over months.
CREATE TABLE IF NOT EXISTS rollup_month (
    month    Date,
    item_id  String,
    views    UInt64
) ENGINE = MergeTree()
PARTITION BY toYear(month)
ORDER BY (month, item_id);

-- Which archived inputs each rollup was built from: the archive fingerprint (hour) or the
-- fingerprint of the level below (day, month), so a later run can tell whether a rollup is
-- current or must be rebuilt because late data changed its inputs. The largest version
-- (build time, Unix ms) per (level, start) is the current record. through is where the
-- inputs end (the window's end; earlier for the month to date).
CREATE TABLE IF NOT EXISTS rollup_meta (
    level        String,
    start        DateTime('UTC'),
    version      Int64,
    fingerprint  String,
    through      DateTime('UTC'),
    input_rows   UInt64,
    items        UInt64,
    views        UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY level
ORDER BY (level, start);
