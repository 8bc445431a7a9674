// Package session defines the events that make up a lite-agent session log,
// their encoding, and pure replay functions that derive everything else
// (the model transcript, checkpoints, recovery hazards, summaries) from a log.
//
// A session is an append-only sequence of [Event] values numbered 1, 2, 3 …
// with no gaps. Nothing in this package performs I/O: storage lives in
// package checkpoint and its backends, the agent loop in the root package.
//
// # Encoding
//
// Every event is an envelope with a format version, a sequence number, a
// type, a time and a type-specific JSON payload:
//
//	{"v":1,"seq":3,"type":"tool_started","time":"2026-11-30T22:10:00Z","data":{...}}
//
// The payload is kept as raw JSON in [Event.Data] and only decoded by the
// code that needs it, so an event type this version does not know reads
// back without error and is written out again unchanged. The golden files
// under testdata/ pin the encoding of every known type; a change that breaks
// them breaks every log already on disk.
//
// # Replay
//
// [State.Apply] runs for every event each time a session is resumed, so it
// does not decode payloads with encoding/json: the payloads of the common
// types (prompts, messages, tool intents, snapshots, receipts) are read by a
// small scanner that keeps only the fields replay uses and checks the rest.
// It accepts exactly what encoding/json accepts and reads it the same way;
// whatever it is not sure of (escaped or differently cased keys, repeated
// keys, nulls, numbers to convert) it leaves to encoding/json. Differential
// tests and fuzz targets hold the two together.
package session
