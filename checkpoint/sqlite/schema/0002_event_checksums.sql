-- Schema version 2: each event carries the CRC-32C of its canonical encoding
-- (checkpoint.Checksum over seq, time, type and data), written in the
-- transaction that writes the event and checked by every read. The build
-- fills it in for the events already stored (backfillChecksums in
-- schema.go) in the same transaction, right after this statement.

ALTER TABLE events ADD COLUMN crc INTEGER;
