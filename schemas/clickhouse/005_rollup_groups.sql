-- Lists per group value (issue 15; model/windowset.Groups, `--groups`): each rollup row says
-- which group's count it is. grp = '' is every event's count of the item, as before; grp =
-- a region is that region's events' count, kept for the regions that get lists. A build
-- writes both kinds into the same partition, so one REPLACE PARTITION swaps them together.
-- Reads of the lists of all items filter grp = ''; rollup_meta's items and views are of those
-- rows (the check against a resurrected partition reads them the same way).
--
-- ADD COLUMN with a DEFAULT changes only the tables' metadata (old parts read ''), works on
-- 18.16 and current ClickHouse alike, and Apply skips a column that already exists.
ALTER TABLE rollup_hour ADD COLUMN grp String DEFAULT '';
ALTER TABLE rollup_day ADD COLUMN grp String DEFAULT '';
ALTER TABLE rollup_month ADD COLUMN grp String DEFAULT '';
