package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// Head implements checkpoint.Checkpointer. A stored summary of an older
// fold version is recomputed from the log (and written back, unless the
// store is read-only).
func (s *Store) Head(ctx context.Context, id string) (session.Summary, error) {
	return checkpoint.RefoldedHead(ctx, id, s.head, s.refoldStale)
}

// List implements checkpoint.Checkpointer. Stored summaries of an older
// fold version are recomputed from their logs, as Head does.
func (s *Store) List(ctx context.Context, namespace string, opts checkpoint.ListOptions) ([]session.Summary, error) {
	out, err := s.list(ctx, namespace, opts)
	return checkpoint.RefoldedList(ctx, out, err, s.refoldStale)
}

// refoldStale recomputes stale summaries; a writable store also stores each
// (refoldOne), a read-only one keeps them as stored.
func (s *Store) refoldStale(ctx context.Context, sums []session.Summary) error {
	if s.readOnly {
		return checkpoint.Refold(ctx, s, sums)
	}
	for i := range sums {
		if !checkpoint.Stale(&sums[i]) {
			continue
		}
		if err := session.CheckFold(&sums[i]); err != nil {
			return fmt.Errorf("the summary of session %s: %w", sums[i].ID, err)
		}
		sum, ok, err := s.refoldOne(ctx, sums[i].ID)
		switch {
		case err != nil:
			return fmt.Errorf("recompute the summary of %s from its log: %w", sums[i].ID, err)
		case ok:
			sums[i] = sum
		}
	}
	return nil
}

// writeBackSQL stores a recomputed summary only over the row it was
// recomputed for: same generation, same head, same entry. An append, a
// truncation, a repair or another writer's write-back since then changed
// one of them, and the row is left to them. The etag stays: it names the
// last append, which an append whose outcome a broken connection hid is
// recognised by (resolve), and a write-back appends nothing.
const writeBackSQL = `UPDATE sessions SET entry = $5, namespace = $6, kind = $7, messages = $8, status = $9, created = $10, updated = $11
	WHERE id = $1 AND generation = $2 AND head = $3 AND entry = $4`

// refoldOne reads session id's row and log in one snapshot, folds the log
// and stores the fold as the row's summary if the row is unchanged since
// (writeBackSQL). ok is false when the session is gone. A log that does not
// verify is the error Read gives for it (a *checkpoint.CorruptError).
func (s *Store) refoldOne(ctx context.Context, id string) (_ session.Summary, ok bool, _ error) {
	if err := s.enter(); err != nil {
		return session.Summary{}, false, err
	}
	defer s.leave()
	var l *doctorLog
	var gen int64
	err := s.retrySafe(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT generation FROM sessions WHERE id = $1`, id).Scan(&gen); err != nil {
				return err
			}
			var err error
			l, err = readLog(ctx, tx, id, false)
			return err
		})
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.Summary{}, false, nil
	case err != nil:
		return session.Summary{}, false, s.fail("refold "+id, err)
	case l.badSeq != 0 || len(l.good) == 0:
		// Read words the damage as every read does.
		one := []session.Summary{{ID: id}}
		if err := checkpoint.Refold(ctx, s, one); err != nil {
			return session.Summary{}, false, err
		}
		return one[0], true, nil
	}
	fold := session.Summarize(id, l.good)
	if l.fold == session.FoldVersion {
		return fold, true, nil // written back meanwhile
	}
	tag, err := s.pool.Exec(ctx, writeBackSQL, id, gen, fold.Head, l.stored, entry.Encode(&fold),
		fold.Namespace, fold.Kind, fold.Messages, string(fold.Status), fold.Created, fold.Updated)
	if err != nil {
		return session.Summary{}, false, s.fail("write back the summary of "+id, err)
	}
	if tag.RowsAffected() == 1 {
		s.cacheMu.Lock()
		if st, ok := s.cache[id]; ok && st.gen == gen && st.sum.Head == fold.Head {
			st.sum = fold
			s.cache[id] = st
		}
		s.cacheMu.Unlock()
	}
	return fold, true, nil
}

// entryError words the failure to decode the stored summary of session id
// ("" when not known): an entry a newer lite-agent wrote says so, and is
// not called damage.
func entryError(id string, err error) error {
	what := "a stored summary"
	if id != "" {
		what = "the stored summary of session " + id
	}
	if errors.Is(err, session.ErrNewer) {
		return fmt.Errorf("%s was %w", what, err)
	}
	return fmt.Errorf("decode %s: %w", what, err)
}
