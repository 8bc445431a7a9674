package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The search index trails the logs: an Append does not write index rows
// in its durable transaction (FTS5 writes a new segment on every commit,
// which took about 60% of the pages a one-event append wrote to the WAL,
// and 40% of its time: BenchmarkAppendVsFloor). It marks the session in
// search_pending instead, with the seq its unindexed events start after,
// a write only when the session was not marked yet. The events are
// indexed later in one transaction, committed with synchronous=NORMAL like
// a fold (the index is derived; a crash before the next durable commit
// loses the index rows and the unmarking together): by the first writable
// Search that finds a mark, when the store has appended indexLag events
// since it last did, and by Close once indexLag events are marked in all.
// A one-shot process's turn (four appends) therefore leaves its events to
// a later process, most of the time, and spends nothing on the index;
// what waits is bounded by indexLag per process that appended it.
//
// A crash leaves marks for whoever comes next. A read-only store, which
// cannot index, answers a Search from the index and from the marked
// events, read in one snapshot, and so does a writable one while another
// connection keeps the write lock (catchUpWait); doctor compares a marked
// session's index rows only with the events before its mark.

// indexLag is how many events a Store appends before it indexes them
// without waiting for a Search, and how many marked events make Close
// index them. A read-only Search reads what is marked beside the index,
// about 35 µs per 1 KiB event on this project's 2-core machine
// (BenchmarkSearchMarked): 64 bound that to a few milliseconds, and a
// one-shot process indexes about one turn in ten.
var indexLag int64 = 64

// Statements of the pending marks.
const (
	stmtPendingTable = `CREATE TABLE IF NOT EXISTS search_pending (
		n     INTEGER PRIMARY KEY,  -- the session's number
		after INTEGER NOT NULL      -- its events after this seq may be missing from the index
	)`
	// stmtPendingMark marks session ?1 as unindexed after seq ?2, or lowers
	// its mark to ?2; a mark already as low is not written again.
	stmtPendingMark = `INSERT INTO search_pending (n, after) VALUES (?1, ?2)
		ON CONFLICT (n) DO UPDATE SET after = excluded.after WHERE excluded.after < search_pending.after`
	// stmtPendingTruncate lowers session ?1's mark to ?2 when its log is cut
	// to seq ?2: the seqs after it will be new events.
	stmtPendingTruncate = `UPDATE search_pending SET after = ?2 WHERE n = ?1 AND after > ?2`
	stmtPendingDrop     = `DELETE FROM search_pending WHERE n = ?`
	stmtPendingClear    = `DELETE FROM search_pending`
	stmtPendingAny      = `SELECT EXISTS (SELECT 1 FROM search_pending)`
	stmtPendingCount    = `SELECT coalesce(sum(s.head - p.after), 0) FROM search_pending p CROSS JOIN sessions s ON s.n = p.n`
	stmtPendingAfter    = `SELECT after FROM search_pending WHERE n = ?`
	// stmtPendingEvents lists the searchable events of marked conversations
	// after key ?1, a page at a time. The joins are in this order (CROSS
	// JOIN), the marks first, and each session's events are one range of
	// keys, so the few marked events are read without a scan of the
	// sessions or a sort (TestQueryPlans); a key's high bits are its
	// session's number, so (p.n, e.key) is e.key's order.
	stmtPendingEvents = `SELECT e.key, e.type, e.data FROM search_pending p CROSS JOIN sessions s ON s.n = p.n
		CROSS JOIN events e ON e.key > max(?1, (p.n << 32) + p.after) AND e.key <= (p.n << 32) + 4294967295
		WHERE p.n >= ?1 >> 32 AND s.kind = '' AND e.type IN ` + searchableTypes + `
		ORDER BY p.n, e.key LIMIT 1000`
)

// stmtPendingSearch lists the searchable events of the marked
// conversations after their marks, in namespace ?1 ("": any), as
// stmtSearch's rows, read as stmtPendingEvents reads them.
const stmtPendingSearch = `SELECT s.id, e.key & 4294967295, e.type, e.time, e.data FROM search_pending p CROSS JOIN sessions s ON s.n = p.n
	CROSS JOIN events e ON e.key > (p.n << 32) + p.after AND e.key <= (p.n << 32) + 4294967295
	WHERE s.kind = '' AND (?1 = '' OR s.namespace = ?1) AND e.type IN ` + searchableTypes

// markPending marks the events of session number n, of kind kind, from
// the first of events on, as not yet indexed, inside the caller's
// transaction. Nothing is marked for events no index row would hold.
func markPending(c *conn, n int64, kind string, events []session.Event) error {
	first := slices.IndexFunc(events, func(e session.Event) bool { return session.Searchable(e.Type) })
	if kind != "" || first < 0 {
		return nil
	}
	bg, after := context.Background(), events[first].Seq-1
	_, err := c.exec(bg, stmtPendingMark, n, after)
	if noPendingTable(err) {
		// Dropped by hand: make it again rather than fail the append.
		if _, err = c.exec(bg, stmtPendingTable); err == nil {
			_, err = c.exec(bg, stmtPendingMark, n, after)
		}
	}
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// noPendingTable reports whether err is SQLite's for a missing
// search_pending table.
func noPendingTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: search_pending")
}

// pendingRow is c.row for a query of the marks: a database without the
// marks table has no row.
func pendingRow(ctx context.Context, c *conn, dest []driver.Value, query string, args ...driver.Value) (bool, error) {
	found, err := c.row(ctx, dest, query, args...)
	if noPendingTable(err) {
		return false, nil
	}
	return found, err
}

// pendingAny reports whether any session is marked.
func pendingAny(ctx context.Context, c *conn) (bool, error) {
	dest := make([]driver.Value, 1)
	found, err := pendingRow(ctx, c, dest, stmtPendingAny)
	return found && dest[0] == int64(1), err
}

// pendingCount returns how many events wait after the marks (searchable
// or not: an estimate of the work left).
func pendingCount(ctx context.Context, c *conn) (int64, error) {
	dest := make([]driver.Value, 1)
	_, err := pendingRow(ctx, c, dest, stmtPendingCount)
	n, _ := dest[0].(int64)
	return n, err
}

// pendingAfter returns the seq after which session number n's events may
// be unindexed, and whether it is marked at all.
func pendingAfter(ctx context.Context, c *conn, n int64) (int64, bool, error) {
	dest := make([]driver.Value, 1)
	found, err := pendingRow(ctx, c, dest, stmtPendingAfter, n)
	after, _ := dest[0].(int64)
	return after, found && err == nil, err
}

// indexPending indexes every marked session's unindexed events and clears
// the marks, in one transaction of its own committed with
// synchronous=NORMAL. It does nothing when no session is marked. Either
// way the events this store appended before are no longer waiting.
func (s *Store) indexPending(ctx context.Context, c *conn) (err error) {
	left := s.unindexed.Load()
	defer func() {
		if err == nil {
			s.unindexed.Add(-left) // those appended since may be left
		}
	}()
	if marked, err := pendingAny(ctx, c); err != nil || !marked {
		return err
	}
	return s.inUnsyncedTx(ctx, c, func() error { return s.indexMarked(c) })
}

// indexMarked indexes the marked sessions' events after their marks and
// clears the marks, inside the caller's transaction.
func (s *Store) indexMarked(c *conn) error {
	if err := s.indexPages(c, stmtPendingEvents); err != nil {
		return err
	}
	_, err := c.exec(context.Background(), stmtPendingClear)
	return err
}

// appended counts n events this store appended and, once indexLag of them
// wait for the index, indexes them in the background. The caller holds
// s.mu for reading.
func (s *Store) appended(n int) {
	if s.unindexed.Add(int64(n)) < indexLag || !s.indexing.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer s.indexing.Store(false)
		if err := s.enter(); err != nil {
			return // closed: Close indexes what is left
		}
		defer s.mu.RUnlock()
		s.catchUp(context.Background())
	}()
}

// catchUp indexes the marked sessions on a connection of the pool. A
// failure is not the caller's: the marks stay for the next try, and a
// Search that finds them tries again.
func (s *Store) catchUp(ctx context.Context) error {
	return s.catchUpPast(ctx, 0)
}

// catchUpPast is catchUp when at least least events are marked in the
// database, whichever processes appended them, and a no-op otherwise.
func (s *Store) catchUpPast(ctx context.Context, least int64) error {
	c, err := s.conn(ctx)
	if err != nil {
		return err
	}
	waiting := least
	if least > 0 {
		waiting, err = pendingCount(ctx, c)
	}
	if err == nil && waiting >= least {
		err = s.indexPending(ctx, c)
	}
	s.pool.put(c, err != nil)
	return err
}

// searchTrailing answers q for a store that cannot index (a read-only
// one) while sessions are marked: the index's hits and the marked events
// that match, read in one snapshot, newest first. An event both indexed
// and marked (an older build indexes as it appends) is one hit.
func (s *Store) searchTrailing(ctx context.Context, c *conn, q checkpoint.Query, opts checkpoint.SearchOptions) ([]checkpoint.Hit, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = checkpoint.DefaultSearchLimit
	}
	var hits []checkpoint.Hit
	err := s.inReadTx(c, func() error {
		hits = hits[:0]
		type key struct {
			id  string
			seq int64
		}
		marked := make(map[key]bool)
		dest := make([]driver.Value, 5)
		err := c.each(ctx, dest, func() error {
			seq, _ := dest[1].(int64)
			us, _ := dest[3].(int64)
			e := session.Event{Seq: seq, Type: session.Type(asString(dest[2])), Time: entry.Micro(us), Data: []byte(asString(dest[4]))}
			if h, ok := checkpoint.NewHit(q, asString(dest[0]), e); ok {
				hits = append(hits, h)
				marked[key{h.Session, h.Seq}] = true
			}
			return nil
		}, stmtPendingSearch, opts.Namespace)
		if err != nil {
			return err
		}
		indexed, err := s.query(ctx, c, q, opts)
		if err != nil {
			return err
		}
		for _, h := range indexed {
			if !marked[key{h.Session, h.Seq}] {
				hits = append(hits, h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hits, checkpoint.CompareHits)
	return hits[:min(len(hits), limit)], nil
}
