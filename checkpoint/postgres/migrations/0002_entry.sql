-- Version 2: each session's summary is also kept as a compact binary entry
-- (entry.go), which List and Head decode many times faster than JSON. The
-- build fills it in from summary for every existing row (backfillEntries in
-- migrate.go) in the same transaction, right after this statement.

ALTER TABLE sessions ADD COLUMN entry bytea;
