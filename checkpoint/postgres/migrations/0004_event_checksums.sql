-- Version 4: each event carries the CRC-32C of its canonical encoding
-- (checkpoint.Checksum over seq, time, type and data), inserted with the
-- event and checked by every read. The build fills it in for the events
-- already stored (backfillChecksums in migrate.go) in the same transaction,
-- right after this statement, then makes the column NOT NULL.

ALTER TABLE events ADD COLUMN crc integer;
