package postgres

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// A Read fetches pages of up to pageRows events, fewer when the session has
// big events so that a page holds at most pageBytes of data, with
// pagesAhead pages in flight while the caller works. The first page is small
// so that the caller can start early.
const (
	firstPageRows = 256
	pageRows      = 2048
	pageBytes     = 4 << 20
	pagesAhead    = 2
)

// readPageSQL returns the events of session $1 with seqs $2 to $3, each row
// with the session's generation. One statement, so one snapshot: the
// generation and the events agree.
const readPageSQL = `SELECT (SELECT generation FROM sessions WHERE id = $1), seq, type, time, data, crc
FROM events
WHERE session = $1 AND seq BETWEEN $2 AND $3
ORDER BY seq`

// page is the outcome of reading one page.
type page struct {
	from, to int64 // the seqs asked for
	gen      *int64
	events   []session.Event
	sums     []int32 // the events' stored checksums
	err      error
}

// Read implements checkpoint.Checkpointer. It reads the session's row first
// (head, generation, the size of its largest event), then the events up to
// that head a page at a time, each page one statement on a connection of its
// own, with the next pages fetched while the caller consumes the current
// one. It holds no connection while the caller runs. Events appended after
// Read began are not seen. If the session is truncated, deleted or
// re-created between two pages, the iteration ends with an error rather than
// mix two logs. Every event's stored checksum is checked, and seqs must run
// without a gap up to the head: any mismatch ends the read with a
// *checkpoint.CorruptError after the events before it.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		gen, head, maxData, err := s.readMeta(ctx, id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			yield(session.Event{}, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound))
			return
		case err != nil:
			yield(session.Event{}, s.fail("read "+id, err))
			return
		}
		rows := int64(pageRows)
		if maxData > 0 {
			rows = min(max(int64(pageBytes/maxData), 1), pageRows)
		}
		next := max(fromSeq, 1)
		var ahead []chan page
		fetch := func(n int64) {
			if next > head {
				return
			}
			from, to := next, min(next+n-1, head)
			next = to + 1
			ch := make(chan page, 1) // a fetch the caller abandoned ends on its own
			ahead = append(ahead, ch)
			go func() { ch <- s.readPage(ctx, id, from, to) }()
		}
		fetch(min(rows, firstPageRows))
		for range pagesAhead - 1 {
			fetch(rows)
		}
		for len(ahead) > 0 {
			p := <-ahead[0]
			ahead = ahead[1:]
			switch {
			case p.err != nil:
				yield(session.Event{}, s.fail("read "+id, p.err))
				return
			case p.gen == nil:
				yield(session.Event{}, fmt.Errorf("read %s: %w: the session was deleted while being read", id, checkpoint.ErrNotFound))
				return
			case *p.gen != gen:
				yield(session.Event{}, fmt.Errorf("read %s: %w (at seq %d): read it again", id, checkpoint.ErrLogReplaced, p.from))
				return
			}
			fetch(rows)
			// The same generation throughout: the rows of seqs from to to
			// are all there, each as it was written, or the log is damaged.
			v := checkpoint.NewVerifier(id, p.from, p.to)
			for i, e := range p.events {
				if err := v.Event(e, uint32(p.sums[i])); err != nil {
					yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
					return
				}
				if !yield(e, nil) {
					return
				}
			}
			if err := v.End(); err != nil {
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, err))
				return
			}
		}
	}
}

// readMeta reads what Read needs of the session's row; pgx.ErrNoRows if
// there is none.
func (s *Store) readMeta(ctx context.Context, id string) (gen, head int64, maxData int, err error) {
	if err := s.enter(); err != nil {
		return 0, 0, 0, err
	}
	defer s.leave()
	err = s.retry(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT generation, head, max_data FROM sessions WHERE id = $1`, id).Scan(&gen, &head, &maxData)
	})
	return gen, head, maxData, err
}

// readPage reads the events with seqs from to to.
func (s *Store) readPage(ctx context.Context, id string, from, to int64) (p page) {
	p.from, p.to = from, to
	if p.err = s.enter(); p.err != nil {
		return p
	}
	defer s.leave()
	p.err = s.retry(ctx, func() error {
		p.gen, p.events, p.sums = nil, make([]session.Event, 0, to-from+1), make([]int32, 0, to-from+1)
		rows, err := s.pool.Query(ctx, readPageSQL, id, from, to)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			typ string
			tm  time.Time
			sum int32
		)
		for rows.Next() {
			var e session.Event
			if err := rows.Scan(&p.gen, &e.Seq, &typ, &tm, &e.Data, &sum); err != nil {
				return err
			}
			e.Type, e.Time = session.Type(typ), tm.UTC()
			p.events, p.sums = append(p.events, e), append(p.sums, sum)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(p.events) == 0 {
			// Nothing in the range: the log was cut or the session is gone.
			var g int64
			if err := s.pool.QueryRow(ctx, `SELECT generation FROM sessions WHERE id = $1`, id).Scan(&g); err == nil {
				p.gen = &g
			} else if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		return nil
	})
	return p
}

// head is Head before the refold; it reads the stored summary: one row of the sessions table.
func (s *Store) head(ctx context.Context, id string) (session.Summary, error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	defer s.leave()
	var raw []byte
	err := s.retry(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT entry FROM sessions WHERE id = $1`, id).Scan(&raw)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	if err != nil {
		return session.Summary{}, s.fail("head "+id, err)
	}
	var sum session.Summary
	if err := entry.DecodeInto(string(raw), &sum); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, entryError(id, err))
	}
	return sum, nil
}

// list is List before the refold; it reads the stored summary from the sessions table and its
// indexes on (namespace, updated) and (updated); ties in updated are broken
// by id.
func (s *Store) list(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("list %q: %w", namespace, err)
	}
	defer s.leave()
	var limit *int
	if opts.Limit > 0 {
		limit = &opts.Limit
	}
	q := `SELECT entry FROM sessions`
	var args []any
	where := func(cond string, arg any) {
		args = append(args, arg)
		sep := " WHERE "
		if len(args) > 1 {
			sep = " AND "
		}
		q += fmt.Sprintf("%s%s $%d", sep, cond, len(args))
	}
	if namespace != "" {
		where("namespace =", namespace)
	}
	if !opts.AllKinds {
		where("kind =", opts.Kind)
	}
	args = append(args, limit)
	q += fmt.Sprintf(" ORDER BY updated DESC, id LIMIT $%d", len(args))
	var out []session.Summary
	err := s.retry(ctx, func() error {
		out = out[:0]
		rows, err := s.pool.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		binary := rows.FieldDescriptions()[0].Format == pgx.BinaryFormatCode
		var raw []byte
		for rows.Next() {
			// A binary bytea is the entry's bytes as they are, good until
			// the next row: decodeEntry's string copy is the only one.
			if binary {
				raw = rows.RawValues()[0]
			} else if err := rows.Scan(&raw); err != nil {
				return err
			}
			if raw == nil {
				return fmt.Errorf("decode a stored summary: %w", entry.ErrMalformed)
			}
			out = append(out, session.Summary{})
			if err := entry.DecodeInto(string(raw), &out[len(out)-1]); err != nil {
				return entryError("", err)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.fail(fmt.Sprintf("list %q", namespace), err)
	}
	return out, nil
}

// retry runs fn again while it fails because the connection broke, for up
// to retryWindow. Only for statements that are safe to repeat.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(retryWindow)
	backoff := 25 * time.Millisecond
	for {
		err := fn()
		if err == nil || !isTransient(err) || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		backoff *= 2
	}
}
