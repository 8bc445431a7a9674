package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// Writes go through the group commit: concurrent Appends, Truncates and
// Deletes (of any sessions) are applied in one transaction, one after the
// other, each with its own head check and its own outcome, and share one
// COMMIT and so one fsync of the WAL.

// op is the kind of a write request.
type op uint8

const (
	opAppend op = iota
	opTruncate
	opDelete
	opRefold // rewrite a summary of an older fold version (refold.go)
)

func (o op) String() string {
	switch o {
	case opAppend:
		return "append"
	case opTruncate:
		return "truncate"
	case opRefold:
		return "refold"
	}
	return "delete"
}

// request is one write waiting for a commit, and its outcome.
type request struct {
	ctx      context.Context
	op       op
	id       string
	expected int64           // append, truncate: the head the caller saw
	keep     int64           // truncate: the last seq kept
	events   []session.Event // append: prepared, with seqs and times

	head int64 // the new head
	err  error // the request's own failure (a conflict, …) or the batch's
}

// outcome is what applying a request inside a transaction gave.
type outcome struct {
	head int64
	err  error
}

// Statements of the write path. An event's key is its session's number
// and its seq packed into one integer (see eventKey), so a session's events
// are one range of keys.
const (
	stmtSummary = `SELECT n, CAST(entry AS TEXT) FROM sessions WHERE id = ?`
	stmtNumber  = `SELECT coalesce(max(n), 0) + 1 FROM sessions`
	stmtInsert  = `INSERT INTO events (key, type, time, data, crc) VALUES (?, ?, ?, ?, ?)`
	stmtSave    = `INSERT INTO sessions (id, n, namespace, kind, head, messages, status, created, updated, title, summary, entry)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET namespace = excluded.namespace, kind = excluded.kind, head = excluded.head,
			messages = excluded.messages, status = excluded.status, created = excluded.created, updated = excluded.updated,
			title = excluded.title, summary = excluded.summary, entry = excluded.entry`
	// The events with keys in (?, ?]: a tail, a head, or a whole log.
	stmtDropRange   = `DELETE FROM events WHERE key > ? AND key <= ?`
	stmtRange       = `SELECT key & 4294967295, type, time, data FROM events WHERE key > ? AND key <= ? ORDER BY key`
	stmtDropSession = `DELETE FROM sessions WHERE id = ?`
)

// Limits of the packed keys: seqs take the low 32 bits, session numbers
// the 31 above them.
const (
	maxSeq    = 1<<32 - 1
	maxNumber = 1<<31 - 1
)

// eventKey is the events table key of seq in the session numbered n.
func eventKey(n, seq int64) int64 { return n<<32 | seq }

// Append implements checkpoint.Checkpointer. Event times are kept to the
// microsecond and returned in UTC.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("append", id); err != nil {
		return 0, err
	}
	prepared, err := checkpoint.Prepare(id, expectedHead, events, s.maxEventBytes)
	if err != nil {
		return 0, err
	}
	for i := range prepared {
		prepared[i].Time = entry.Micro(prepared[i].Time.UnixMicro())
	}
	head, err := s.submit(&request{ctx: ctx, op: opAppend, id: id, expected: expectedHead, events: prepared})
	if err == nil {
		s.appended(len(prepared))
	}
	return head, err
}

// Truncate implements checkpoint.Checkpointer.
func (s *Store) Truncate(ctx context.Context, id string, keepThrough, expectedHead int64) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("truncate", id); err != nil {
		return 0, err
	}
	return s.submit(&request{ctx: ctx, op: opTruncate, id: id, expected: expectedHead, keep: keepThrough})
}

// Delete implements checkpoint.Checkpointer.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("delete", id); err != nil {
		return err
	}
	_, err := s.submit(&request{ctx: ctx, op: opDelete, id: id})
	return err
}

// writable refuses writes to a read-only store.
func (s *Store) writable(what, id string) error {
	if s.readOnly {
		return fmt.Errorf("%s %s: %w: %s was opened read-only for inspection; open it without ReadOnly to change sessions", what, id, checkpoint.ErrReadOnly, s.path)
	}
	return nil
}

// submit queues r for the next commit and waits for its outcome.
func (s *Store) submit(r *request) (int64, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, fmt.Errorf("%s %s: %w", r.op, r.id, err)
	}
	s.group.Submit(r)
	return r.head, r.err
}

// commit is the group commit's function: it applies a batch of requests in
// one transaction. If that transaction fails as a whole for a reason that
// is not a lock or a cancellation, each request is tried again on its own,
// so that one bad request cannot fail the others.
func (s *Store) commit(batch []*request) {
	live := make([]*request, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = fmt.Errorf("%s %s: %w", r.op, r.id, err)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	err := s.commitBatch(live)
	if err == nil {
		return
	}
	if len(live) > 1 && !errors.Is(err, errGiveUp) {
		for _, r := range live {
			if err := s.commitBatch([]*request{r}); err != nil {
				r.err = s.writeError(r, err)
			}
		}
		return
	}
	for _, r := range live {
		r.err = s.writeError(r, err)
	}
}

// errGiveUp marks batch failures that retrying requests one by one cannot
// cure: the lock stayed taken, every caller gave up, the store is closed.
var errGiveUp = errors.New("give up")

// writeError wraps a batch failure for request r.
func (s *Store) writeError(r *request, err error) error {
	var gu giveUp
	if errors.As(err, &gu) {
		err = gu.err
	}
	if errors.Is(err, errPoolClosed) {
		err = checkpoint.ErrClosed
	}
	return fmt.Errorf("%s %s: %w", r.op, r.id, s.explain(err))
}

// giveUp wraps an error that matches errGiveUp.
type giveUp struct{ err error }

func (g giveUp) Error() string        { return g.err.Error() }
func (g giveUp) Unwrap() error        { return g.err }
func (g giveUp) Is(target error) bool { return target == errGiveUp }

// commitBatch applies reqs in one transaction and, once it committed,
// stores each request's outcome in it.
func (s *Store) commitBatch(reqs []*request) error {
	ctx, stop := batchContext(reqs)
	defer stop()
	c, err := s.pool.get(ctx)
	if err != nil {
		return giveUp{err}
	}
	out := make([]outcome, len(reqs))
	err = s.inTx(ctx, c, func() error {
		for i, r := range reqs {
			var err error
			out[i].head, out[i].err, err = s.apply(c, r)
			if err != nil {
				return err
			}
		}
		return nil
	})
	s.pool.put(c, false)
	if err != nil {
		if isBusy(err) || ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || lockTimeout(err) {
			return giveUp{err}
		}
		return err
	}
	for i, r := range reqs {
		r.head, r.err = out[i].head, out[i].err
	}
	return nil
}

// batchContext returns a context that is done once every request's
// context is done: a batch stops waiting for the lock only when nobody
// waits for it any more. Statements after the lock is taken do not watch
// it, so one caller giving up never undoes the others' writes.
func batchContext(reqs []*request) (context.Context, func()) {
	if len(reqs) == 1 {
		return reqs[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int32
	left.Store(int32(len(reqs)))
	stops := make([]func() bool, len(reqs))
	for i, r := range reqs {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// apply performs one request inside the batch's transaction. reqErr is the
// request's own failure (nothing of it was written); err fails the batch.
func (s *Store) apply(c *conn, r *request) (head int64, reqErr, err error) {
	bg := context.Background()
	sum, n, found, err := s.summary(bg, c, r.id)
	if errors.Is(err, session.ErrNewer) {
		return 0, err, nil // this request's alone: the batch goes on
	}
	if err != nil {
		return 0, nil, err
	}
	if found && checkpoint.Stale(&sum) && r.op != opDelete {
		// An older fold's summary is never folded further: recompute it
		// from the log first, and write it back.
		if sum, err = s.refold(c, r.id, n, maxSeq); err != nil {
			return 0, nil, err
		}
		if err := s.save(c, r.id, n, &sum); err != nil {
			return 0, nil, err
		}
	}
	if r.op == opRefold {
		return sum.Head, nil, nil
	}
	switch r.op {
	case opAppend:
		if sum.Head != r.expected {
			return 0, &checkpoint.ConflictError{Session: r.id, Expected: r.expected, Actual: sum.Head}, nil
		}
		if last := r.events[len(r.events)-1].Seq; last > maxSeq {
			return 0, fmt.Errorf("append %s: %w: the log would pass %d events, the most one session holds; start a new session", r.id, checkpoint.ErrInvalid, int64(maxSeq)), nil
		}
		if !found {
			sum = session.Summary{ID: r.id}
			if n, err = s.newNumber(c); err != nil {
				return 0, nil, err
			}
		}
		for _, e := range r.events {
			if _, err := c.exec(bg, stmtInsert, eventKey(n, e.Seq), string(e.Type), e.Time.UnixMicro(), []byte(e.Data), int64(checkpoint.Checksum(e))); err != nil {
				return 0, nil, err
			}
			sum.Apply(e)
		}
		if err := markPending(c, n, sum.Kind, r.events); err != nil { // pending.go
			return 0, nil, err
		}
		return sum.Head, nil, s.save(c, r.id, n, &sum)

	case opTruncate:
		switch {
		case !found:
			return 0, fmt.Errorf("truncate %s: %w", r.id, checkpoint.ErrNotFound), nil
		case sum.Head != r.expected:
			return 0, &checkpoint.ConflictError{Session: r.id, Expected: r.expected, Actual: sum.Head}, nil
		case r.keep < 1 || r.keep > sum.Head:
			return 0, fmt.Errorf("truncate %s: %w: cannot keep through seq %d of a log whose head is %d; pick a seq from 1 to %d", r.id, checkpoint.ErrInvalid, r.keep, sum.Head, sum.Head), nil
		case r.keep == sum.Head:
			return sum.Head, nil, nil
		}
		if _, err := c.exec(bg, stmtDropRange, eventKey(n, r.keep), eventKey(n, maxSeq)); err != nil {
			return 0, nil, err
		}
		if err := dropFold(c, n, r.keep); err != nil { // fold.go
			return 0, nil, err
		}
		if err := s.unindex(c, n, r.keep); err != nil {
			return 0, nil, err
		}
		if _, err := c.exec(bg, stmtPendingTruncate, n, r.keep); err != nil && !noPendingTable(err) {
			return 0, nil, err
		}
		sum, err := s.refold(c, r.id, n, r.keep)
		if err != nil {
			return 0, nil, err
		}
		return sum.Head, nil, s.save(c, r.id, n, &sum)

	default: // opDelete
		if !found {
			return 0, fmt.Errorf("delete %s: %w", r.id, checkpoint.ErrNotFound), nil
		}
		if _, err := c.exec(bg, stmtDropRange, eventKey(n, 0), eventKey(n, maxSeq)); err != nil {
			return 0, nil, err
		}
		if err := dropFold(c, n, -1); err != nil { // fold.go
			return 0, nil, err
		}
		if err := s.unindex(c, n, 0); err != nil {
			return 0, nil, err
		}
		if _, err := c.exec(bg, stmtPendingDrop, n); err != nil && !noPendingTable(err) {
			return 0, nil, err
		}
		if _, err := c.exec(bg, stmtMailDrop, r.id, "", ""); err != nil && !noMailTable(err) {
			return 0, nil, err
		}
		_, err := c.exec(bg, stmtDropSession, r.id)
		return 0, nil, err
	}
}

// newNumber allocates the number of a new session: one more than the
// largest in use.
func (s *Store) newNumber(c *conn) (int64, error) {
	dest := make([]driver.Value, 1)
	if _, err := c.row(context.Background(), dest, stmtNumber); err != nil {
		return 0, err
	}
	n, _ := dest[0].(int64)
	if n < 1 || n > maxNumber {
		return 0, fmt.Errorf("%s holds the most sessions it can number (%d); delete sessions or use a new database", s.path, int64(maxNumber))
	}
	return n, nil
}

// summary reads the stored summary and the number of session id; found is
// false (and the summary zero, so its head 0) when there is no such
// session.
func (s *Store) summary(ctx context.Context, c *conn, id string) (sum session.Summary, n int64, found bool, err error) {
	dest := make([]driver.Value, 2)
	found, err = c.row(ctx, dest, stmtSummary, id)
	if err != nil || !found {
		return session.Summary{}, 0, false, err
	}
	n, _ = dest[0].(int64)
	sum, err = entry.Decode(asString(dest[1]))
	if errors.Is(err, session.ErrNewer) {
		return session.Summary{}, 0, false, fmt.Errorf("the summary of session %s in %s was %w", id, s.path, err)
	}
	if err != nil {
		return session.Summary{}, 0, false, fmt.Errorf("the summary of session %s in %s is damaged (%w); delete the session or restore the database from a backup", id, s.path, err)
	}
	return sum, n, true, nil
}

// asString returns a text or blob column's value as a string. Entries are
// selected as text: the driver then hands over one string whose memory the
// decoded fields share.
func asString(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// save writes the summary row of session id, numbered n.
func (s *Store) save(c *conn, id string, n int64, sum *session.Summary) error {
	js, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	_, err = c.exec(context.Background(), stmtSave, id, n, sum.Namespace, sum.Kind, sum.Head, int64(sum.Messages),
		string(sum.Status), sum.Created.UnixMicro(), sum.Updated.UnixMicro(), sum.Title, string(js), entry.Encode(sum))
	return err
}

// refold recomputes the summary of session id, numbered n, from its events
// through seq keep.
func (s *Store) refold(c *conn, id string, n, keep int64) (session.Summary, error) {
	sum := session.Summary{ID: id}
	rows, err := c.query(context.Background(), stmtRange, eventKey(n, 0), eventKey(n, keep))
	if err != nil {
		return sum, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 4)
	var e session.Event
	for {
		ok, err := nextEvent(rows, dest, &e)
		if err != nil || !ok {
			return sum, err
		}
		sum.Apply(e)
	}
}
