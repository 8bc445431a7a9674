// Package postgres is a checkpoint.Checkpointer that keeps session logs in a
// PostgreSQL database, for sessions shared by many processes on many hosts.
//
//	s, err := postgres.Open(ctx, "postgres://agent:secret@db.internal:5432/agents", nil)
//
// Any number of Stores, in any number of processes and hosts, may share one
// database: every append is a compare-and-set on the session's row, so a
// writer whose view of a session is stale gets a *checkpoint.ConflictError
// and writes nothing. It uses github.com/jackc/pgx/v5 with a pgxpool
// connection pool, not database/sql.
//
// # Schema
//
// The tables live in the first schema of the connection's search_path
// (normally public; add ?search_path=name to the URL for another). Open
// creates and migrates them itself: the migrations are embedded in the
// binary (migrations/NNNN_name.sql), each one applied in one transaction
// under a transaction-scoped advisory lock keyed on the schema's name, so
// several hosts starting at once do not race; the last one applied is
// recorded in
//
//	schema_version (version integer PRIMARY KEY, name text, applied timestamptz)
//
// A database at a version newer than the build refuses to open. The tables
// as of version 4 (1 created them; 2 added entry and filled it in from the
// JSON summary column, in Go, in the migration's transaction; 3 dropped
// summary; 4 added crc and filled it in for the stored events the same
// way):
//
//	events (
//	    session text,          -- the session id
//	    seq     bigint,        -- 1, 2, 3 … with no gaps
//	    type    text,          -- session.Type
//	    time    timestamptz,   -- to the microsecond, read back in UTC
//	    data    bytea,         -- the payload's bytes exactly as appended; NULL if none
//	    crc     integer,       -- checkpoint.Checksum of the event (CRC-32C), as int4
//	    PRIMARY KEY (session, seq)
//	)
//
//	sessions (                 -- one row per session: what Head and List read
//	    id         text PRIMARY KEY,
//	    namespace  text,       -- indexed; List filters on it
//	    kind       text,
//	    head       bigint,     -- the last seq
//	    messages   integer,
//	    status     text,
//	    created    timestamptz,
//	    updated    timestamptz, -- List orders by updated DESC, id
//	    entry      bytea,      -- the whole session.Summary, packed (checkpoint/internal/entry)
//	    generation bigint,     -- random; new on creation and on every Truncate
//	    etag       bigint,     -- random; new on every write to the session
//	    max_data   integer     -- bytes of the largest event data in the log
//	) WITH (fillfactor = 50)
//
//	blobs (                    -- checkpoint.BlobStore: shared by every session; created
//	    digest text PRIMARY KEY, --   under the schema's advisory lock by the first put
//	    size   bigint,
//	    stored timestamptz,    -- when first put
//	    data   bytea           -- the content whose SHA-256 (hex) is digest
//	)
//
//	folds (                    -- checkpoint.FoldKeeper: derived, see fold.go; created
//	    session text PRIMARY KEY, -- by the first save, committed with synchronous_commit off
//	    seq     bigint,        -- the last event the fold covers
//	    tag     text,          -- checkpoint.FoldCheck of that event
//	    state   bytea          -- session.EncodeState
//	)
//
//	mailbox (                  -- checkpoint.Mailbox: calls of running turns waiting for
//	    session text,          --   a person; created (if absent) by every writable open,
//	    call    text,          --   outside the numbered migrations
//	    kind    text,          -- "approval", "question": the caller's word
//	    request bytea,
//	    answer  bytea,         -- NULL while the call waits; set once (answer IS NULL)
//	    posted  timestamptz,
//	    PRIMARY KEY (session, call)
//	)
//
// Every append, truncation, delete and mailbox post or answer notifies
// channel lite_agent_sessions with the session's id, in its own transaction
// (delivered when it commits); a Store that is watched (checkpoint.Watcher,
// notify.go) LISTENs on a connection of its own, named "lite-agent listen
// PID", and connects again when it breaks.
//
// The sessions row is the fold of the log by session.Summary.Apply, updated
// in the same statement as the events are inserted, so it is never out of
// step with them. Only columns that never change are indexed and half of
// each page is kept free, so the update each append makes is a HOT update
// that touches no index. There is no foreign key from events to sessions:
// the two are always written and deleted together, and the key check would
// cost every insert.
//
// # Appends
//
// An append is one statement: it inserts the session's row (a new session,
// INSERT … ON CONFLICT DO NOTHING) or updates it only if head and etag are
// still those the writer saw, and inserts the events only if that row
// write took. The statement is atomic and row-locked, so the head check and
// the seq allocation happen in one transaction; a writer that lost the race
// sees "no row written" rather than an error, reads the row again, and
// either reports a *checkpoint.ConflictError (the head moved) or tries
// again (only the etag moved, for instance after a truncation back to the
// same head). A Store caches the rows it wrote, so an append to a session
// it is already writing costs one round trip.
//
// Appends from concurrent goroutines are group-committed
// (checkpoint/internal/groupcommit): one pipeline, one implicit transaction,
// one WAL flush, with one statement serving appends to several sessions at
// once. Each append keeps its own check, so a conflict in one does not affect
// the others. The leader of a commit waits a moment (a quarter of a recent
// commit's time, at most a millisecond) while other Appends are on their
// way, so that callers released by one commit join the next.
//
// Durability: the connections run with synchronous_commit = on (unless the
// URL sets it), so an Append that returned nil is on the server's disk. If
// the connection breaks, an append is retried for a few seconds; an append
// whose reply was lost is recognised by the etag it wrote and never applied
// twice. An Append that still fails says whether it may have been saved.
//
// # Reads
//
// Read reads the session's row (head, generation, max_data), then the events
// up to that head a page at a time: at most 2048 events, fewer when max_data
// says a page would hold more than 4 MiB. Each page is one statement that
// also returns the generation; two pages are fetched ahead, on connections
// of their own, while the caller works on the current one, and no
// connection is held while the caller runs. Events appended after the Read
// began are not seen; a Truncate or a re-creation between two pages changes
// the generation, and the Read ends with an error instead of mixing two
// logs. Within one generation every event's crc is checked and the rows of
// a page must be exactly its seqs: a changed byte, a deleted row or a head
// ahead of the rows ends the Read with a *checkpoint.CorruptError after the
// events before it. Head is one row; List reads only the sessions table, and only its
// entry column past the filter and sort. An entry is the packed summary
// both SQL stores share (package checkpoint/internal/entry: a version
// byte, the length of the rest, then varints and length-prefixed strings:
// head, messages, created and updated in unix microseconds, id, kind,
// namespace, workdir, model, title, status, the parent fork if any, the
// open call ids); it decodes many times faster than the JSON version 1
// kept.
//
// Truncate locks the session's row (SELECT … FOR UPDATE), refolds the
// summary from the kept events, deletes the rest and gives the session a
// new generation and etag, in one transaction. Delete removes the row, then
// the events, in one transaction.
//
// # Leases
//
// Store implements checkpoint.Leaser with a session-level advisory lock per
// session, held on a connection of its own for the length of a turn (see
// lease.go): no table, nothing left behind, and the server lets it go when
// the holder's connection ends for any reason.
//
// # Read-only stores
//
// Options.ReadOnly is for inspection: the connections default to read-only
// transactions (default_transaction_read_only = on), the schema is checked
// and never created or migrated, and every write returns
// checkpoint.ErrReadOnly.
//
// # Errors
//
// Errors say what to do about the common failures (a wrong password, no
// server at the address, a missing database or schema, a standby that only
// reads, no connection slots) and never contain the URL's password.
package postgres
