package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.Mailbox = (*Store)(nil)

// createMailbox creates the mailbox table (see the package documentation).
// It is made when a writable Store opens, outside the numbered migrations:
// an optional ability whose table older builds ignore. Delete removes a
// session's entries in its own transaction, so the table must be there.
const createMailbox = `CREATE TABLE IF NOT EXISTS mailbox (
	session text NOT NULL,
	call    text NOT NULL,
	kind    text NOT NULL,
	request bytea NOT NULL,
	answer  bytea,
	posted  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session, call)
)`

// ensureMailbox creates the mailbox table unless it exists, under the
// schema's advisory lock so hosts opening at once do not race on it.
func ensureMailbox(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('mailbox') IS NOT NULL`).Scan(&exists); err != nil || exists {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockSQL); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, createMailbox)
		return err
	})
}

// Post implements checkpoint.Mailbox. The entry is stored only if the
// session's row exists, in one statement, and other Stores watching the
// session are told (notify.go).
func (s *Store) Post(ctx context.Context, id, call, kind string, request []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if request == nil {
		request = []byte{}
	}
	var n int64
	err := s.mailWrite(ctx, "post "+id+"/"+call, func() error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO mailbox (session, call, kind, request) SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT FROM sessions WHERE id = $1)
			ON CONFLICT (session, call) DO UPDATE SET kind = excluded.kind, request = excluded.request, answer = NULL, posted = now()`,
			id, call, kind, request)
		queueNotify(b, id)
		br := s.pool.SendBatch(ctx, b)
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return errors.Join(err, br.Close())
	})
	if err == nil && n == 0 {
		return fmt.Errorf("post %s/%s: %w", id, call, checkpoint.ErrNotFound)
	}
	return err
}

// Answer implements checkpoint.Mailbox: a conditional update, so of two
// answers racing from two hosts one takes.
func (s *Store) Answer(ctx context.Context, id, call, kind string, answer []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if answer == nil {
		answer = []byte{}
	}
	var n int64
	err := s.mailWrite(ctx, "answer "+id+"/"+call, func() error {
		b := &pgx.Batch{}
		b.Queue(`UPDATE mailbox SET answer = $4 WHERE session = $1 AND call = $2 AND kind = $3 AND answer IS NULL`, id, call, kind, answer)
		queueNotify(b, id)
		br := s.pool.SendBatch(ctx, b)
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return errors.Join(err, br.Close())
	})
	if err != nil || n == 1 {
		return err
	}
	var have string
	var answered bool
	err = s.pool.QueryRow(ctx, `SELECT kind, answer IS NOT NULL FROM mailbox WHERE session = $1 AND call = $2`, id, call).Scan(&have, &answered)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && have != kind:
		return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrNotFound)
	case err != nil:
		return s.fail("answer "+id+"/"+call, err)
	}
	return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrAnswered)
}

// Unpost implements checkpoint.Mailbox.
func (s *Store) Unpost(ctx context.Context, id, call string) error {
	return s.mailWrite(ctx, "unpost "+id+"/"+call, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM mailbox WHERE session = $1 AND ($2 = '' OR call = $2)`, id, call)
		return err
	})
}

// mailWrite runs write, retried while that is safe.
func (s *Store) mailWrite(ctx context.Context, what string, write func() error) error {
	if s.readOnly {
		return fmt.Errorf("%s: %w", what, checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer s.leave()
	if err := s.retrySafe(ctx, write); err != nil {
		return s.fail(what, err)
	}
	return nil
}

// Mail implements checkpoint.Mailbox.
func (s *Store) Mail(ctx context.Context, id string) ([]checkpoint.Mail, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("mail %s: %w", id, err)
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, `SELECT call, kind, request, answer, posted FROM mailbox WHERE session = $1 ORDER BY posted, call`, id)
	if err != nil {
		if undefinedTable(err) {
			return nil, nil
		}
		return nil, s.fail("mail "+id, err)
	}
	var out []checkpoint.Mail
	var m checkpoint.Mail
	var posted time.Time
	_, err = pgx.ForEachRow(rows, []any{&m.Call, &m.Kind, &m.Request, &m.Answer, &posted}, func() error {
		out = append(out, checkpoint.Mail{Session: id, Call: m.Call, Kind: m.Kind,
			Request: append([]byte{}, m.Request...), Answer: cloneAnswer(m.Answer), Posted: posted.UTC()})
		return nil
	})
	if err != nil {
		return nil, s.fail("mail "+id, err)
	}
	return out, nil
}

// cloneAnswer copies an answer, keeping nil (no answer) as nil.
func cloneAnswer(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Mailboxes implements checkpoint.Mailbox.
func (s *Store) Mailboxes(ctx context.Context) ([]string, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("mailboxes: %w", err)
	}
	defer s.leave()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT session FROM mailbox ORDER BY session`)
	if err != nil {
		if undefinedTable(err) {
			return nil, nil
		}
		return nil, s.fail("mailboxes", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail("mailboxes", err)
	}
	return ids, nil
}
