package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

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
	// pageRows caps the events of one page. Each page costs a query, a
	// goroutine the driver starts to watch the context, and a second read
	// of the event the page before ended with: 512 made
	// BenchmarkSQLite/ReadRebuild10k 37-38 ms, 2048 32-34 ms, and 4096 or
	// 8192 no better (6 Dec).
	pageRows = 2048
	// firstPageCap is the room a first page starts with: most logs are
	// short (a resume reads what follows its saved state), and a page
	// grows as it fills. Starting at pageRows, BenchmarkReadShort (8
	// events) took 37-40 µs and 52 KB; starting at 64, 17-18 µs and 8 KB.
	firstPageCap = 64
	// pageBytes ends a page early once its events' data adds up to this
	// much, so that a page of large events does not use much memory.
	pageBytes = 4 << 20
)

// Statements of the read path.
const (
	// Each row carries the event's stored checksum, and the row of the
	// first seq asked for carries the session's head, read in the same
	// snapshot as the events (on that row only, so that the other rows
	// cost the driver no boxed integer).
	stmtPage = `SELECT e.key & 4294967295, e.type, e.time, e.data, e.crc, CASE WHEN e.key = (s.n << 32) + ?2 THEN s.head END
		FROM sessions s, events e
		WHERE s.id = ?1 AND e.key >= (s.n << 32) + ?2 AND e.key <= (s.n << 32) + 4294967295 ORDER BY e.key LIMIT ?3`
	// The same for a version 1 database, opened read-only: no checksums.
	stmtPageV1 = `SELECT e.key & 4294967295, e.type, e.time, e.data, NULL, CASE WHEN e.key = (s.n << 32) + ?2 THEN s.head END
		FROM sessions s, events e
		WHERE s.id = ?1 AND e.key >= (s.n << 32) + ?2 AND e.key <= (s.n << 32) + 4294967295 ORDER BY e.key LIMIT ?3`
	stmtExists = `SELECT head FROM sessions WHERE id = ?`
	// List reads the sessions_list index only, and has SQLite concatenate
	// the entries into one value: one row to hand over instead of
	// thousands. It is handed over as a blob: SQLite copies a text value
	// once more to end it with a NUL (about a megabyte for 10,000 sessions).
	stmtListKind   = `SELECT CAST(group_concat(entry, '') AS BLOB) FROM (SELECT entry FROM sessions WHERE namespace = ? AND kind = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListAll    = `SELECT CAST(group_concat(entry, '') AS BLOB) FROM (SELECT entry FROM sessions WHERE namespace = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListNSKind = `SELECT CAST(group_concat(entry, '') AS BLOB) FROM (SELECT entry FROM sessions INDEXED BY sessions_list WHERE kind = ? ORDER BY updated DESC, id LIMIT ?)`
	stmtListNSAll  = `SELECT CAST(group_concat(entry, '') AS BLOB) FROM (SELECT entry FROM sessions INDEXED BY sessions_list ORDER BY updated DESC, id LIMIT ?)`
)

// Read implements checkpoint.Checkpointer. Events are read in pages of up
// to 2048 events (fewer when they are large). A page is a consistent
// snapshot; each later page starts by reading again the last event of the
// page before, and if that event changed or is gone (the log was truncated,
// rewritten or deleted while it was read) Read ends with a
// *checkpoint.ConflictError (or ErrNotFound) instead of joining two
// histories. Every event's stored checksum is checked, and seqs must run
// without a gap up to the session's recorded head: any mismatch ends the
// read with a *checkpoint.CorruptError after the events before it.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		from := max(fromSeq, 1)
		var last *mark
		for {
			page, more, err := s.page(ctx, id, from, last)
			if len(page) > 0 {
				// Taken before yielding: the events are the caller's to change.
				last = markOf(page[len(page)-1])
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
				return
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
func (s *Store) page(ctx context.Context, id string, from int64, last *mark) ([]session.Event, bool, error) {
	page, more, err := s.pageOnce(ctx, id, from, last, false)
	if errors.Is(err, errGrew) {
		page, more, err = s.pageOnce(ctx, id, from, last, true)
	}
	return page, more, err
}

// errGrew is pageOnce finding no event at from although the head it read
// next is at or past from: a writer appended between the two statements,
// or the log is cut. Read again, a second empty page is damage.
var errGrew = errors.New("the log grew while it was read")

// pageOnce is one try of page; see errGrew for final.
func (s *Store) pageOnce(ctx context.Context, id string, from int64, last *mark, final bool) (page []session.Event, more bool, err error) {
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
	c, err := s.conn(ctx)
	if err != nil {
		return nil, false, s.readError(err)
	}
	defer func() { s.pool.put(c, false) }()
	start, rowsWanted, room := from, pageRows, firstPageCap
	if last != nil {
		// The log went on past a whole page: this one is likely full too.
		start, rowsWanted, room = last.seq, pageRows+1, pageRows+1
	}
	query := stmtPage
	if s.noChecksums {
		query = stmtPageV1
	}
	var (
		sums     []driver.Value // each event's stored checksum (nil where none)
		head     int64          // the recorded head; -1 if the row of start is missing
		dbDamage error          // SQLITE_CORRUPT after the rows in page
	)
	err = s.retry(ctx, func() error {
		page, sums, more, dbDamage, head = make([]session.Event, 0, room), make([]driver.Value, 0, room), false, nil, -1
		rows, err := c.query(ctx, query, id, start, int64(rowsWanted))
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 6)
		size := 0
		for {
			page = append(page, session.Event{})
			ok, err := nextEvent(rows, dest, &page[len(page)-1])
			if err != nil && code(err)&0xff == sqliteCorrupt {
				// The rows before it are still checked and yielded.
				page, dbDamage = page[:len(page)-1], err
				return nil
			}
			if err != nil || !ok {
				page = page[:len(page)-1]
				more = len(page) == rowsWanted
				return err
			}
			sums = append(sums, dest[4])
			if h, ok := dest[5].(int64); ok {
				head = h
			}
			if size += len(page[len(page)-1].Data); size >= pageBytes {
				more = true
				return nil
			}
		}
	})
	if code(err)&0xff == sqliteCorrupt {
		page, dbDamage, err = nil, err, nil
	}
	if err != nil {
		return nil, false, s.readError(err)
	}
	good, damage := s.verify(id, start, head, page, sums, more || dbDamage != nil)
	if damage == nil && dbDamage != nil {
		damage = &checkpoint.CorruptError{Session: id, Seq: start + int64(good),
			Reason: fmt.Sprintf("SQLite reports the database file %s damaged where seq %d is stored (%v)", s.path, start+int64(good), dbDamage)}
	}
	if damage != nil {
		if good == 0 || last != nil && good == 1 {
			return nil, false, damage
		}
		page, more = page[:good], false
	}
	switch {
	case last != nil && (len(page) == 0 || !last.matches(page[0])):
		var sum session.Summary
		var found bool
		err := s.retry(ctx, func() (err error) {
			sum, _, found, err = s.summary(ctx, c, id)
			return err
		})
		switch {
		case err != nil:
			return nil, false, s.readError(err)
		case !found:
			return nil, false, checkpoint.ErrNotFound
		}
		return nil, false, &checkpoint.ConflictError{Session: id, Expected: last.seq, Actual: sum.Head}
	case last != nil:
		page = page[1:]
	case len(page) == 0 && damage == nil:
		dest := make([]driver.Value, 1)
		var found bool
		// Retried as the page was: right after a writer was killed, this
		// statement can meet the WAL recovery too (the page of a log that
		// does not exist, such as an unknown task list, is all it reads).
		err := s.retry(ctx, func() (err error) {
			found, err = c.row(ctx, dest, stmtExists, id)
			return err
		})
		if err != nil {
			return nil, false, s.readError(err)
		}
		if !found {
			return nil, false, checkpoint.ErrNotFound
		}
		head, _ := dest[0].(int64)
		if head >= from && !final {
			return nil, false, errGrew
		}
		if err := checkpoint.NewVerifier(id, from, head).End(); err != nil {
			return nil, false, err
		}
	}
	return page, more, damage
}

// verify checks one page read from seq start of a log whose recorded head
// is head: each event's checksum and seq, and, where the page is the last,
// that it reaches the head. good is how many of the page's events verify;
// damage, a *checkpoint.CorruptError, says what is wrong with the next.
func (s *Store) verify(id string, start, head int64, page []session.Event, sums []driver.Value, more bool) (good int, damage error) {
	if len(page) == 0 {
		return 0, nil
	}
	if head < 0 {
		// The row of start is missing: the first event reports it.
		head = math.MaxInt64
	}
	v := checkpoint.NewVerifier(id, start, head)
	for i, e := range page {
		var err error
		if sum, ok := sums[i].(int64); ok {
			err = v.Event(e, uint32(sum))
		} else if s.noChecksums {
			err = v.Seq(e.Seq)
		} else {
			err = &checkpoint.CorruptError{Session: id, Seq: e.Seq, Reason: fmt.Sprintf("seq %d has no stored checksum", e.Seq)}
		}
		if err != nil {
			return i, err
		}
	}
	if !more && head != math.MaxInt64 {
		return len(page), v.End()
	}
	return len(page), nil
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

// head is Head before the refold; it reads the stored summary.
func (s *Store) head(ctx context.Context, id string) (session.Summary, error) {
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
	c, err := s.conn(ctx)
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

// list is List before the refold; it reads the stored summary. It reads only the sessions_list
// index: no log, no JSON. opts.Limit is applied by the query.
func (s *Store) list(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
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
	c, err := s.conn(ctx)
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
		if out, err = entry.DecodeAll(ownString(dest[0])); errors.Is(err, session.ErrNewer) {
			return fmt.Errorf("a session summary in %s was %w", s.path, err)
		} else if err != nil {
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

// ownString is v as a string, without a copy when it is a blob: the
// driver's own copy, which nothing else holds (the decoded summaries cut
// their strings from it).
func ownString(v driver.Value) string {
	if b, ok := v.([]byte); ok {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return asString(v)
}
