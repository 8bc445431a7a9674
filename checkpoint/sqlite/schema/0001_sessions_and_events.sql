-- Schema version 1: one summary row per session, one row per event.
-- Times are unix microseconds (UTC).

CREATE TABLE sessions (
    id        TEXT    NOT NULL PRIMARY KEY,
    n         INTEGER NOT NULL UNIQUE, -- the session's number, in its events' keys
    namespace TEXT    NOT NULL,
    kind      TEXT    NOT NULL,
    head      INTEGER NOT NULL,
    messages  INTEGER NOT NULL,
    status    TEXT    NOT NULL,
    created   INTEGER NOT NULL,
    updated   INTEGER NOT NULL,
    title     TEXT    NOT NULL,
    summary   TEXT    NOT NULL, -- the whole session.Summary as JSON
    entry     BLOB    NOT NULL  -- the same summary packed for List (entry.go)
) WITHOUT ROWID;

-- List reads nothing but this index: newest first within a namespace, the
-- kind to filter on, and the packed summary.
CREATE INDEX sessions_list ON sessions (namespace, updated DESC, id, kind, entry);

-- The primary key (session, seq) is packed into the rowid, n << 32 | seq: a
-- session's events lie together in seq order in the table's own b-tree, so
-- an append updates one b-tree and a read is one range scan.
CREATE TABLE events (
    key  INTEGER PRIMARY KEY,
    seq  INTEGER GENERATED ALWAYS AS (key & 4294967295) VIRTUAL,
    type TEXT    NOT NULL,
    time INTEGER NOT NULL,
    data BLOB               -- the event's payload, byte for byte
);

-- The events with their session's id, for people and tools.
CREATE VIEW session_events (session, seq, type, time, data) AS
    SELECT s.id, e.key & 4294967295, e.type, e.time, e.data
    FROM sessions s JOIN events e ON e.key BETWEEN s.n << 32 AND (s.n << 32) + 4294967295;
