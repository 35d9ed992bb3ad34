-- Honest labels (issue 13): every served list says what it is. status is live, provisional or
-- exact (store.Status), dropped_late the events of a calendar window the speed layer could
-- not count. Both repeat fields of the body's JSON, so that the table can be queried by them;
-- readers take the body. Rows written before this migration keep the defaults ('' and 0),
-- and their bodies have no status: the store reads them with store.List.Normalize.
--
-- ADD COLUMN with a DEFAULT changes only the table's metadata (old parts read the default),
-- works on 18.16 and current ClickHouse alike, and Apply skips a column that already exists,
-- so a run cut short and repeated is harmless.
ALTER TABLE serving_lists ADD COLUMN status String DEFAULT '' AFTER source;
ALTER TABLE serving_lists ADD COLUMN dropped_late UInt64 DEFAULT 0 AFTER status;
