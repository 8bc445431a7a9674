package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.FoldKeeper = (*Store)(nil)

// foldsTable keeps one checkpoint.Fold per session, by session number. It
// is created by the first SaveFold rather than by a migration: folds are
// derived and optional, and a database without the table simply has none,
// so older builds keep opening databases a newer one saved folds in.
const foldsTable = `CREATE TABLE IF NOT EXISTS folds (
	n     INTEGER PRIMARY KEY, -- the session's number (sessions.n)
	seq   INTEGER NOT NULL,    -- the last event the fold covers
	tag   TEXT    NOT NULL,    -- checkpoint.FoldCheck of that event
	state BLOB    NOT NULL     -- session.EncodeState
)`

const (
	stmtFoldHead = `SELECT n, head FROM sessions WHERE id = ?`
	stmtFoldSave = `INSERT OR REPLACE INTO folds (n, seq, tag, state) VALUES (?, ?, ?, ?)`
	stmtFoldLoad = `SELECT f.seq, f.tag, f.state FROM folds f JOIN sessions s ON s.n = f.n WHERE s.id = ?`
	// stmtFoldDrop drops the fold of session n past seq (Truncate, and
	// Delete with seq -1).
	stmtFoldDrop = `DELETE FROM folds WHERE n = ? AND seq > ?`
)

// noFoldTable reports whether err says the folds table does not exist yet.
func noFoldTable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table: folds")
}

// dropFold drops session n's fold if it covers events past keep, inside
// the write transaction of a Truncate or Delete (keep -1). A database
// without the folds table has none to drop; a failed statement does not
// end SQLite's transaction.
func dropFold(c *conn, n, keep int64) error {
	if _, err := c.exec(context.Background(), stmtFoldDrop, n, keep); err != nil && !noFoldTable(err) {
		return err
	}
	return nil
}

// SaveFold implements checkpoint.FoldKeeper. Its transaction commits with
// synchronous=NORMAL: no fsync of its own (in WAL mode the next durable
// commit or checkpoint syncs it), as a derived copy needs none.
func (s *Store) SaveFold(ctx context.Context, id string, f checkpoint.Fold) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("save the fold of", id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, s.readError(err))
	}
	defer func() { s.pool.put(c, false) }()
	bg := context.Background()
	var missing bool
	err = s.inUnsyncedTx(ctx, c, func() error {
		dest := make([]driver.Value, 2)
		found, err := c.row(bg, dest, stmtFoldHead, id)
		if err != nil {
			return err
		}
		n, _ := dest[0].(int64)
		head, _ := dest[1].(int64)
		if !found || f.Seq < 1 || f.Seq > head {
			missing = true
			return nil
		}
		if err := c.script(bg, foldsTable); err != nil {
			return err
		}
		_, err = c.exec(bg, stmtFoldSave, n, f.Seq, f.Check, f.State)
		return err
	})
	switch {
	case err != nil:
		return fmt.Errorf("save the fold of %s: %w", id, s.readError(err))
	case missing:
		return fmt.Errorf("save the fold of %s through seq %d: %w", id, f.Seq, checkpoint.ErrNotFound)
	}
	return nil
}

// LoadFold implements checkpoint.FoldKeeper. It never writes, so a
// read-only store answers it.
func (s *Store) LoadFold(ctx context.Context, id string) (checkpoint.Fold, error) {
	if err := s.enter(); err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := ctx.Err(); err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	if s.empty {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	c, err := s.conn(ctx)
	if err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, s.readError(err))
	}
	defer s.pool.put(c, false)
	dest := make([]driver.Value, 3)
	var found bool
	err = s.retry(ctx, func() (err error) {
		found, err = c.row(ctx, dest, stmtFoldLoad, id)
		return err
	})
	switch {
	case noFoldTable(err):
		found = false
	case err != nil:
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, s.readError(err))
	}
	if !found {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	}
	f := checkpoint.Fold{Check: asString(dest[1])}
	f.Seq, _ = dest[0].(int64)
	switch v := dest[2].(type) {
	case []byte:
		f.State = v
	case string:
		f.State = []byte(v)
	}
	return f, nil
}
