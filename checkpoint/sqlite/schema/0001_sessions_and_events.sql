-- Schema version 1: one row per event, one summary row per session.
-- Times are unix microseconds (UTC).

CREATE TABLE sessions (
    id        TEXT    NOT NULL PRIMARY KEY,
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

CREATE TABLE events (
    session TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    type    TEXT    NOT NULL,
    time    INTEGER NOT NULL,
    data    BLOB,           -- the event's payload, byte for byte
    PRIMARY KEY (session, seq)
);
