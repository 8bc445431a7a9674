package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLeaseLost is wrapped by the error of a write to a session whose lease
// the writer held but lost (its store's connection broke, so the lock went)
// and could not take back: another process holds it now (the error then
// also wraps that *LeaseHeldError), or the store stayed unreachable.
// Nothing was written. The turn must stop; the session can be resumed once
// whoever holds it is done.
var ErrLeaseLost = errors.New("this turn lost the session's lease and could not take it back, so nothing more was written")

// Leaser is an optional ability of a Checkpointer: a liveness lease per
// session, held by the process running a turn in it for as long as the turn
// runs, and let go by the operating system (or the server) when that
// process dies. It tells "running now in process N on host H" from
// "crashed": a tool call without its result is a recovery hazard only when
// nobody holds the lease.
//
// A store that does not implement it gives no liveness information: every
// open call is then treated as a hazard, as before. The documented fallback
// for stores on a local disk is package lockfile: a lock file per session in
// a directory beside the store (the file and SQLite stores use it);
// PostgreSQL holds an advisory lock on a dedicated connection.
type Leaser interface {
	// Lease takes session id's lease for this process. It does not wait:
	// if a live process holds it, the error is a *LeaseHeldError naming
	// that process. release lets it go (idempotent); the lease also goes
	// when the process dies. Safe for concurrent use; two leases on one
	// session in one process conflict like two processes.
	Lease(ctx context.Context, id string) (release func(), err error)
	// LeaseHolder returns who holds session id's lease now, nil when
	// nobody does (a holder that died holds nothing). It never writes, so
	// a read-only store answers it.
	LeaseHolder(ctx context.Context, id string) (*Holder, error)
}

// Holder is a process holding a session's lease.
type Holder struct {
	PID    int       `json:"pid"`
	Host   string    `json:"host"`
	BootID string    `json:"boot_id,omitempty"` // the host's boot, so a pid of an earlier boot is not mistaken
	Since  time.Time `json:"since"`
}

func (h *Holder) String() string {
	return fmt.Sprintf("process %d on host %s (since %s)", h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// LeaseHeldError is returned by Lease when a live process holds the lease.
type LeaseHeldError struct {
	Session string
	Holder  Holder
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("session %s is running now in %s; wait for its turn to end, or stop that process", e.Session, e.Holder.String())
}
