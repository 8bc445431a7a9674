package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
)

var _ checkpoint.FoldKeeper = (*Store)(nil)

// createFolds creates the folds table, one checkpoint.Fold per session. It
// is created on first SaveFold (under the schema's advisory lock) rather
// than by a migration: folds are derived and optional, and a database
// without the table has none, so older builds keep opening databases a
// newer one saved folds in (their Delete leaves a fold behind, which the
// log's check rejects and the next save replaces).
const createFolds = `CREATE TABLE IF NOT EXISTS folds (
	session text PRIMARY KEY,
	seq     bigint NOT NULL,
	tag     text NOT NULL,
	state   bytea NOT NULL
)`

// SaveFold implements checkpoint.FoldKeeper. The transaction commits with
// synchronous_commit off: it does not wait for the WAL flush, as a derived
// copy needs no durability of its own.
func (s *Store) SaveFold(ctx context.Context, id string, f checkpoint.Fold) error {
	if s.readOnly {
		return fmt.Errorf("save the fold of %s: %w", id, checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return fmt.Errorf("save the fold of %s: %w", id, err)
	}
	defer s.leave()
	var saved int64
	err := s.retrySafe(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
				return err
			}
			if !s.foldTable.Load() {
				if _, err := tx.Exec(ctx, lockSQL); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, createFolds); err != nil {
					return err
				}
			}
			tag, err := tx.Exec(ctx, `INSERT INTO folds (session, seq, tag, state)
				SELECT id, $2, $3, $4 FROM sessions WHERE id = $1 AND head >= $2 AND $2 >= 1
				ON CONFLICT (session) DO UPDATE SET seq = excluded.seq, tag = excluded.tag, state = excluded.state`,
				id, f.Seq, f.Check, f.State)
			saved = tag.RowsAffected()
			return err
		})
	})
	if err != nil {
		return s.fail("save the fold of "+id, err)
	}
	s.foldTable.Store(true)
	if saved == 0 {
		return fmt.Errorf("save the fold of %s through seq %d: %w", id, f.Seq, checkpoint.ErrNotFound)
	}
	return nil
}

// LoadFold implements checkpoint.FoldKeeper. A database without the folds
// table has no fold.
func (s *Store) LoadFold(ctx context.Context, id string) (checkpoint.Fold, error) {
	if err := s.enter(); err != nil {
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, err)
	}
	defer s.leave()
	var f checkpoint.Fold
	err := s.retrySafe(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT seq, tag, state FROM folds WHERE session = $1`, id).Scan(&f.Seq, &f.Check, &f.State)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows) || undefinedTable(err):
		return checkpoint.Fold{}, fmt.Errorf("load the fold of %s: %w", id, checkpoint.ErrNotFound)
	case err != nil:
		return checkpoint.Fold{}, s.fail("load the fold of "+id, err)
	}
	return f, nil
}

// dropFold drops session id's fold if it covers events past keep (every
// fold with keep -1), after a Truncate or Delete committed: a crash in
// between leaves a fold the log's check rejects.
func (s *Store) dropFold(ctx context.Context, id string, keep int64) error {
	err := s.retrySafe(ctx, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM folds WHERE session = $1 AND seq > $2`, id, keep)
		return err
	})
	if err != nil && !undefinedTable(err) {
		return s.fail("drop the fold of "+id, err)
	}
	return nil
}
