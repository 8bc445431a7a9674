package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The doctor's view of a database: every session id of the sessions table
// and of the events table (so it also finds events whose session row is
// gone), each read in a REPEATABLE READ transaction of its own so that the
// row, the events and the index rows are one snapshot however busy the
// writers are. Each log is verified (seqs from 1, crc, up to the row's
// head), folded, and compared with its row and its search index rows. A
// repair of a session runs in one transaction holding the session's row
// (SELECT … FOR UPDATE, so writers wait): it moves the rows from the first
// damaged event on into the quarantine table (created on demand, not part
// of the versioned schema, like the search index), rewrites the row from
// the fold of the events that verify, and rewrites the session's index
// rows. No event is deleted without its copy in quarantine, in the same
// transaction.

var _ checkpoint.Repairer = (*Store)(nil)

const (
	quarantineTableSQL = `CREATE TABLE IF NOT EXISTS quarantine (
		session text NOT NULL,
		seq     bigint NOT NULL,
		type    text NOT NULL,
		time    timestamptz NOT NULL,
		data    bytea,
		crc     integer,
		moved   timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (session, seq)
	)`
	doctorIDsSQL    = `SELECT id FROM sessions WHERE id > $1 UNION SELECT DISTINCT session FROM events WHERE session > $1 ORDER BY 1 LIMIT 500`
	doctorRowSQL    = `SELECT entry FROM sessions WHERE id = $1`
	doctorEventsSQL = `SELECT seq, type, time, data, crc FROM events WHERE session = $1 ORDER BY seq`
	doctorIndexSQL  = `SELECT seq FROM search_index WHERE session = $1 ORDER BY seq`
	quarantineSQL   = `INSERT INTO quarantine (session, seq, type, time, data, crc)
		SELECT session, seq, type, time, data, crc FROM events WHERE session = $1 AND seq >= $2
		ON CONFLICT (session, seq) DO NOTHING`
	upsertRowSQL = `INSERT INTO sessions (id, namespace, kind, head, messages, status, created, updated, entry, generation, etag, max_data)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace, kind = excluded.kind, head = excluded.head,
		messages = excluded.messages, status = excluded.status, created = excluded.created, updated = excluded.updated,
		entry = excluded.entry, generation = excluded.generation, etag = excluded.etag, max_data = excluded.max_data`
)

// doctorLog is one session as the doctor read it.
type doctorLog struct {
	id      string
	stored  []byte          // the row's entry; nil: no row
	fold    int             // the fold version of the row's entry, if decoded
	decoded bool            // the row's entry decodes
	good    []session.Event // the events that verify, from seq 1
	badSeq  int64           // the first seq that does not; 0 if none
	reason  string
	badRows int     // stored rows from badSeq on
	indexed []int64 // the seqs of its index rows
	headOK  bool    // headAt is known
	headAt  int64   // the head the row records, -1: none
	newer   error   // the row was written by a newer lite-agent (session.ErrNewer)
}

var _ checkpoint.LogVisitor = (*Store)(nil)

// CheckDerived implements checkpoint.Repairer.
func (s *Store) CheckDerived(ctx context.Context, repair bool) ([]checkpoint.Problem, error) {
	return s.CheckDerivedVisit(ctx, repair, nil)
}

// CheckDerivedVisit implements checkpoint.LogVisitor; visit may be nil.
func (s *Store) CheckDerivedVisit(ctx context.Context, repair bool, visit func(id string, events []session.Event)) ([]checkpoint.Problem, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	defer s.leave()
	if repair && s.readOnly {
		return nil, fmt.Errorf("repair: %w: the store was opened read-only; open it read-write to repair it", checkpoint.ErrReadOnly)
	}
	var out []checkpoint.Problem
	v, err := indexVersion(ctx, s.pool)
	if err != nil {
		return nil, s.fail("doctor", err)
	}
	rebuild := v != checkpoint.SearchVersion
	if rebuild {
		out = append(out, checkpoint.Problem{Kind: checkpoint.ProblemIndexStale,
			Detail: fmt.Sprintf("the search index is missing or of another version (%d, this build writes %d)", v, checkpoint.SearchVersion),
			Fix:    "run --doctor --repair to rebuild it from the logs; meanwhile search reads the logs", Repaired: repair})
	}
	for after := ""; ; {
		ids, err := s.doctorIDs(ctx, after)
		if err != nil {
			return nil, s.fail("doctor", err)
		}
		if len(ids) == 0 {
			break
		}
		after = ids[len(ids)-1]
		judged, err := s.checkPage(ctx, ids, rebuild, visit)
		if err != nil {
			return nil, s.fail("doctor", err)
		}
		for _, j := range judged {
			if repair && j.fix {
				if err := s.repairOne(ctx, j.id, !rebuild); err != nil {
					return nil, s.fail("repair "+j.id, err)
				}
				for i := range j.found {
					j.found[i].Repaired = j.found[i].Kind != checkpoint.ProblemUndecodable
				}
			}
			out = append(out, j.found...)
		}
	}
	if repair && rebuild {
		if err := s.Reindex(ctx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) doctorIDs(ctx context.Context, after string) ([]string, error) {
	rows, err := s.pool.Query(ctx, doctorIDsSQL, after)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// judged is what the doctor found in one session: its problems, and
// whether a repair has something to do.
type judged struct {
	id    string
	found []checkpoint.Problem
	fix   bool
}

// Statements reading a page of sessions for the doctor: their rows, their
// index rows and their events, a session's together in seq order.
const (
	doctorPageRowsSQL   = `SELECT id, entry FROM sessions WHERE id = ANY($1)`
	doctorPageIndexSQL  = `SELECT session, seq FROM search_index WHERE session = ANY($1) ORDER BY session, seq`
	doctorPageEventsSQL = `SELECT session, seq, type, time, data, crc FROM events WHERE session = ANY($1) ORDER BY session, seq`
)

// checkPage reads the sessions ids (with index, their index rows too) in
// one REPEATABLE READ snapshot, three statements for the whole page
// rather than three round trips per session, and judges each log as its
// last event arrives, so that one log at a time is held; each is shown to
// visit (if not nil).
func (s *Store) checkPage(ctx context.Context, ids []string, rebuild bool, visit func(string, []session.Event)) ([]judged, error) {
	var out []judged
	err := s.retrySafe(ctx, func() error {
		out = out[:0]
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			logs := make(map[string]*doctorLog, len(ids))
			for _, id := range ids {
				logs[id] = &doctorLog{id: id}
			}
			rows, err := tx.Query(ctx, doctorPageRowsSQL, ids)
			if err != nil {
				return err
			}
			var id string
			var stored []byte
			_, err = pgx.ForEachRow(rows, []any{&id, &stored}, func() error {
				l := logs[id]
				l.stored = slices.Clone(stored)
				if l.head(); l.newer != nil {
					// Not damage: nothing to report or rebuild with this build.
					return entryError(id, l.newer)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if !rebuild {
				rows, err := tx.Query(ctx, doctorPageIndexSQL, ids)
				if err != nil {
					return err
				}
				var seq int64
				if _, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
					logs[id].indexed = append(logs[id].indexed, seq)
					return nil
				}); err != nil {
					return err
				}
			}
			judge := func(l *doctorLog) {
				l.finish()
				found, fix := s.judge(l, rebuild)
				out = append(out, judged{l.id, found, fix})
				if visit != nil && len(l.good) > 0 {
					visit(l.id, l.good)
				}
				delete(logs, l.id)
			}
			rows, err = tx.Query(ctx, doctorPageEventsSQL, ids)
			if err != nil {
				return err
			}
			var cur *doctorLog
			for rows.Next() {
				var e session.Event
				var typ string
				var crc *int32
				if err := rows.Scan(&id, &e.Seq, &typ, &e.Time, &e.Data, &crc); err != nil {
					rows.Close()
					return err
				}
				if cur == nil || cur.id != id {
					if cur != nil {
						judge(cur)
					}
					if cur = logs[id]; cur == nil {
						rows.Close()
						return fmt.Errorf("events of session %s came apart", id)
					}
				}
				e.Type, e.Time = session.Type(typ), e.Time.UTC()
				cur.add(e, crc)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if cur != nil {
				judge(cur)
			}
			for _, id := range ids { // sessions without events
				if l := logs[id]; l != nil {
					judge(l)
				}
			}
			return nil
		})
	})
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	slices.SortFunc(out, func(a, b judged) int { return at[a.id] - at[b.id] }) // the page's order
	return out, err
}

// readLog reads and verifies session id's log in tx.
func readLog(ctx context.Context, tx pgx.Tx, id string, index bool) (*doctorLog, error) {
	l := &doctorLog{id: id}
	err := tx.QueryRow(ctx, doctorRowSQL, id).Scan(&l.stored)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	if l.head(); l.newer != nil {
		// Not damage: nothing to report or rebuild with this build.
		return nil, entryError(id, l.newer)
	}
	rows, err := tx.Query(ctx, doctorEventsSQL, id)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var e session.Event
		var typ string
		var crc *int32
		if err := rows.Scan(&e.Seq, &typ, &e.Time, &e.Data, &crc); err != nil {
			rows.Close()
			return nil, err
		}
		e.Type, e.Time = session.Type(typ), e.Time.UTC()
		l.add(e, crc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	l.finish()
	if index {
		rows, err := tx.Query(ctx, doctorIndexSQL, id)
		if err != nil {
			return nil, err
		}
		if l.indexed, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// head is the head l's row records, -1 without a row that decodes;
// decoding the row also notes its fold version, or that a newer
// lite-agent wrote it (newer).
func (l *doctorLog) head() int64 {
	if l.headOK {
		return l.headAt
	}
	l.headOK, l.headAt = true, -1
	if l.stored == nil {
		return -1
	}
	var stored session.Summary
	err := entry.DecodeInto(string(l.stored), &stored)
	switch {
	case errors.Is(err, session.ErrNewer):
		l.newer = err
	case err == nil:
		l.headAt, l.fold, l.decoded = stored.Head, stored.Fold, true
	}
	return l.headAt
}

// add verifies the log's next stored event e, with its stored crc.
func (l *doctorLog) add(e session.Event, crc *int32) {
	if l.badSeq == 0 {
		next, head := int64(len(l.good))+1, l.head()
		switch {
		case e.Seq != next:
			l.badSeq, l.reason = next, fmt.Sprintf("seq %d is missing (the next stored event is seq %d)", next, e.Seq)
		case crc == nil || uint32(*crc) != checkpoint.Checksum(e):
			l.badSeq, l.reason = e.Seq, fmt.Sprintf("the stored checksum of seq %d (%s) does not match its contents", e.Seq, e.Type)
		case head >= 0 && e.Seq > head:
			l.badSeq, l.reason = e.Seq, fmt.Sprintf("the log holds seq %d past its recorded head %d", e.Seq, head)
		}
	}
	if l.badSeq != 0 {
		l.badRows++
		return
	}
	l.good = append(l.good, e)
}

// finish checks, after its last stored event, that the log reaches the
// head its row records.
func (l *doctorLog) finish() {
	if head := l.head(); l.badSeq == 0 && head > int64(len(l.good)) {
		l.badSeq, l.reason = int64(len(l.good))+1, fmt.Sprintf("the log ends before seq %d, but its recorded head is %d (events are missing)", len(l.good)+1, head)
	}
}

// judge compares l with its row and index rows: the problems, and whether a
// repair has something to do.
func (s *Store) judge(l *doctorLog, rebuilding bool) ([]checkpoint.Problem, bool) {
	var out []checkpoint.Problem
	fix := false
	if len(l.good) == 0 {
		return []checkpoint.Problem{{Session: l.id, Seq: 1, Kind: checkpoint.ProblemCorrupt,
			Detail: fmt.Sprintf("session %s has no event that verifies from seq 1 (%s)", l.id, l.reason),
			Fix:    "restore the database from a backup; lite-agent leaves these rows as they are"}}, false
	}
	fold := session.Summarize(l.id, l.good)
	if l.badSeq != 0 {
		fix = true
		where := "nothing to move: the missing events are gone; the summary is rebuilt from the events that verify"
		if l.badRows > 0 {
			where = fmt.Sprintf("it copies seq %d on (%d rows) into table quarantine of this schema and keeps the rest", l.badSeq, l.badRows)
		}
		out = append(out, checkpoint.Problem{Session: l.id, Seq: l.badSeq, Kind: checkpoint.ProblemCorrupt,
			Detail: fmt.Sprintf("session %s is damaged at seq %d: %s; events 1 to %d verify", l.id, l.badSeq, l.reason, l.badSeq-1),
			Fix:    "run --doctor --repair: " + where})
	}
	for _, e := range l.good {
		if len(e.Data) > 0 && !json.Valid(e.Data) {
			out = append(out, checkpoint.Problem{Session: l.id, Seq: e.Seq, Kind: checkpoint.ProblemUndecodable,
				Detail: fmt.Sprintf("the payload of %s event %d is not JSON", e.Type, e.Seq), Fix: "replay skips it; nothing to do unless the session misbehaves"})
		}
	}
	switch {
	case l.stored == nil:
		out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemSummaryLost,
			Detail: fmt.Sprintf("session %s has %d events but no row in the sessions table, so it is not listed", l.id, len(l.good)+l.badRows),
			Fix:    "run --doctor --repair to rebuild the row from the log"})
		fix = true
	case l.badSeq == 0 && l.decoded && l.fold < session.FoldVersion:
		out = append(out, checkpoint.OldFoldProblem(l.id, l.fold, false))
		fix = true
	case !bytes.Equal(l.stored, entry.Encode(&fold)) && l.badSeq == 0:
		out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemSummaryStale,
			Detail: "the stored summary differs from a fold of the log", Fix: "run --doctor --repair to rebuild it from the log"})
		fix = true
	}
	// A damaged log's index rows are the corrupt_log's to fix.
	if !rebuilding && l.badSeq == 0 && checkpoint.IndexRowsDiffer(fold.Kind, l.good, l.indexed) {
		out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemIndexStale,
			Detail: "the search index rows of this session differ from its log", Fix: "run --doctor --repair to rebuild them"})
		fix = true
	}
	return out, fix
}

// repairOne repairs session id in one transaction: it locks the row (or,
// without one, the session's lease key, so two repairs do not race), reads
// the log again, quarantines what does not verify, and rewrites the row
// and (with index) the index rows from the events that verify.
func (s *Store) repairOne(ctx context.Context, id string, index bool) error {
	defer s.forget(id)
	return s.retrySafe(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(`+leaseKeySQL+`)`, id); err != nil {
				return err
			}
			l, err := readLog(ctx, tx, id, false)
			if err != nil || len(l.good) == 0 {
				return err
			}
			if l.badRows > 0 {
				if _, err := tx.Exec(ctx, quarantineTableSQL); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, quarantineSQL, id, l.badSeq); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `DELETE FROM events WHERE session = $1 AND seq >= $2`, id, l.badSeq); err != nil {
					return err
				}
			}
			sum := session.Summarize(id, l.good)
			if _, err := tx.Exec(ctx, upsertRowSQL, id, sum.Namespace, sum.Kind, sum.Head, sum.Messages, string(sum.Status),
				sum.Created, sum.Updated, entry.Encode(&sum), newTag(), newTag(), maxData(l.good)); err != nil {
				return err
			}
			if !index {
				return nil
			}
			if _, err := tx.Exec(ctx, `DELETE FROM search_index WHERE session = $1`, id); err != nil {
				return err
			}
			var seqs []int64
			var times []time.Time
			var sessions, namespaces, words []string
			for _, e := range l.good {
				if w := indexWords(e); w != "" && sum.Kind == "" {
					sessions, seqs, times, namespaces, words = append(sessions, id), append(seqs, e.Seq), append(times, e.Time), append(namespaces, sum.Namespace), append(words, w)
				}
			}
			if len(seqs) > 0 {
				_, err = tx.Exec(ctx, indexInsertSQL, sessions, seqs, times, namespaces, words)
			}
			return err
		})
	})
}
