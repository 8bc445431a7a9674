// Package checkpoint defines the storage contract for session logs, the
// Checkpointer, with the errors its implementations return. Backends live in
// sub-packages named after what they wrap (memory, file, sqlite, postgres);
// package checkpointtest holds the conformance suite every backend passes.
//
// A store keeps one append-only log per session. Events carry seq 1, 2, 3 …
// with no gaps; the head is the last seq (0 for a session that does not
// exist). The first event of every log is a session_started event, which
// names the session's namespace; listing is per namespace.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/lite-agent/lite-agent/session"
)

// Errors callers branch on. Backends wrap them with context; test with
// errors.Is.
var (
	// ErrNotFound: the session has no log in this store.
	ErrNotFound = errors.New("session not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("checkpointer closed")
	// ErrInvalid: the request itself is wrong (an empty batch, a first event
	// that is not session_started, a truncate point past the head, …).
	ErrInvalid = errors.New("invalid request")
	// ErrTooLarge: an event is larger than the backend can store.
	ErrTooLarge = errors.New("event too large")
	// ErrReadOnly: the store was opened read-only and a write was attempted.
	ErrReadOnly = errors.New("checkpointer is read-only")
	// ErrLogReplaced: a Read that spans several statements saw the log
	// truncated or re-created under it (a restore, say) and stopped rather
	// than mix two logs. Nothing is wrong with the store: read it again.
	ErrLogReplaced = errors.New("the session was truncated or replaced while being read")
)

// ConflictError is returned by Append and Truncate when the session's stored
// head is not the head the caller expected: another writer got there first.
// Nothing was written. The caller may re-read the log and retry.
type ConflictError struct {
	Session  string
	Expected int64
	Actual   int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("session %s changed underneath this writer: expected head %d, found %d (another process or agent appended to it; reload the session and try again)",
		e.Session, e.Expected, e.Actual)
}

// IsConflict reports whether err is (or wraps) a *ConflictError.
func IsConflict(err error) bool {
	var c *ConflictError
	return errors.As(err, &c)
}

// ListOptions narrows List.
type ListOptions struct {
	// Limit caps the number of summaries returned; 0 means no cap.
	Limit int
	// Kind selects sessions of one kind ("" conversations, "tasklist", …);
	// AllKinds returns every kind.
	Kind     string
	AllKinds bool
}

// Matches reports whether a summary passes the options' kind filter.
func (o ListOptions) Matches(s session.Summary) bool {
	return o.AllKinds || s.Kind == o.Kind
}

// Checkpointer stores session logs.
//
// Every method is safe to call from several goroutines at once, and a
// persistent backend is safe to share between several OS processes (and, for
// networked backends, hosts). Every method honours ctx where it blocks.
// After Close every method returns ErrClosed.
type Checkpointer interface {
	// Append atomically appends events to the session's log if its head is
	// still expectedHead, assigning seqs expectedHead+1 … in order (the
	// events' Seq fields are ignored and their Time is kept, set to now
	// where zero). It returns the new head.
	//
	// With expectedHead 0 it creates the session; the first event must then
	// be session_started, else ErrInvalid. If the stored head differs from
	// expectedHead, nothing is written and the error is a *ConflictError.
	// An empty batch is ErrInvalid; an event over the backend's size limit is
	// ErrTooLarge, and nothing of the batch is written. When Append returns
	// nil the events survive a crash of the process and of the machine.
	// Not idempotent: repeating a successful call conflicts.
	Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error)

	// Read streams the session's events with seq >= fromSeq in seq order.
	// An unknown session yields ErrNotFound as its only element. Events
	// appended while reading may or may not be seen; those seen never have
	// gaps. A damaged log (an event that does not match its checksum, a
	// missing seq, a log that ends before the recorded head) yields the
	// events before the damage, then a *CorruptError, never a shorter or
	// altered log. The returned events are the caller's. Stopping the iteration
	// early releases everything Read holds. Safe to repeat.
	Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error]

	// Head returns the session's summary (head, counts, status, times) without
	// reading its log. An unknown session is ErrNotFound. Safe to repeat.
	Head(ctx context.Context, id string) (session.Summary, error)

	// List returns summaries of the namespace's sessions, most recently
	// updated first, without reading their logs. An empty namespace lists
	// every namespace. Safe to repeat.
	List(ctx context.Context, namespace string, opts ListOptions) ([]session.Summary, error)

	// Delete removes the session's log and everything the store keeps for it.
	// An unknown session is ErrNotFound, so repeating a successful Delete
	// returns ErrNotFound.
	Delete(ctx context.Context, id string) error

	// Truncate drops every event after keepThrough if the head is still
	// expectedHead (else a *ConflictError, nothing changed) and returns the
	// new head. keepThrough must be ≥ 1 and ≤ the head (else ErrInvalid);
	// keepThrough equal to the head changes nothing. Durable like Append.
	Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error)

	// Close releases the store. It waits for calls in progress to return and
	// is safe to repeat (later calls return nil).
	Close() error
}

// ReadAll collects a whole log. It is for small logs and tests; large logs
// should be consumed with Read.
func ReadAll(ctx context.Context, c Checkpointer, id string) ([]session.Event, error) {
	var out []session.Event
	for e, err := range c.Read(ctx, id, 1) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}
