-- The batch layer's trending-topics rollups (docs/topics.md, batch/topics.go): exact counted
-- weight per (region, topic) per UTC hour (the topic is the event's item_id), in tenths of
-- a mention (an established account 10, a new one 3), after the batch's rules (each (partition, offset) once, blocklist, a
-- (user, topic) once per 15-minute slot). region is the archived region ("" for none); a
-- list sums the rows of its region, the worldwide list every row.
--
-- Replaced a day's partition at a time with REPLACE PARTITION, like rollup_hour; what each
-- hour was built from is recorded in rollup_meta under level 'topics_hour'.
CREATE TABLE IF NOT EXISTS topics_hour (
    hour        DateTime('UTC'),
    region      String,
    item_id     String,
    tenths      UInt64,
    new_tenths  UInt64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(hour)
ORDER BY (hour, region, item_id);
