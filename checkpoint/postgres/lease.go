package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.Leaser = (*Store)(nil)

// A session's lease is a session-level advisory lock of the server
// (pg_try_advisory_lock) on a key derived from the schema and the session
// id, held on a connection of its own for as long as the turn runs. The
// server lets it go when that connection ends, whatever ended it: the turn,
// the process, the host, the network. The connection's application_name
// names the holder ("lite-agent lease PID SINCE HOST"), and LeaseHolder
// finds it through pg_locks and pg_stat_activity without writing anything,
// so the lease needs no table and leaves nothing behind.
//
// While a Store holds a session's lease, its appends to and truncations of
// that session run on the lease's connection, the very server session that
// holds the lock: a statement that succeeds there ran while the lock was
// held. If the connection breaks (an administrator ends it, the server
// restarts, the network goes), the lock is gone with it, and the next
// statement finds out: the Store connects again and takes the lock back if
// nobody else did in between, and the statement's compare-and-set on the
// session's head and etag proves that nobody wrote meanwhile. Otherwise the
// statement fails with checkpoint.ErrLeaseLost (and the *LeaseHeldError of
// whoever holds the lease now) and writes nothing: a turn that lost its
// lease never writes after another turn began.
//
// Connection poolers in transaction mode (pgbouncer) do not keep
// session-level locks: point the URL at the server, or at a pooler in
// session mode.

// leaseKeySQL derives the lock key of session $1 in the connection's
// schema: 64 bits, so two sessions collide with a negligible chance (and a
// collision only makes one turn wait for another's end).
const leaseKeySQL = `hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0)`

// stmtTakeLease names the connection's holder ($2) and tries the lock of
// session $1 in one round trip.
const stmtTakeLease = `SELECT set_config('application_name', $2, false) <> '' AND pg_try_advisory_lock(` + leaseKeySQL + `)`

// leaseAppPrefix starts the application_name of a lease's connection.
const leaseAppPrefix = "lite-agent lease "

// stmtLeaseHolder finds who holds the advisory lock of session $1 in this
// database: a bigint key shows in pg_locks as classid (its high half),
// objid (its low half) and objsubid 1.
const stmtLeaseHolder = `WITH k AS (SELECT ` + leaseKeySQL + ` AS key)
SELECT coalesce(a.application_name, ''), a.backend_start
FROM k, pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = ((k.key >> 32) & 4294967295)::oid AND l.objid = (k.key & 4294967295)::oid
LIMIT 1`

// maxIdleLeaseConns is how many connections that held a lease a Store
// keeps for the next one: a turn then neither connects nor prepares its
// statements again.
const maxIdleLeaseConns = 2

// lease is a session lease this Store holds.
type lease struct {
	id    string
	since time.Time
	mu    sync.Mutex // serialises the session's statements on conn
	conn  *pgx.Conn  // holds the lock; nil once lost and not taken back
	gone  bool       // released
}

// Lease implements checkpoint.Leaser with an advisory lock held on a
// dedicated connection (see above). It does not wait for a lock another
// connection holds: that is a *checkpoint.LeaseHeldError naming the holder.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	l := &lease{id: id, since: time.Now().UTC().Truncate(time.Second)}
	s.leaseMu.Lock()
	_, mine := s.leases[id]
	if !mine {
		if s.leases == nil {
			s.leases = make(map[string]*lease)
		}
		s.leases[id] = l // claimed in this Store while the lock is tried
	}
	s.leaseMu.Unlock()
	if mine {
		return nil, s.heldError(ctx, id)
	}
	conn, err := s.takeLock(ctx, l)
	if err != nil {
		s.dropLease(l)
		return nil, err
	}
	l.conn = conn
	var once sync.Once
	return func() { once.Do(func() { s.release(l) }) }, nil
}

// takeLock connects (or reuses an idle lease connection) and takes the
// lock of l's session on it.
func (s *Store) takeLock(ctx context.Context, l *lease) (*pgx.Conn, error) {
	conn, fresh, err := s.leaseConn(ctx)
	if err != nil {
		return nil, s.fail("lease "+l.id, err)
	}
	var got bool
	err = conn.QueryRow(ctx, stmtTakeLease, l.id, holderApp(l.since)).Scan(&got)
	if err != nil && !fresh && isConnectionLost(err) {
		// An idle connection the server ended meanwhile: connect anew.
		closeConn(conn)
		return s.takeLock(ctx, l)
	}
	if err != nil {
		closeConn(conn)
		return nil, s.fail("lease "+l.id, err)
	}
	if !got {
		s.idle(conn)
		return nil, s.heldError(ctx, l.id)
	}
	return conn, nil
}

// leaseConn returns an idle lease connection, or a new one (fresh).
func (s *Store) leaseConn(ctx context.Context) (conn *pgx.Conn, fresh bool, err error) {
	s.leaseMu.Lock()
	if n := len(s.idleConns); n > 0 {
		conn = s.idleConns[n-1]
		s.idleConns = s.idleConns[:n-1]
	}
	s.leaseMu.Unlock()
	if conn != nil {
		return conn, false, nil
	}
	conn, err = pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	return conn, true, err
}

// idle keeps conn, which holds no lock, for the next lease, or closes it.
func (s *Store) idle(conn *pgx.Conn) {
	s.leaseMu.Lock()
	if !s.closedLeases && len(s.idleConns) < maxIdleLeaseConns && !conn.IsClosed() {
		s.idleConns = append(s.idleConns, conn)
		conn = nil
	}
	s.leaseMu.Unlock()
	if conn != nil {
		closeConn(conn)
	}
}

// heldError names who holds session id's lease.
func (s *Store) heldError(ctx context.Context, id string) error {
	h, err := s.holder(ctx, id)
	if err != nil {
		return err
	}
	if h == nil {
		// Let go between the two statements: one more try would race
		// again; say who it was not.
		h = &checkpoint.Holder{}
	}
	return &checkpoint.LeaseHeldError{Session: id, Holder: *h}
}

// release lets go of l once the statement running on it, if any, returns.
func (s *Store) release(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gone = true
	s.dropLease(l)
	conn := l.conn
	l.conn = nil
	if conn == nil {
		return
	}
	// The unlock makes the lease free when release returns; only a
	// connection that verifiably holds nothing is kept for the next lease.
	// If the unlock fails, ending the connection ends the lock all the same.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	var unlocked bool
	err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock(`+leaseKeySQL+`)`, l.id).Scan(&unlocked)
	cancel()
	if err == nil && unlocked {
		s.idle(conn)
		return
	}
	closeConn(conn)
}

// dropLease forgets l as this Store's lease of its session.
func (s *Store) dropLease(l *lease) {
	s.leaseMu.Lock()
	if s.leases[l.id] == l {
		delete(s.leases, l.id)
	}
	s.leaseMu.Unlock()
}

// leaseOf returns the lease this Store holds on session id, nil if none.
func (s *Store) leaseOf(id string) *lease {
	s.leaseMu.Lock()
	defer s.leaseMu.Unlock()
	l := s.leases[id]
	if l == nil || l.conn == nil && l.gone {
		return nil
	}
	return l
}

// onLease runs fn on the connection holding session l's lock; l.mu must be
// held. A connection lost before or during fn (so the lock is gone) is
// replaced by a new one holding the lock again, and fn runs again on it,
// unless another connection took the lock meanwhile or the server stays
// unreachable for retryWindow: that error wraps checkpoint.ErrLeaseLost.
// again tells whether fn may run again after a connection broke under it
// with err; if not, err is returned (and the next statement takes the lock
// back).
func (s *Store) onLease(ctx context.Context, l *lease, again func(error) bool, fn func(*pgx.Conn) error) error {
	deadline := time.Now().Add(retryWindow)
	backoff := 25 * time.Millisecond
	for {
		if l.conn != nil {
			err := fn(l.conn)
			if err == nil || !isConnectionLost(err) {
				return err
			}
			closeConn(l.conn)
			l.conn = nil
			if ctx.Err() != nil || !again(err) {
				return err
			}
		}
		conn, err := s.takeLock(ctx, l)
		if err == nil {
			l.conn = conn
			continue
		}
		var held *checkpoint.LeaseHeldError
		if errors.As(err, &held) || ctx.Err() != nil || !isConnectionLost(err) || time.Now().Add(backoff).After(deadline) {
			return fmt.Errorf("%w: %w", checkpoint.ErrLeaseLost, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff *= 2
	}
}

// LeaseHolder implements checkpoint.Leaser; it only reads the server's
// lock and activity views, so a read-only store answers it.
func (s *Store) LeaseHolder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return s.holder(ctx, id)
}

// holder is LeaseHolder inside a call already entered.
func (s *Store) holder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	var app string
	var since *time.Time
	err := s.pool.QueryRow(ctx, stmtLeaseHolder, id).Scan(&app, &since)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail("lease of "+id, err)
	}
	h := parseHolderApp(app)
	if since != nil && h.Since.IsZero() {
		h.Since = since.UTC().Truncate(time.Second)
	}
	return &h, nil
}

// closeLeases ends the lease connections still open when the store closes,
// so a closed store holds no session.
func (s *Store) closeLeases() {
	s.leaseMu.Lock()
	leases, idle := s.leases, s.idleConns
	s.leases, s.idleConns, s.closedLeases = nil, nil, true
	s.leaseMu.Unlock()
	for _, l := range leases {
		l.mu.Lock()
		if l.conn != nil {
			closeConn(l.conn)
			l.conn = nil
		}
		l.gone = true
		l.mu.Unlock()
	}
	for _, c := range idle {
		closeConn(c)
	}
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx)
}

// maxAppName is the longest application_name the server keeps
// (NAMEDATALEN - 1); it cuts longer ones.
const maxAppName = 63

// holderApp is this process as the application_name of a lease's
// connection: the prefix, the pid, the time the lease was taken (Unix
// seconds in base 36) and as much of the host name as fits.
func holderApp(since time.Time) string {
	host, _ := os.Hostname()
	app := leaseAppPrefix + strconv.Itoa(os.Getpid()) + " " + strconv.FormatInt(since.Unix(), 36) + " " + host
	if len(app) > maxAppName {
		app = app[:maxAppName]
	}
	return app
}

// parseHolderApp reads what holderApp wrote, or what earlier versions
// wrote ("PID HOST", the time then being the connection's start); an
// application_name of another form (or one the server hides) gives an
// empty Holder.
func parseHolderApp(app string) checkpoint.Holder {
	rest, ok := strings.CutPrefix(app, leaseAppPrefix)
	if !ok {
		return checkpoint.Holder{}
	}
	f := strings.Fields(rest)
	if len(f) < 2 {
		return checkpoint.Holder{}
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return checkpoint.Holder{}
	}
	h := checkpoint.Holder{PID: n, Host: f[len(f)-1]}
	if len(f) == 3 {
		if t, err := strconv.ParseInt(f[1], 36, 64); err == nil {
			h.Since = time.Unix(t, 0).UTC()
		}
	}
	return h
}
