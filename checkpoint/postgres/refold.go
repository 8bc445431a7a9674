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
	return checkpoint.RefoldWith(ctx, sums, s.refoldOne)
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
	r, err := s.readRefold(ctx, id)
	if err != nil || r == nil {
		return session.Summary{}, false, err
	}
	if !r.write {
		return r.fold, true, nil
	}
	_, err = s.writeRefold(ctx, r)
	return r.fold, err == nil, err
}

// refoldRead is what readRefold read for a write-back.
type refoldRead struct {
	id     string
	gen    int64
	stored []byte // the row's entry as read
	fold   session.Summary
	write  bool // the row holds an older fold's summary
}

// readRefold reads and folds session id in one snapshot; nil when the
// session is gone.
func (s *Store) readRefold(ctx context.Context, id string) (*refoldRead, error) {
	var l *doctorLog
	r := &refoldRead{id: id}
	err := s.retrySafe(ctx, func() error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT generation FROM sessions WHERE id = $1`, id).Scan(&r.gen); err != nil {
				return err
			}
			var err error
			l, err = readLog(ctx, tx, id, false)
			return err
		})
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, s.fail("refold "+id, err)
	case l.badSeq != 0 || len(l.good) == 0:
		// Read words the damage as every read does.
		one := []session.Summary{{ID: id}}
		if err := checkpoint.Refold(ctx, s, one); err != nil {
			return nil, err
		}
		r.fold = one[0]
		return r, nil
	}
	r.stored, r.fold = l.stored, session.Summarize(id, l.good)
	r.write = !l.decoded || l.fold != session.FoldVersion // else written back meanwhile
	return r, nil
}

// writeRefold stores r's fold over the row it was read from, if the row is
// still as read (writeBackSQL), and reports whether it was.
func (s *Store) writeRefold(ctx context.Context, r *refoldRead) (bool, error) {
	f := &r.fold
	tag, err := s.pool.Exec(ctx, writeBackSQL, r.id, r.gen, f.Head, r.stored, entry.Encode(f),
		f.Namespace, f.Kind, f.Messages, string(f.Status), f.Created, f.Updated)
	if err != nil {
		return false, s.fail("write back the summary of "+r.id, err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil
	}
	s.cacheMu.Lock()
	if st, ok := s.cache[r.id]; ok && st.gen == r.gen && st.sum.Head == f.Head {
		st.sum = *f
		s.cache[r.id] = st
	}
	s.cacheMu.Unlock()
	return true, nil
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
