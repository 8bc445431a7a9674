package postgres

import (
	"context"
	"errors"
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
// names the holder ("lite-agent lease PID HOST"), and LeaseHolder finds it
// through pg_locks and pg_stat_activity without writing anything, so the
// lease needs no table and leaves nothing behind.
//
// If the lease's connection breaks while the turn runs, the lock is gone at
// once and the turn goes on without it; its appends are still checked
// against the head, so a turn another host then starts cannot clobber the
// log (one of the two gets a *checkpoint.ConflictError). Connection poolers
// in transaction mode (pgbouncer) do not keep session-level locks: point the
// URL at the server, or at a pooler in session mode.

// leaseKeySQL derives the lock key of session $1 in the connection's
// schema: 64 bits, so two sessions collide with a negligible chance (and a
// collision only makes one turn wait for another's end).
const leaseKeySQL = `hashtextextended('lite-agent session lease ' || current_schema() || ' ' || $1, 0)`

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

// Lease implements checkpoint.Leaser with an advisory lock held on a
// dedicated connection (see above). It does not wait for a lock another
// connection holds: that is a *checkpoint.LeaseHeldError naming the holder.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = holderApp()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, s.fail("lease "+id, err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+leaseKeySQL+`)`, id).Scan(&got); err != nil {
		closeConn(conn)
		return nil, s.fail("lease "+id, err)
	}
	if !got {
		closeConn(conn)
		h, err := s.LeaseHolder(ctx, id)
		if err != nil {
			return nil, err
		}
		if h == nil {
			// Let go between the two statements: one more try would race
			// again; say who it was not.
			h = &checkpoint.Holder{}
		}
		return nil, &checkpoint.LeaseHeldError{Session: id, Holder: *h}
	}
	s.leaseMu.Lock()
	if s.leaseConns == nil {
		s.leaseConns = make(map[*pgx.Conn]struct{})
	}
	s.leaseConns[conn] = struct{}{}
	s.leaseMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.leaseMu.Lock()
			delete(s.leaseConns, conn)
			s.leaseMu.Unlock()
			// The unlock makes the lease free when release returns (a
			// closed connection's backend lets go a moment later); if it
			// fails, ending the connection ends the lock all the same.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			conn.Exec(ctx, `SELECT pg_advisory_unlock(`+leaseKeySQL+`)`, id)
			cancel()
			closeConn(conn)
		})
	}, nil
}

// LeaseHolder implements checkpoint.Leaser; it only reads the server's
// lock and activity views, so a read-only store answers it.
func (s *Store) LeaseHolder(ctx context.Context, id string) (*checkpoint.Holder, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
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
	if since != nil {
		h.Since = since.UTC().Truncate(time.Second)
	}
	return &h, nil
}

// closeLeases ends the lease connections still open when the store closes,
// so a closed store holds no session.
func (s *Store) closeLeases() {
	s.leaseMu.Lock()
	conns := s.leaseConns
	s.leaseConns = nil
	s.leaseMu.Unlock()
	for c := range conns {
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
// connection: the prefix, the pid and as much of the host name as fits.
func holderApp() string {
	host, _ := os.Hostname()
	app := leaseAppPrefix + strconv.Itoa(os.Getpid()) + " " + host
	if len(app) > maxAppName {
		app = app[:maxAppName]
	}
	return app
}

// parseHolderApp reads what holderApp wrote; an application_name of
// another form (or one the server hides) gives an empty Holder.
func parseHolderApp(app string) checkpoint.Holder {
	rest, ok := strings.CutPrefix(app, leaseAppPrefix)
	if !ok {
		return checkpoint.Holder{}
	}
	pid, host, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(pid)
	if err != nil {
		return checkpoint.Holder{}
	}
	return checkpoint.Holder{PID: n, Host: host}
}
