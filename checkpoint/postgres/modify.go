package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// Delete implements checkpoint.Checkpointer: the session's row and its
// events go in one transaction. The row is deleted first, so an append
// waiting on it finds it gone and writes nothing.
func (s *Store) Delete(ctx context.Context, id string) error {
	if s.readOnly {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	defer s.leave()
	var deleted int64
	err := s.retrySafe(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM sessions WHERE id = $1`, id)
		b.Queue(`DELETE FROM events WHERE session = $1`, id)
		b.Queue(`DELETE FROM search_index WHERE session = $1`, id)
		b.Queue(`DELETE FROM mailbox WHERE session = $1`, id)
		queueNotify(b, id)
		br := s.pool.SendBatch(ctx, b)
		tag, err := br.Exec()
		if err == nil {
			deleted = tag.RowsAffected()
			_, err = br.Exec()
		}
		return errors.Join(err, br.Close())
	})
	s.forget(id)
	if err != nil {
		return s.fail("delete "+id, err)
	}
	if deleted == 0 {
		return fmt.Errorf("delete %s: %w", id, checkpoint.ErrNotFound)
	}
	return s.dropFold(ctx, id, -1) // fold.go
}

// Truncate implements checkpoint.Checkpointer. Under a row lock on the
// session it checks the head, refolds the summary from the kept events,
// deletes the rest and gives the session a new generation, so a Read in
// progress notices.
func (s *Store) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	if s.readOnly {
		return 0, fmt.Errorf("truncate %s: %w", id, checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	defer s.leave()
	if keepThrough < 1 {
		return 0, fmt.Errorf("truncate %s: %w: keep through seq %d: a log keeps at least its first event (seq 1)", id, checkpoint.ErrInvalid, keepThrough)
	}
	var head int64
	var next state
	truncate := func(db beginner) error {
		next = state{}
		return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			var raw []byte
			var cur state
			err := tx.QueryRow(ctx, `SELECT entry, generation, etag FROM sessions WHERE id = $1 FOR UPDATE`, id).Scan(&raw, &cur.gen, &cur.etag)
			if errors.Is(err, pgx.ErrNoRows) {
				return checkpoint.ErrNotFound
			}
			if err != nil {
				return err
			}
			if err := entry.DecodeInto(string(raw), &cur.sum); err != nil {
				return entryError(id, err)
			}
			cur.exists = true
			head = cur.sum.Head
			switch {
			case head != expectedHead:
				return &checkpoint.ConflictError{Session: id, Expected: expectedHead, Actual: head}
			case keepThrough > head:
				return fmt.Errorf("%w: keep through seq %d, past the head %d", checkpoint.ErrInvalid, keepThrough, head)
			case keepThrough == head:
				next = cur
				return nil
			}
			sum, maxData, err := fold(ctx, tx, id, keepThrough)
			if err != nil {
				return err
			}
			next = state{exists: true, sum: sum, gen: newTag(), etag: newTag()}
			if _, err := tx.Exec(ctx, `DELETE FROM search_index WHERE session = $1 AND seq > $2`, id, keepThrough); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM events WHERE session = $1 AND seq > $2`, id, keepThrough); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE sessions SET namespace = $2, kind = $3, head = $4, messages = $5, status = $6,
				created = $7, updated = $8, entry = $9, generation = $10, etag = $11, max_data = $12 WHERE id = $1`,
				id, sum.Namespace, sum.Kind, sum.Head, sum.Messages, string(sum.Status), sum.Created, sum.Updated,
				entry.Encode(&sum), next.gen, next.etag, maxData)
			head = sum.Head
			if err == nil {
				err = notifyTx(ctx, tx, id)
			}
			return err
		})
	}
	var err error
	if l := s.leaseOf(id); l != nil {
		// Under this Store's lease, on the connection holding it (lease.go).
		l.mu.Lock()
		err = s.onLease(ctx, l, pgconn.SafeToRetry, func(c *pgx.Conn) error { return truncate(c) })
		l.mu.Unlock()
	} else {
		err = s.retrySafe(ctx, func() error { return truncate(s.pool) })
	}
	var ce *checkpoint.ConflictError
	switch {
	case errors.As(err, &ce):
		s.forget(id)
		return 0, err
	case errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, checkpoint.ErrInvalid):
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	case err != nil:
		s.forget(id)
		return 0, s.fail("truncate "+id, err)
	}
	s.cacheMu.Lock()
	s.remember(id, next)
	s.cacheMu.Unlock()
	if err := s.dropFold(ctx, id, head); err != nil { // fold.go
		return 0, err
	}
	return head, nil
}

// beginner is what starts a transaction: the pool, or a lease's connection.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// fold recomputes the summary of the first keep events of a log, and the
// size of their largest data.
func fold(ctx context.Context, tx pgx.Tx, id string, keep int64) (session.Summary, int32, error) {
	sum := session.Summary{ID: id}
	var maxData int32
	rows, err := tx.Query(ctx, `SELECT seq, type, time, data FROM events WHERE session = $1 AND seq <= $2 ORDER BY seq`, id, keep)
	if err != nil {
		return sum, 0, err
	}
	defer rows.Close()
	var e session.Event
	var typ string
	var tm time.Time
	for rows.Next() {
		if err := rows.Scan(&e.Seq, &typ, &tm, &e.Data); err != nil {
			return sum, 0, err
		}
		e.Type, e.Time = session.Type(typ), tm.UTC()
		sum.Apply(e)
		maxData = max(maxData, int32(len(e.Data)))
	}
	return sum, maxData, rows.Err()
}

// retrySafe runs fn again while it fails before anything reached the server
// (so retrying cannot apply it twice), for up to retryWindow.
func (s *Store) retrySafe(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(retryWindow)
	backoff := 25 * time.Millisecond
	for {
		err := fn()
		if err == nil || !pgconn.SafeToRetry(err) || ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
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
