package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/groupcommit"
)

var _ checkpoint.Checkpointer = (*Store)(nil)

// Defaults for Options.
const (
	// DefaultMaxEventBytes caps one event's data unless Options says
	// otherwise.
	DefaultMaxEventBytes = 16 << 20
	// MaxEventBytesLimit is the largest limit a store accepts: SQLite's own
	// limit on one value.
	MaxEventBytesLimit = 1_000_000_000
	// DefaultBusyTimeout is how long a call waits for a lock another
	// process holds before it fails.
	DefaultBusyTimeout = time.Minute
)

// closeCheckpointBytes is the WAL size above which Close checkpoints it
// explicitly (see Close).
const closeCheckpointBytes = 4 << 20

// walBytes is the size of the WAL file beside the database at path, 0 when
// there is none.
func walBytes(path string) int64 {
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		return 0
	}
	return fi.Size()
}

// closeCheckpointWait bounds how long Close waits to checkpoint the whole
// WAL while other processes use the database: meanwhile their writes wait.
const closeCheckpointWait = 500 * time.Millisecond

// Memory is the path of a store that lives in this process's memory only.
const Memory = ":memory:"

// Options tune a Store. The zero value (or a nil *Options) means defaults.
type Options struct {
	// ReadOnly opens an existing database for inspection: nothing is
	// created, migrated or modified (the database file, and its -wal and
	// -shm files if any, stay byte for byte as they were), and every write
	// returns checkpoint.ErrReadOnly. It is meant for short-lived commands
	// that list or inspect sessions, in a process of their own: within one
	// process SQLite shares a writable Store's mapping of the -shm file with
	// every connection, so a read-only one there may update its read mark.
	ReadOnly bool
	// MaxEventBytes caps the data of one event; a larger event makes Append
	// fail with checkpoint.ErrTooLarge. 0 means DefaultMaxEventBytes; at most
	// MaxEventBytesLimit.
	MaxEventBytes int
	// BusyTimeout is how long a call waits, in all, for a lock held by
	// another connection (another process appending, or checkpointing the
	// WAL) before it fails. The wait also ends when the call's context is
	// done. 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// Store is a checkpoint.Checkpointer backed by one SQLite database. It is
// safe for concurrent use, and several processes may open the same file.
type Store struct {
	path          string // as given, for messages
	memory        bool
	readOnly      bool
	maxEventBytes int
	busyTimeout   time.Duration

	drv msqlite.Driver
	// walKept is set once setUp has made the first connection keep the
	// WAL file (keepWAL); the pool's later connections do the same.
	walKept bool
	pool    *pool
	group   *groupcommit.Group[request]
	// empty is set for a read-only store over a database without schema
	// (an empty file): it holds no sessions.
	empty bool
	// noChecksums is set for a read-only store over a database of schema
	// version 1, whose events carry no checksums yet: reads check seqs and
	// heads only.
	noChecksums bool

	// unindexed counts the events this store appended since it last
	// indexed the marked sessions (pending.go); indexing is set while a
	// background indexing runs.
	unindexed atomic.Int64
	indexing  atomic.Bool

	// mu is held for reading by every call in progress and for writing by
	// Close, so that Close waits for them.
	mu     sync.RWMutex
	closed bool
}

// SQLite result codes the store tells apart.
const (
	sqlitePerm     = 3
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadOnly = 8
	sqliteIOErr    = 10
	sqliteCorrupt  = 11
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteProtocol = 15

	sqliteReadOnlyRecovery = sqliteReadOnly | 1<<8
	sqliteReadOnlyCantInit = sqliteReadOnly | 5<<8
	sqliteNotADB           = 26
)

// explain adds what to do to the SQLite errors a user can act on.
func (s *Store) explain(err error) error {
	switch code(err) & 0xff {
	case sqliteFull:
		return fmt.Errorf("the disk holding %s is full; free some space and try again: %w", s.path, err)
	case sqliteIOErr:
		return fmt.Errorf("input/output error on %s; check the disk and its file system: %w", s.path, err)
	case sqliteReadOnly:
		return fmt.Errorf("%s cannot be written (a read-only file, directory or file system); fix its permissions, or open it read-only to inspect it: %w", s.path, err)
	case sqliteCorrupt, sqliteNotADB:
		return fmt.Errorf("%s is damaged; restore it from a backup or move it away: %w", s.path, err)
	}
	return err
}

// code returns the SQLite result code in err, or 0.
func code(err error) int {
	var e interface{ Code() int }
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isBusy reports whether err is a lock held by another connection. Three
// errors of the WAL index count too, because they pass once another
// connection has recovered the WAL a killed process left: the locking
// protocol error (SQLITE_PROTOCOL, SQLite's own retries lost a race for
// the WAL index), and, for a read-only connection, SQLITE_READONLY_RECOVERY
// and SQLITE_READONLY_CANTINIT (the WAL index needs a recovery or an
// initialization it may not do itself).
func isBusy(err error) bool {
	full := code(err)
	switch c := full & 0xff; {
	case c == sqliteBusy || c == sqliteLocked || c == sqliteProtocol:
		return true
	case full == sqliteReadOnlyRecovery || full == sqliteReadOnlyCantInit:
		return true
	}
	return false
}

// retry calls f until it does not fail with a lock held by another
// connection, for at most BusyTimeout or until ctx is done.
func (s *Store) retry(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(s.busyTimeout)
	wait := time.Millisecond
	for {
		err := f()
		if err == nil || !isBusy(err) {
			return err
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if time.Now().After(deadline) {
			return &lockedError{path: s.path, wait: s.busyTimeout}
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// conn takes a connection from the pool, retrying the opening of a new one
// as retry does: right after a writer was killed, a connection opened
// read-only can meet a WAL only a writer may recover (READONLY_RECOVERY)
// until the next writer has.
func (s *Store) conn(ctx context.Context) (*conn, error) {
	var c *conn
	err := s.retry(ctx, func() error {
		var err error
		c, err = s.pool.get(ctx)
		return err
	})
	return c, err
}

// lockedError reports a lock that another connection kept for longer than
// the busy timeout.
type lockedError struct {
	path string
	wait time.Duration
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("%s stayed locked by another connection for more than %v; try again, and look for a stuck process using it", e.path, e.wait)
}

// lockTimeout reports whether err is a lockedError.
func lockTimeout(err error) bool {
	var le *lockedError
	return errors.As(err, &le)
}

// inTx runs f in a write transaction on c: BEGIN IMMEDIATE takes the write
// lock at once (waiting, retried, while another connection holds it), so
// everything f reads stays true until COMMIT. f's statements should use
// context.Background(): only the wait for the lock honours ctx.
func (s *Store) inTx(ctx context.Context, c *conn, f func() error) error {
	if err := s.retry(ctx, func() error { _, err := c.exec(ctx, "BEGIN IMMEDIATE"); return err }); err != nil {
		s.rollback(c) // in case the BEGIN took effect as ctx ended
		return err
	}
	if err := f(); err != nil {
		s.rollback(c)
		return err
	}
	err := s.retry(ctx, func() error { _, err := c.exec(context.Background(), "COMMIT"); return err })
	if err != nil {
		s.rollback(c)
		return err
	}
	return nil
}

// inUnsyncedTx is inTx committed with synchronous=NORMAL, without an fsync
// of its own: for derived data (a fold, the search index, pending.go),
// which the next durable commit makes durable with it and which a crash
// before that loses with nothing depending on it. c is set back to
// synchronous=FULL after; a connection where that fails is marked broken,
// so that it is never handed on without its syncs.
func (s *Store) inUnsyncedTx(ctx context.Context, c *conn, f func() error) error {
	bg := context.Background()
	if _, err := c.exec(bg, "PRAGMA synchronous = NORMAL"); err != nil {
		return err
	}
	defer func() {
		if _, err := c.exec(bg, "PRAGMA synchronous = FULL"); err != nil {
			c.broken = true
		}
	}()
	return s.inTx(ctx, c, f)
}

// rollback ends c's transaction, if it still has one. A connection whose
// rollback fails is not reused.
func (s *Store) rollback(c *conn) {
	if _, err := c.exec(context.Background(), "ROLLBACK"); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		c.broken = true
	}
}

// enter registers a call in progress; the caller must call s.mu.RUnlock
// when it returns. It fails once the store is closed.
func (s *Store) enter() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return checkpoint.ErrClosed
	}
	return nil
}

// Close waits for calls in progress, checkpoints a WAL larger than 4 MiB
// into the database file and closes the database; the last connection to
// close checkpoints the rest and truncates the -wal file to zero bytes
// (both it and the -shm file stay, for the next process to reuse). It is safe to call more than once; later calls
// return nil. After Close every method returns checkpoint.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	if !s.readOnly && !s.memory && s.unindexed.Load() > 0 {
		// What waits for the search index goes into it now if it is
		// indexLag events or more, so that a database at rest is at most that
		// far behind (pending.go).
		ctx, cancel := context.WithTimeout(context.Background(), min(s.busyTimeout, closeCheckpointWait))
		if err := s.catchUpPast(ctx, indexLag); err != nil && !isBusy(err) && ctx.Err() == nil {
			errs = append(errs, fmt.Errorf("close sqlite store %s: index the last events: %w", s.path, err))
		}
		cancel()
	}
	if !s.readOnly && !s.memory && walBytes(s.path) > closeCheckpointBytes {
		// Maintenance: move a large WAL into the database, so that a long
		// run beside other processes (the last to close checkpoints by
		// itself) does not leave readers walking it. Another process
		// reading or writing may keep part of it in the WAL; that is fine,
		// it checkpoints later. A one-shot process's few pages are left to
		// SQLite's checkpoint when the last connection closes: one fsync
		// fewer on every exit.
		ctx, cancel := context.WithTimeout(context.Background(), min(s.busyTimeout, closeCheckpointWait))
		if c, err := s.pool.get(ctx); err == nil {
			_, err := c.exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
			if err != nil && !isBusy(err) && ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("close sqlite store %s: checkpoint: %w", s.path, err))
			}
			s.pool.put(c, false)
		}
		cancel()
	}
	if err := s.pool.close(); err != nil {
		errs = append(errs, fmt.Errorf("close sqlite store %s: %w", s.path, err))
	}
	return errors.Join(errs...)
}
