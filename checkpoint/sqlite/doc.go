// Package sqlite is a checkpoint.Checkpointer that keeps session logs in one
// SQLite database file (or in memory), through modernc.org/sqlite: pure Go,
// no cgo. It is the store behind the command line's --session-db PATH, and
// the one to use when several processes on one host share sessions.
//
// # Durability and concurrency
//
// The database runs in WAL mode with synchronous=FULL: when Append returns
// nil, the WAL holding its events has been fsynced. Every write is one
// BEGIN IMMEDIATE transaction that checks the session's head and allocates
// the seqs, so a stale writer gets a *checkpoint.ConflictError and never
// clobbers the log. Concurrent writes of one Store (to any sessions) are
// batched by a group commit into one transaction and one fsync, each with
// its own head check and outcome. Several processes may open the same file:
// a call waits for a lock another process holds (busy_timeout, then
// retries) for up to Options.BusyTimeout, so SQLITE_BUSY never reaches the
// caller. Readers never block writers; Read pages through a log with short
// queries, so a slow reader holds no read transaction (and may call the
// store inside its loop). Each page re-reads the last event of the one
// before: a log truncated or deleted under a Read in progress ends it with
// a *checkpoint.ConflictError or ErrNotFound, never with two histories
// joined.
//
// When the last connection to the file closes, SQLite checkpoints the WAL
// into the database file, so a database at rest is whole in its main file;
// the -wal file (cut to zero bytes) and the -shm file stay beside it
// (SQLITE_FCNTL_PERSIST_WAL), so the next process reuses them instead of
// creating and deleting both, with a directory fsync each time. Close
// checkpoints explicitly only a WAL over 4 MiB (a long run beside other
// processes).
//
// # Files
//
// Open creates a missing database file with mode 0600 itself (the -wal and
// -shm files SQLite creates next to it take the same mode), then the
// schema. It never writes to a file that is not already a SQLite database:
// a directory, a file of other bytes, another program's database (told by
// PRAGMA application_id, or tables without our schema) and a database of a
// newer schema are refused with an error that says so. With
// Options.ReadOnly nothing is created or changed at all: with no -wal file
// the database is opened immutable, otherwise with its shared memory
// mapped read-only.
//
// # Schema
//
// The schema is created and migrated by the store: the SQL scripts in
// schema/ (embedded) run in order inside one transaction, and PRAGMA
// user_version records how many have run (a step may add a backfill
// written in Go, run in the same transaction). PRAGMA application_id is
// 0x6c697465 ("lite"). Version 2 (version 1 without events.crc):
//
//	CREATE TABLE sessions (
//	    id        TEXT    NOT NULL PRIMARY KEY,
//	    n         INTEGER NOT NULL UNIQUE, -- the session's number, in its events' keys
//	    namespace TEXT    NOT NULL,
//	    kind      TEXT    NOT NULL,  -- "" for conversations, "tasklist", …
//	    head      INTEGER NOT NULL,  -- the last seq
//	    messages  INTEGER NOT NULL,
//	    status    TEXT    NOT NULL,  -- new, running, completed, interrupted
//	    created   INTEGER NOT NULL,  -- unix microseconds, UTC
//	    updated   INTEGER NOT NULL,  -- unix microseconds, UTC
//	    title     TEXT    NOT NULL,
//	    summary   TEXT    NOT NULL,  -- the whole session.Summary as JSON
//	    entry     BLOB    NOT NULL   -- the same summary, packed (checkpoint/internal/entry)
//	) WITHOUT ROWID;
//	CREATE INDEX sessions_list ON sessions (namespace, updated DESC, id, kind, entry);
//
//	CREATE TABLE events (
//	    key  INTEGER PRIMARY KEY,    -- sessions.n << 32 | seq
//	    seq  INTEGER GENERATED ALWAYS AS (key & 4294967295) VIRTUAL,
//	    type TEXT    NOT NULL,       -- session.Type
//	    time INTEGER NOT NULL,       -- unix microseconds, UTC
//	    data BLOB,                   -- the event's JSON payload, byte for byte
//	    crc  INTEGER                 -- checkpoint.Checksum of the event (version 2)
//	);
//	CREATE VIEW session_events (session, seq, type, time, data) AS …;
//
// An event's primary key is (session, seq), packed into SQLite's rowid: the
// session's number n (allocated when the session is created, one more than
// the largest in use) in the high bits and the seq (1, 2, 3 … with no
// gaps, at most 2³²-1) in the low 32. A session's events therefore lie
// together, in seq order, in the table's only b-tree: an append inserts
// into one b-tree, a read is one range scan with each row stored whole
// (events up to about 4 KiB need no overflow page), and truncating or
// deleting a log is one range delete. The session_events view shows the
// events with their session's id, for people and tools.
//
// A session's row in sessions is written in the same transaction as every
// change to its events: Append folds the new events into the summary with
// session.Summary.Apply, Truncate recomputes it from the kept events, and
// Delete removes both. Head and List therefore never read events. The
// columns and the JSON are for people and tools (sqlite3 sessions.db
// "SELECT id, title FROM sessions"); the store itself reads the packed
// entry, which List finds in the sessions_list index without touching the
// table: newest first within a namespace, filtered by kind.
//
// Blobs (checkpoint.BlobStore: the prior content of files shell commands
// changed) live in their own table, created by the first PutBlobs and
// shared by every session; a database without it holds no blobs:
//
//	CREATE TABLE blobs (
//	    digest TEXT PRIMARY KEY,     -- SHA-256 of data, lower-case hex
//	    size   INTEGER NOT NULL,
//	    stored INTEGER NOT NULL,     -- unix nanoseconds of the first put
//	    data   BLOB NOT NULL
//	) WITHOUT ROWID;
//
// Folds (checkpoint.FoldKeeper: a session's saved state, derived) live in
// the folds table (fold.go), created by the first SaveFold and committed
// with synchronous=NORMAL, so without an fsync of their own:
//
//	CREATE TABLE folds (
//	    n     INTEGER PRIMARY KEY,   -- the session's number
//	    seq   INTEGER NOT NULL,      -- the last event the fold covers
//	    tag   TEXT    NOT NULL,      -- checkpoint.FoldCheck of that event
//	    state BLOB    NOT NULL       -- session.EncodeState
//	);
//
// The mailbox (checkpoint.Mailbox: calls of running turns waiting for a
// person, answered by any process) is a table of its own too, created by
// the first Post; Delete removes a session's entries with its log:
//
//	CREATE TABLE mailbox (
//	    session TEXT NOT NULL,
//	    call    TEXT NOT NULL,
//	    kind    TEXT NOT NULL,       -- "approval", "question": the caller's word
//	    request BLOB NOT NULL,
//	    answer  BLOB,                -- NULL while the call waits; set once
//	    posted  INTEGER NOT NULL,    -- unix microseconds
//	    PRIMARY KEY (session, call)
//	) WITHOUT ROWID;
//
// The search index (checkpoint.Searcher) is derived data outside the
// versioned schema, made and rebuilt from the logs by writable opens (see
// search.go): a contentless FTS5 table search holding each searchable
// event's words under the event's key as rowid, search_meta holding its
// version, search_words every word it holds (the vocabulary a query's
// trailing prefix is spelled out from), search_vocab, an fts5vocab view of
// it for databases written before search_words, and search_pending, the
// sessions whose latest events are not indexed yet. An Append writes no
// index rows: it marks its session in search_pending, and the marked
// events are indexed in a transaction of their own, without an fsync, by
// the next writable Search (of any process), by a store that has appended
// 64 events since it last did, and by Close once 64 events are marked in
// all (pending.go). Search never answers from an index that is behind: a
// read-only store that finds marks reads the marked events beside the
// index, and so does a writable one that cannot take the write lock within
// 100 ms.
//
// # Integrity
//
// Every event row carries the CRC-32C of the event (checkpoint.Checksum
// over its seq, time, type and data), written in the row's own INSERT. Read
// checks it for every event, checks that seqs run without a gap from the
// first one asked for, and that the log reaches the head recorded in the
// session's row (read in the same statement). Any mismatch (a changed
// byte, a deleted row, a head ahead of the log) ends the read with a
// *checkpoint.CorruptError after the events before it; nothing is
// repaired. Upgrading a version 1 database computes the checksums of the
// events already stored; a read-only store reads a version 1 database
// without them, checking seqs and heads only. SQLITE_CORRUPT from the
// driver is reported as a *checkpoint.CorruptError too.
//
// Event times are kept to the microsecond, the precision session.Now
// gives, and come back in UTC. One event's data is capped by
// Options.MaxEventBytes (16 MiB by default); a larger one is
// checkpoint.ErrTooLarge and nothing of its batch is written.
package sqlite
