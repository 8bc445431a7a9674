// Package server is lite-agent's HTTP face: a JSON API over the SDK
// (package liteagent), the live updates of a session as Server-Sent Events,
// and a small web viewer, served by one net/http handler.
//
// The server owns no state the store does not: sessions, heads and
// checkpoints are read from the checkpointer on every request, turns run
// through liteagent.Session.Send, and a live stream catches up from the log
// (by seq, so a client resumes with Last-Event-ID) before it follows the
// updates of the turns this process runs and reads the log when the store
// says another process changed it (checkpoint.Watcher: PostgreSQL's
// LISTEN/NOTIFY), else, and while the store cannot hear, polls the head.
// Several servers on one store (SQLite on one host, PostgreSQL on many)
// serve the same sessions: the store's head check lets one of two
// concurrent prompts in, and the other is answered with HTTP 409 and the
// heads; the calls a turn waits on are posted in the session's mailbox in
// the store (checkpoint.Mailbox), so any of them answers them, once.
//
// It is safe by default: every request needs the bearer token (header or
// the HttpOnly cookie the viewer's one-time link sets), the Host header
// must name a loopback address (DNS rebinding), a request with an Origin
// that is not the server's own is refused (CSRF), no CORS header is sent
// unless origins are configured, and request bodies are capped. A stream
// client that does not keep up never slows a turn: its buffer overflows,
// it is told to resync and catches up from the store.
//
// The API is described by openapi.json, embedded and served at
// /openapi.json; a test checks it against the routes the handler serves.
package server
