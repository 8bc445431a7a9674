package sqlite

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The doctor's view of a database: it walks the events table session
// number by session number (so it also finds events whose summary row is
// gone), verifies each log (seqs from 1, checksums), folds it, and compares
// the fold with the summary row and the search index. A repair runs in one
// write transaction: it rewrites summary rows and index rows from the logs
// and moves a damaged tail into a JSON Lines file beside the database
// (QuarantinePath) before dropping it from the log.

var _ checkpoint.Repairer = (*Store)(nil)

const (
	stmtNextNumber = `SELECT key >> 32 FROM events WHERE key >= ? ORDER BY key LIMIT 1`
	stmtLogCRC     = `SELECT key & 4294967295, type, time, data, crc FROM events WHERE key > ? AND key <= ? ORDER BY key`
	stmtByNumber   = `SELECT id, CAST(entry AS TEXT) FROM sessions WHERE n = ?`
)

// QuarantinePath is the file a repair moves the damaged tail of session id,
// from seq from on, into: next to the database file.
func (s *Store) QuarantinePath(id string, from int64) string {
	return fmt.Sprintf("%s.quarantine-%s-%d.jsonl", s.path, id, from)
}

// doctorLog is one session's log as the doctor read it.
type doctorLog struct {
	n       int64
	id      string
	stored  *session.Summary // nil: no summary row
	storedE string           // the stored entry, as is
	good    []session.Event  // the events that verify, from seq 1
	bad     []session.Event  // the events from the first that does not
	badSeq  int64
	reason  string
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
	defer s.mu.RUnlock()
	if repair {
		if err := s.writable("repair", s.path); err != nil {
			return nil, err
		}
	}
	if s.empty {
		return nil, nil
	}
	c, err := s.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("doctor %s: %w", s.path, s.readError(err))
	}
	var out []checkpoint.Problem
	check := func() error {
		out, err = s.checkAll(ctx, c, repair, visit)
		return err
	}
	if repair {
		err = s.inTx(ctx, c, check)
	} else {
		// One read transaction: a snapshot of the whole database, so an
		// append going on meanwhile is seen whole or not at all (its
		// summary, events and index rows alike).
		err = s.retry(ctx, func() error { return s.inReadTx(c, check) })
	}
	s.pool.put(c, err != nil)
	if err != nil {
		return nil, fmt.Errorf("doctor %s: %w", s.path, s.explain(err))
	}
	return out, nil
}

// checkAll checks every log, repairing inside the caller's transaction if
// asked, and shows each to visit (if not nil).
func (s *Store) checkAll(ctx context.Context, c *conn, repair bool, visit func(string, []session.Event)) ([]checkpoint.Problem, error) {
	var out []checkpoint.Problem
	v, exists, err := s.indexState(ctx, c)
	if err != nil {
		return nil, err
	}
	rebuild := !exists || v != checkpoint.SearchVersion
	if rebuild {
		out = append(out, checkpoint.Problem{Kind: checkpoint.ProblemIndexStale,
			Detail: fmt.Sprintf("the search index is missing or of another version (%d, this build writes %d)", v, checkpoint.SearchVersion),
			Fix:    "run --doctor --repair to rebuild it from the logs; meanwhile search reads the logs", Repaired: repair})
	}
	for n := int64(1); ; n++ {
		dest := make([]driver.Value, 1)
		found, err := c.row(ctx, dest, stmtNextNumber, eventKey(n, 0))
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
		n, _ = dest[0].(int64)
		l, err := s.readForDoctor(ctx, c, n)
		if err != nil {
			return nil, err
		}
		found2, err := s.checkOne(ctx, c, l, repair, rebuild)
		if err != nil {
			return nil, err
		}
		out = append(out, found2...)
		if visit != nil && l.id != "" {
			visit(l.id, l.good)
		}
	}
	switch {
	case repair && rebuild:
		if err := s.rebuildIndex(c); err != nil {
			return nil, err
		}
	case repair:
		// Upkeep rather than a repair: the events waiting for the index
		// (pending.go) go into it, so that a repaired store's index is whole.
		if err := s.indexMarked(c); err != nil && !noPendingTable(err) {
			return nil, err
		}
	}
	return out, nil
}

// readForDoctor reads session number n: its summary row and its events,
// verified.
func (s *Store) readForDoctor(ctx context.Context, c *conn, n int64) (*doctorLog, error) {
	l := &doctorLog{n: n}
	dest := make([]driver.Value, 2)
	found, err := c.row(ctx, dest, stmtByNumber, n)
	if err != nil {
		return nil, err
	}
	if found {
		l.id, l.storedE = asString(dest[0]), asString(dest[1])
		sum, err := entry.Decode(l.storedE)
		switch {
		case errors.Is(err, session.ErrNewer):
			// Not damage: nothing to report or rebuild with this build.
			return nil, fmt.Errorf("the summary of session %s in %s was %w", l.id, s.path, err)
		case err == nil:
			l.stored = &sum
		}
	}
	rows, err := c.query(ctx, stmtLogCRC, eventKey(n, 0), eventKey(n, maxSeq))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	row := make([]driver.Value, 5)
	for {
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
		var e session.Event
		e.Seq, _ = row[0].(int64)
		e.Type = session.Type(asString(row[1]))
		us, _ := row[2].(int64)
		e.Time = entry.Micro(us)
		e.Data = []byte(asString(row[3]))
		crc, hasCRC := row[4].(int64)
		switch {
		case l.bad != nil:
		case e.Seq != int64(len(l.good))+1:
			l.badSeq, l.reason = int64(len(l.good))+1, fmt.Sprintf("seq %d is missing (the next stored event is seq %d)", len(l.good)+1, e.Seq)
		case hasCRC && uint32(crc) != checkpoint.Checksum(e):
			l.badSeq, l.reason = e.Seq, fmt.Sprintf("the stored checksum of seq %d (%s) does not match its contents", e.Seq, e.Type)
		}
		if l.reason != "" && l.bad == nil {
			l.bad = []session.Event{}
		}
		if l.bad != nil {
			l.bad = append(l.bad, e)
			continue
		}
		l.good = append(l.good, e)
	}
	if l.id == "" && len(l.good) > 0 && l.good[0].Type == session.TypeSessionStarted {
		var p session.SessionStarted
		if l.good[0].Decode(&p) == nil {
			l.id = p.ID
		}
	}
	return l, nil
}

// checkOne compares one log with its summary row and index rows.
func (s *Store) checkOne(ctx context.Context, c *conn, l *doctorLog, repair, rebuilding bool) ([]checkpoint.Problem, error) {
	var out []checkpoint.Problem
	if l.id == "" {
		return []checkpoint.Problem{{Seq: 1, Kind: checkpoint.ProblemCorrupt,
			Detail: fmt.Sprintf("events numbered %d have no summary row and no readable session_started event to name their session", l.n),
			Fix:    "restore the database from a backup; lite-agent leaves these events as they are"}}, nil
	}
	fold := session.Summarize(l.id, l.good)
	changed := false
	if l.bad != nil {
		p := checkpoint.Problem{Session: l.id, Seq: l.badSeq, Kind: checkpoint.ProblemCorrupt,
			Detail: fmt.Sprintf("session %s is damaged at seq %d: %s; events 1 to %d verify", l.id, l.badSeq, l.reason, l.badSeq-1),
			Fix:    fmt.Sprintf("run --doctor --repair: it moves seq %d on into %s and keeps the rest", l.badSeq, s.QuarantinePath(l.id, l.badSeq))}
		if repair && !s.memory && len(l.good) > 0 {
			if err := s.quarantine(l); err != nil {
				return nil, err
			}
			if _, err := c.exec(ctx, stmtDropRange, eventKey(l.n, l.badSeq-1), eventKey(l.n, maxSeq)); err != nil {
				return nil, err
			}
			p.Repaired, p.Fix, changed = true, "moved to "+s.QuarantinePath(l.id, l.badSeq), true
		}
		out = append(out, p)
	}
	for _, e := range l.good {
		if len(e.Data) > 0 && !json.Valid(e.Data) {
			out = append(out, checkpoint.Problem{Session: l.id, Seq: e.Seq, Kind: checkpoint.ProblemUndecodable,
				Detail: fmt.Sprintf("the payload of %s event %d is not JSON", e.Type, e.Seq), Fix: "replay skips it; nothing to do unless the session misbehaves"})
		}
	}
	switch {
	case l.stored == nil && l.storedE == "":
		out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemSummaryLost,
			Detail: fmt.Sprintf("session %s has %d events but no summary row, so it is not listed", l.id, len(l.good)+len(l.bad)),
			Fix:    "run --doctor --repair to rebuild the summary from the log", Repaired: repair})
		changed = true
	case !changed && l.bad == nil && l.stored != nil && checkpoint.Stale(l.stored):
		out = append(out, checkpoint.OldFoldProblem(l.id, l.stored.Fold, repair))
		changed = true
	case changed || l.stored == nil || !bytes.Equal([]byte(l.storedE), entry.Encode(&fold)):
		if !changed && l.bad == nil { // a damaged log's summary is the corrupt_log's to fix
			out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemSummaryStale,
				Detail: "the stored summary differs from a fold of the log", Fix: "run --doctor --repair to rebuild it from the log", Repaired: repair})
		}
		changed = true
	}
	if !rebuilding {
		stale, err := s.indexDiffers(ctx, c, l, fold.Kind)
		if err != nil {
			return nil, err
		}
		if stale {
			out = append(out, checkpoint.Problem{Session: l.id, Kind: checkpoint.ProblemIndexStale,
				Detail: "the search index rows of this session differ from its log", Fix: "run --doctor --repair to rebuild them", Repaired: repair})
			if repair {
				if err := s.unindex(c, l.n, 0); err != nil {
					return nil, err
				}
				if err := s.indexEvents(c, l.n, fold.Kind, l.good); err != nil {
					return nil, err
				}
				if _, err := c.exec(ctx, stmtPendingDrop, l.n); err != nil && !noPendingTable(err) {
					return nil, err
				}
			}
		}
	}
	if repair && changed {
		if err := s.save(c, l.id, l.n, &fold); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// indexDiffers reports whether the index rows of l's session differ from
// the ones its verified events give (checkpoint.IndexRowsDiffer). Of a
// session marked as not yet indexed (pending.go), the events after its
// mark, which may or may not have rows yet, are left out on both sides.
func (s *Store) indexDiffers(ctx context.Context, c *conn, l *doctorLog, kind string) (bool, error) {
	events := l.good
	after, marked, err := pendingAfter(ctx, c, l.n)
	if err != nil {
		return false, err
	}
	head := int64(len(l.good)) // the verified events are seqs 1 to len
	if marked {
		for len(events) > 0 && events[len(events)-1].Seq > after {
			events = events[:len(events)-1]
		}
	}
	rows, err := c.query(ctx, stmtIndexRowids, eventKey(l.n, 0), eventKey(l.n, maxSeq))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var seqs []int64
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return checkpoint.IndexRowsDiffer(kind, events, seqs), nil
			}
			return false, err
		}
		k, _ := dest[0].(int64)
		if seq := k & maxSeq; !marked || seq <= after || seq > head {
			seqs = append(seqs, seq)
		}
	}
}

// rawEvent is a line of a side file for an event whose data is not JSON:
// the event's envelope with the data's bytes in base64 as data_bytes.
type rawEvent struct {
	V         int          `json:"v"`
	Seq       int64        `json:"seq"`
	Type      session.Type `json:"type"`
	Time      time.Time    `json:"time"`
	DataBytes []byte       `json:"data_bytes"`
}

// quarantine writes l's damaged tail, as JSON Lines of events (see
// rawEvent for data that is not JSON), to its side file and syncs it and
// its directory.
func (s *Store) quarantine(l *doctorLog) error {
	path := s.QuarantinePath(l.id, l.badSeq)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("quarantine %s: %w", l.id, err)
	}
	enc := json.NewEncoder(f)
	for _, e := range l.bad {
		var line any = e
		if len(e.Data) > 0 && !json.Valid(e.Data) {
			// The event's envelope holds JSON data only; damaged data
			// (a flipped byte) is kept byte for byte, in base64.
			line = rawEvent{V: session.Version, Seq: e.Seq, Type: e.Type, Time: e.Time, DataBytes: e.Data}
		}
		if err := enc.Encode(line); err != nil {
			f.Close()
			return fmt.Errorf("quarantine %s: %w", l.id, err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("quarantine %s: %w", l.id, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("quarantine %s: %w", l.id, err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// inReadTx runs f in a read transaction on c: in WAL mode its first read
// fixes the snapshot every later read of f sees, while writers go on.
func (s *Store) inReadTx(c *conn, f func() error) error {
	if _, err := c.exec(context.Background(), "BEGIN"); err != nil {
		return err
	}
	err := f()
	s.rollback(c)
	return err
}
