-- Version 1: one row per session in sessions, one row per event in events.

CREATE TABLE sessions (
    id         text PRIMARY KEY,
    namespace  text NOT NULL,
    kind       text NOT NULL,
    head       bigint NOT NULL,
    messages   integer NOT NULL,
    status     text NOT NULL,
    created    timestamptz NOT NULL,
    updated    timestamptz NOT NULL,
    summary    json NOT NULL,
    generation bigint NOT NULL,
    etag       bigint NOT NULL,
    max_data   integer NOT NULL  -- bytes of the largest event data in the log
) WITH (fillfactor = 50);

-- Only columns that never change once a session exists are indexed, and
-- half of each page is left free, so that the update every append makes to
-- its session's row is a HOT update: no index is touched. List sorts a
-- namespace's rows by updated itself.
CREATE INDEX sessions_namespace ON sessions (namespace);

CREATE TABLE events (
    session text NOT NULL,
    seq     bigint NOT NULL,
    type    text NOT NULL,
    time    timestamptz NOT NULL,
    data    bytea,
    PRIMARY KEY (session, seq)
);
