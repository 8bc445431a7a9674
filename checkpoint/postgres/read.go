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
// snapshots is not read into memory at once.
const (
	pageRows  = 4096
	pageBytes = 4 << 20
)

// readPageSQL returns up to $3 events of session $1 from seq $2 on, stopping
// at the first event that starts past $4 bytes of data, with the session's
// generation. A session that exists yields at least one row (with NULL event
// columns if it has no events from $2 on); one that does not yields none.
const readPageSQL = `SELECT s.generation, e.seq, e.type, e.time, e.data
FROM sessions s
LEFT JOIN LATERAL (
	SELECT seq, type, time, data FROM (
		SELECT seq, type, time, data, sum(coalesce(octet_length(data), 0)) OVER (ORDER BY seq) AS upto
		FROM events
		WHERE session = s.id AND seq >= $2
		ORDER BY seq
		LIMIT $3
	) p
	WHERE upto - coalesce(octet_length(data), 0) < $4
) e ON true
WHERE s.id = $1
ORDER BY e.seq`

// page is one page of a Read.
type page struct {
	gen    int64
	events []session.Event
	last   bool // no events after these when the page was read
}

// Read implements checkpoint.Checkpointer. It reads the log a page at a time
// (up to 4096 events or 4 MiB), each page one statement, and holds no
// connection while the caller consumes a page. If the session is truncated
// or deleted and re-created between two pages, the iteration ends with an
// error rather than mix two logs; appends between pages are simply seen.
func (s *Store) Read(ctx context.Context, id string, fromSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		next := max(fromSeq, 1)
		var gen int64
		for first := true; ; first = false {
			p, found, err := s.readPage(ctx, id, next)
			switch {
			case err != nil:
				yield(session.Event{}, s.fail("read "+id, err))
				return
			case !found && first:
				yield(session.Event{}, fmt.Errorf("read %s: %w", id, checkpoint.ErrNotFound))
				return
			case !found:
				yield(session.Event{}, fmt.Errorf("read %s: %w: the session was deleted while being read", id, checkpoint.ErrNotFound))
				return
			case !first && p.gen != gen:
				yield(session.Event{}, fmt.Errorf("read %s: the session was truncated or replaced while being read (at seq %d): read it again", id, next))
				return
			}
			gen = p.gen
			for _, e := range p.events {
				if !yield(e, nil) {
					return
				}
			}
			if p.last || len(p.events) == 0 {
				return
			}
			next = p.events[len(p.events)-1].Seq + 1
		}
	}
}

// readPage reads one page of a log from seq from on. found is false if the
// session does not exist.
func (s *Store) readPage(ctx context.Context, id string, from int64) (p page, found bool, err error) {
	if err := s.enter(); err != nil {
		return p, false, err
	}
	defer s.leave()
	err = s.retry(ctx, func() error {
		p, found = page{}, false
		rows, err := s.pool.Query(ctx, readPageSQL, id, from, pageRows, pageBytes)
		if err != nil {
			return err
		}
		defer rows.Close()
		var (
			seq   *int64
			typ   *string
			tm    *time.Time
			data  []byte
			bytes int
		)
		for rows.Next() {
			found = true
			if err := rows.Scan(&p.gen, &seq, &typ, &tm, &data); err != nil {
				return err
			}
			if seq == nil {
				continue
			}
			p.events = append(p.events, session.Event{Seq: *seq, Type: session.Type(*typ), Time: tm.UTC(), Data: data})
			bytes += len(data)
			data = nil
		}
		if err := rows.Err(); err != nil {
			return err
		}
		p.last = len(p.events) < pageRows && bytes < pageBytes
		return nil
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
