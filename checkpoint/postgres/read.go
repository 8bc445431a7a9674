package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Read pages are capped by rows and by bytes, so that a log of big file
// snapshots is not read into memory at once. The first page is small so the
// caller can start on it while the next one is fetched.
const (
	firstPageRows = 512
	pageRows      = 4096
	pageBytes     = 4 << 20
)

// readPageSQL returns up to $3 events of session $1 from seq $2 on, ending
// with the first event at which the data read reaches $4 bytes, each row
// with the session's generation (NULL if the session does not exist). One
// statement, so one snapshot: the generation and the events agree.
const readPageSQL = `SELECT (SELECT generation FROM sessions WHERE id = $1), seq, type, time, data
FROM events
WHERE session = $1 AND seq >= $2 AND seq <= (
	SELECT coalesce(min(seq), $2 + $3) FROM (
		SELECT seq, sum(len) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS upto
		FROM (
			SELECT seq, coalesce(octet_length(data), 0) AS len
			FROM events WHERE session = $1 AND seq >= $2
			ORDER BY seq LIMIT $3
		) sizes
	) running
	WHERE upto >= $4
)
ORDER BY seq
LIMIT $3`

// page is one page of a Read.
type page struct {
	gen    int64
	events []session.Event
	last   bool // no events after these when the page was read
}

// fetched is the outcome of reading a page.
type fetched struct {
	p     page
	found bool
	err   error
}

// Read implements checkpoint.Checkpointer. It reads the log a page at a time
// (up to 4096 events or 4 MiB), each page one statement, and fetches the next
// page while the caller consumes the current one. It holds no connection
// while the caller runs. If the session is truncated or deleted and
// re-created between two pages, the iteration ends with an error rather than
// mix two logs; appends between pages are simply seen.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		next := max(fromSeq, 1)
		ahead := make(chan fetched, 1)
		fetch := func(from int64, rows int) {
			p, found, err := s.readPage(ctx, id, from, rows)
			ahead <- fetched{p, found, err}
		}
		go fetch(next, firstPageRows)
		var gen int64
		for first := true; ; first = false {
			f := <-ahead
			p := f.p
			switch {
			case f.err != nil:
				yield(session.Event{}, s.fail("read "+id, f.err))
				return
			case !f.found && first:
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound))
				return
			case !f.found:
				yield(session.Event{}, fmt.Errorf("read %s: %w: the session was deleted while being read", id, checkpoint.ErrNotFound))
				return
			case !first && p.gen != gen:
				yield(session.Event{}, fmt.Errorf("read %s: the session was truncated or replaced while being read (at seq %d): read it again", id, next))
				return
			}
			gen = p.gen
			if !p.last {
				// A caller that stops early leaves this fetch to finish on
				// its own; Close waits for it.
				go fetch(p.events[len(p.events)-1].Seq+1, pageRows)
			}
			for _, e := range p.events {
				if !yield(e, nil) {
					return
				}
			}
			if p.last {
				return
			}
			next = p.events[len(p.events)-1].Seq + 1
		}
	}
}

// readPage reads up to rows events of a log from seq from on. found is false
// if the session does not exist. A page that ends the log has last set.
func (s *Store) readPage(ctx context.Context, id string, from int64, limit int) (p page, found bool, err error) {
	if err := s.enter(); err != nil {
		return p, false, err
	}
	defer s.leave()
	err = s.retry(ctx, func() error {
		p, found = page{}, false
		rows, err := s.pool.Query(ctx, readPageSQL, id, from, limit, pageBytes)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			gen   *int64
			typ   string
			tm    time.Time
			bytes int
		)
		for rows.Next() {
			var e session.Event
			if err := rows.Scan(&gen, &e.Seq, &typ, &tm, &e.Data); err != nil {
				return err
			}
			if gen == nil {
				break // events without a session: it is being deleted
			}
			e.Type, e.Time = session.Type(typ), tm.UTC()
			p.events = append(p.events, e)
			bytes += len(e.Data)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(p.events) > 0 {
			p.gen, found = *gen, true
			p.last = len(p.events) < limit && bytes < pageBytes
			return nil
		}
		// No events from here on: does the session exist?
		p.last = true
		err = s.pool.QueryRow(ctx, `SELECT generation FROM sessions WHERE id = $1`, id).Scan(&p.gen)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	return p, found, err
}

// Head implements checkpoint.Checkpointer: one row of the sessions table.
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, err)
	}
	defer s.leave()
	var raw []byte
	err := s.retry(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT summary FROM sessions WHERE id = $1`, id).Scan(&raw)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Summary{}, fmt.Errorf("head %s: %w", id, checkpoint.ErrNotFound)
	}
	if err != nil {
		return session.Summary{}, s.fail("head "+id, err)
	}
	var sum session.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		return session.Summary{}, fmt.Errorf("head %s: decode the stored summary: %w", id, err)
	}
	return sum, nil
}

// List implements checkpoint.Checkpointer from the sessions table and its
// indexes on (namespace, updated) and (updated); ties in updated are broken
// by id.
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("list %q: %w", namespace, err)
	}
	defer s.leave()
	var limit *int
	if opts.Limit > 0 {
		limit = &opts.Limit
	}
	q := `SELECT summary FROM sessions`
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
		var raw []byte
		for rows.Next() {
			if err := rows.Scan(&raw); err != nil {
				return err
			}
			var sum session.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				return fmt.Errorf("decode a stored summary: %w", err)
			}
			out = append(out, sum)
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
