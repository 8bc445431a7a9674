package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// Read pages through a log: each page is one short query on a connection
// taken from the pool and given back before the page's events are yielded,
// so a slow reader holds no connection and no read transaction (which would
// keep the WAL from being checkpointed), and may call the store from inside
// its loop.
const (
	// pageRows caps the events of one page.
	pageRows = 512
	// pageBytes ends a page early once its events' data adds up to this
	// much, so that a page of large events does not use much memory.
	pageBytes = 4 << 20
)

// Statements of the read path.
const (
	stmtPage = `SELECT e.key & 4294967295, e.type, e.time, e.data FROM sessions s, events e
		WHERE s.id = ?1 AND e.key >= (s.n << 32) + ?2 AND e.key <= (s.n << 32) + 4294967295 ORDER BY e.key LIMIT ?3`
	stmtExists = `SELECT 1 FROM sessions WHERE id = ?`
	// List reads the sessions_list index only, and has SQLite concatenate
	// the entries into one value: one row to hand over instead of
	// thousands.
	stmtListKind   = `SELECT group_concat(entry, '') FROM (SELECT entry FROM sessions WHERE namespace = ? AND kind = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListAll    = `SELECT group_concat(entry, '') FROM (SELECT entry FROM sessions WHERE namespace = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListNSKind = `SELECT group_concat(entry, '') FROM (SELECT entry FROM sessions INDEXED BY sessions_list WHERE kind = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListNSAll  = `SELECT group_concat(entry, '') FROM (SELECT entry FROM sessions INDEXED BY sessions_list ORDER BY updated DESC, id LIMIT ?)`
)

// Read implements checkpoint.Checkpointer. Events are read in pages of up
// to 512 events (fewer when they are large). A page is a consistent
// snapshot; each later page starts by reading again the last event of the
// page before, and if that event changed or is gone (the log was truncated,
// rewritten or deleted while it was read) Read ends with a
// *checkpoint.ConflictError (or ErrNotFound) instead of joining two
// histories.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		from := max(fromSeq, 1)
		var last *mark
		for {
			page, more, err := s.page(ctx, id, from, last)
			if err != nil {
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
				return
			}
			if len(page) > 0 {
				// Taken before yielding: the events are the caller's to change.
				last = markOf(page[len(page)-1])
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if !more {
				return
			}
			from = last.seq + 1
		}
	}
}

// mark identifies an event already yielded, to check that it is still there.
type mark struct {
	seq  int64
	typ  session.Type
	time time.Time
	size int
	sum  uint32 // CRC-32C of the data
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func markOf(e session.Event) *mark {
	return &mark{seq: e.Seq, typ: e.Type, time: e.Time, size: len(e.Data), sum: crc32.Checksum(e.Data, castagnoli)}
}

func (m *mark) matches(e session.Event) bool {
	return e.Seq == m.seq && e.Type == m.typ && e.Time.Equal(m.time) && len(e.Data) == m.size && crc32.Checksum(e.Data, castagnoli) == m.sum
}

// page reads the events of id from seq from on; more reports that the log
// may go on after them. On the first page (last is nil) an unknown session
// is ErrNotFound; on later ones the page starts with the event last marks,
// checked and dropped.
func (s *Store) page(ctx context.Context, id string, from int64, last *mark) (page []session.Event, more bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if err := s.enter(); err != nil {
		return nil, false, err
	}
	defer s.mu.RUnlock()
	if s.empty {
		return nil, false, checkpoint.ErrNotFound
	}
	c, err := s.pool.get(ctx)
	if err != nil {
		return nil, false, s.readError(err)
	}
	defer func() { s.pool.put(c, false) }()
	start, rowsWanted := from, pageRows
	if last != nil {
		start, rowsWanted = last.seq, pageRows+1
	}
	err = s.retry(ctx, func() error {
		page, more = make([]session.Event, 0, rowsWanted), false
		rows, err := c.query(ctx, stmtPage, id, start, int64(rowsWanted))
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 4)
		size := 0
		for {
			page = append(page, session.Event{})
			ok, err := nextEvent(rows, dest, &page[len(page)-1])
			if err != nil || !ok {
				page = page[:len(page)-1]
				more = len(page) == rowsWanted
				return err
			}
			if size += len(page[len(page)-1].Data); size >= pageBytes {
				more = true
				return nil
			}
		}
	})
	if err != nil {
		return nil, false, s.readError(err)
	}
	switch {
	case last != nil && (len(page) == 0 || !last.matches(page[0])):
		sum, _, found, err := s.summary(ctx, c, id)
		switch {
		case err != nil:
			return nil, false, s.readError(err)
		case !found:
			return nil, false, checkpoint.ErrNotFound
		}
		return nil, false, &checkpoint.ConflictError{Session: id, Expected: last.seq, Actual: sum.Head}
	case last != nil:
		page = page[1:]
	case len(page) == 0:
		found, err := c.row(ctx, make([]driver.Value, 1), stmtExists, id)
		if err != nil {
			return nil, false, s.readError(err)
		}
		if !found {
			return nil, false, checkpoint.ErrNotFound
		}
	}
	return page, more, nil
}

// nextEvent decodes the next row of (seq, type, time, data) into e; ok is
// false at the end of the rows.
func nextEvent(rows driver.Rows, dest []driver.Value, e *session.Event) (ok bool, err error) {
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, err
	}
	e.Seq, _ = dest[0].(int64)
	switch t := dest[1].(type) {
	case string:
		e.Type = session.Type(t)
	case []byte:
		e.Type = session.Type(t)
	}
	us, _ := dest[2].(int64)
	e.Time = entry.Micro(us)
	switch d := dest[3].(type) {
	case []byte: // the driver's own copy: the event takes it
		e.Data = d
	case string:
		e.Data = []byte(d)
	default:
		e.Data = nil
	}
	return true, nil
}

// readError turns driver and pool errors into the store's.
func (s *Store) readError(err error) error {
	if errors.Is(err, errPoolClosed) {
		return checkpoint.ErrClosed
	}
	return s.explain(err)
}

// listWhat names a listing in errors.
func listWhat(namespace string) string {
	if namespace == "" {
		return "list every namespace"
	}
	return "list " + namespace
}

// newestFirst orders summaries as List returns them: most recently updated
// first, then by id.
func newestFirst(a, b session.Summary) int {
	if c := b.Updated.Compare(a.Updated); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Head implements checkpoint.Checkpointer.
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	if s.empty {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	c, err := s.pool.get(ctx)
	if err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, s.readError(err))
	}
	defer s.pool.put(c, false)
	var sum session.Summary
	var found bool
	err = s.retry(ctx, func() (err error) {
		sum, _, found, err = s.summary(ctx, c, id)
		return err
	})
	switch {
	case err != nil:
		return session.Summary{}, fmt.Errorf("head %s: %w", id, s.readError(err))
	case !found:
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	return sum, nil
}

// List implements checkpoint.Checkpointer. It reads only the sessions_list
// index: no log, no JSON. opts.Limit is applied by the query.
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("%s: %w", listWhat(namespace), err)
	}
	defer s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", listWhat(namespace), err)
	}
	if s.empty {
		return nil, nil
	}
	limit := int64(-1)
	if opts.Limit > 0 {
		limit = int64(opts.Limit)
	}
	var query string
	var args []driver.Value
	switch {
	case namespace != "" && !opts.AllKinds:
		query, args = stmtListKind, []driver.Value{namespace, opts.Kind, limit}
	case namespace != "":
		query, args = stmtListAll, []driver.Value{namespace, limit}
	case !opts.AllKinds:
		query, args = stmtListNSKind, []driver.Value{opts.Kind, limit}
	default:
		query, args = stmtListNSAll, []driver.Value{limit}
	}
	c, err := s.pool.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listWhat(namespace), s.readError(err))
	}
	defer s.pool.put(c, false)
	var out []session.Summary
	err = s.retry(ctx, func() error {
		dest := make([]driver.Value, 1)
		if _, err := c.row(ctx, dest, query, args...); err != nil {
			return err
		}
		var err error
		if out, err = entry.DecodeAll(asString(dest[0])); err != nil {
			return fmt.Errorf("a session summary in %s is damaged (%w); restore the database from a backup", s.path, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", listWhat(namespace), s.readError(err))
	}
	// The subquery's order is the order group_concat sees the rows in, but
	// SQL does not promise it: check it (cheap) and sort if ever needed.
	if !slices.IsSortedFunc(out, newestFirst) {
		slices.SortFunc(out, newestFirst)
	}
	return out, nil
}
