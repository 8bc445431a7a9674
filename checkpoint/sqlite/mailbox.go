package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.Mailbox = (*Store)(nil)

// mailboxTable is the mailbox (see the package documentation). Like the
// blob table it is created by its first use, Post, so older builds keep
// opening databases a newer one posted in.
const mailboxTable = `CREATE TABLE IF NOT EXISTS mailbox (
	session TEXT NOT NULL,
	call    TEXT NOT NULL,
	kind    TEXT NOT NULL,
	request BLOB NOT NULL,
	answer  BLOB,
	posted  INTEGER NOT NULL,
	PRIMARY KEY (session, call)
) WITHOUT ROWID`

const (
	stmtMailPost     = `INSERT OR REPLACE INTO mailbox (session, call, kind, request, answer, posted) VALUES (?, ?, ?, ?, NULL, ?)`
	stmtMailAnswer   = `UPDATE mailbox SET answer = ? WHERE session = ? AND call = ? AND kind = ? AND answer IS NULL`
	stmtMailOne      = `SELECT kind, answer IS NOT NULL FROM mailbox WHERE session = ? AND call = ?`
	stmtMailOf       = `SELECT call, kind, request, answer, posted FROM mailbox WHERE session = ? ORDER BY posted, call`
	stmtMailDrop     = `DELETE FROM mailbox WHERE session = ? AND (? = '' OR call = ?)`
	stmtMailSessions = `SELECT DISTINCT session FROM mailbox ORDER BY session`
	stmtSessionIs    = `SELECT 1 FROM sessions WHERE id = ?`
)

// noMailTable reports whether err says the mailbox table does not exist yet:
// nothing was ever posted.
func noMailTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: mailbox")
}

// Post implements checkpoint.Mailbox.
func (s *Store) Post(ctx context.Context, id, call, kind string, request []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if request == nil {
		request = []byte{}
	}
	return s.mailWrite(ctx, "post "+id+"/"+call, func(c *conn) error {
		if err := c.script(context.Background(), mailboxTable); err != nil {
			return err
		}
		found, err := c.row(context.Background(), make([]driver.Value, 1), stmtSessionIs, id)
		if err != nil {
			return err
		}
		if !found {
			return checkpoint.ErrNotFound
		}
		_, err = c.exec(context.Background(), stmtMailPost, id, call, kind, request, time.Now().UnixMicro())
		return err
	})
}

// Answer implements checkpoint.Mailbox.
func (s *Store) Answer(ctx context.Context, id, call, kind string, answer []byte) error {
	if err := checkpoint.CheckMail(id, call, kind); err != nil {
		return err
	}
	if answer == nil {
		answer = []byte{}
	}
	err := s.mailWrite(ctx, "answer "+id+"/"+call, func(c *conn) error {
		n, err := c.exec(context.Background(), stmtMailAnswer, answer, id, call, kind)
		if err != nil || n == 1 {
			return err
		}
		dest := make([]driver.Value, 2)
		found, err := c.row(context.Background(), dest, stmtMailOne, id, call)
		switch {
		case err != nil:
			return err
		case !found || dest[0] != kind:
			return checkpoint.ErrNotFound
		}
		return checkpoint.ErrAnswered
	})
	if noMailTable(err) {
		return fmt.Errorf("answer %s/%s: %w", id, call, checkpoint.ErrNotFound)
	}
	return err
}

// Unpost implements checkpoint.Mailbox.
func (s *Store) Unpost(ctx context.Context, id, call string) error {
	err := s.mailWrite(ctx, "unpost "+id+"/"+call, func(c *conn) error {
		_, err := c.exec(context.Background(), stmtMailDrop, id, call, call)
		return err
	})
	if noMailTable(err) {
		return nil
	}
	return err
}

// mailWrite runs f in a write transaction; an error f returns wrapping a
// checkpoint sentinel is passed on as it is, wrapped with what.
func (s *Store) mailWrite(ctx context.Context, what string, f func(*conn) error) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("mailbox", what); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, s.readError(err))
	}
	err = s.inTx(ctx, c, func() error { return f(c) })
	domain := errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, checkpoint.ErrAnswered)
	s.pool.put(c, err != nil && !domain && !noMailTable(err))
	switch {
	case err == nil:
		return nil
	case domain:
		return fmt.Errorf("%s: %w", what, err)
	case noMailTable(err):
		return err
	}
	return fmt.Errorf("%s: %w", what, s.readError(err))
}

// Mail implements checkpoint.Mailbox.
func (s *Store) Mail(ctx context.Context, id string) ([]checkpoint.Mail, error) {
	var out []checkpoint.Mail
	err := s.mailRead(ctx, "mail "+id, func(c *conn) error {
		out = out[:0]
		rows, err := c.query(ctx, stmtMailOf, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 5)
		for {
			if err := rows.Next(dest); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			m := checkpoint.Mail{Session: id}
			m.Call, _ = dest[0].(string)
			m.Kind, _ = dest[1].(string)
			req, _ := dest[2].([]byte)
			m.Request = append([]byte{}, req...)
			if ans, ok := dest[3].([]byte); ok {
				m.Answer = append([]byte{}, ans...)
			}
			us, _ := dest[4].(int64)
			m.Posted = time.UnixMicro(us).UTC()
			out = append(out, m)
		}
	})
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// Mailboxes implements checkpoint.Mailbox.
func (s *Store) Mailboxes(ctx context.Context) ([]string, error) {
	var out []string
	err := s.mailRead(ctx, "mailboxes", func(c *conn) error {
		out = out[:0]
		rows, err := c.query(ctx, stmtMailSessions)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 1)
		for {
			if err := rows.Next(dest); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			id, _ := dest[0].(string)
			out = append(out, id)
		}
	})
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// mailRead runs read on a pooled connection; a database without the
// mailbox table has no mail.
func (s *Store) mailRead(ctx context.Context, what string, read func(*conn) error) error {
	_, err := s.blobQuery(ctx, what, func(c *conn) (bool, error) {
		err := read(c)
		if noMailTable(err) {
			return false, nil
		}
		return err == nil, err
	})
	return err
}
