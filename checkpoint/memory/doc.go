// Package memory is a checkpoint.Checkpointer that keeps session logs in the
// process's memory. Nothing survives Close or the process: it is for
// sessionless use (an agent that should leave nothing behind) and for tests.
//
// A Store is a map from session id to its log and its session.Summary,
// guarded by one mutex. The summary is folded forward with
// session.Summary.Apply on every append, so Head and List never walk a log;
// Truncate recomputes it from the kept events. Events are copied on the way
// in and on the way out, so neither side can change the other's data.
//
// There is no format: nothing is encoded, events are kept as the session.Event
// values they were appended as. Read copies the events it will yield under
// the lock and yields them after releasing it, so a slow reader never holds
// up writers and sees the log as it was when the read began. Close drops
// every log; a new Store starts empty.
package memory
