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
    etag       bigint NOT NULL
);

CREATE INDEX sessions_namespace_updated ON sessions (namespace, updated DESC, id);
CREATE INDEX sessions_updated ON sessions (updated DESC, id);

CREATE TABLE events (
    session text NOT NULL,
    seq     bigint NOT NULL,
    type    text NOT NULL,
    time    timestamptz NOT NULL,
    data    bytea,
    PRIMARY KEY (session, seq)
);
