package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// state is what a Store knows of one session's row in sessions.
type state struct {
	exists bool
	sum    session.Summary
	gen    int64 // generation: new on creation and on every truncation
	etag   int64 // new on every write
	// newer is set when a newer lite-agent wrote the row (sum is zero): the
	// appends to it fail alone, and the state is never cached.
	newer error
}

// appendReq is one Append waiting for a group commit.
type appendReq struct {
	ctx      context.Context
	id       string
	expected int64
	events   []session.Event // prepared: seqs assigned, times set

	// The outcome.
	done bool
	head int64
	err  error

	// An attempt whose outcome is not known yet (the connection broke after
	// it was sent): the etag it writes and the head it makes if it applied.
	tag     int64
	newHead int64
}

const (
	// retryWindow is how long a group commit keeps retrying after the
	// connection to the server broke, before failing its appends.
	retryWindow = 3 * time.Second
	// maxRounds bounds the rounds a group commit spends on appends whose
	// sessions keep changing under it (another host appending between our
	// read and our write); each round, some writer makes progress.
	maxRounds = 100
	// resolveTimeout bounds the look-up that settles whether an append sent
	// just before its context was cancelled took effect.
	resolveTimeout = 5 * time.Second
	// maxCached is how many session states a Store remembers.
	maxCached = 4096
)

// Append implements checkpoint.Checkpointer.
//
// Appends from concurrent goroutines are committed together: one pipeline of
// statements, one implicit transaction, one WAL flush. Each statement checks
// its own session's head, so a conflict in one does not affect the others.
// If the connection breaks, the append is retried for a few seconds; an
// append whose outcome the break hid is recognised by the etag it wrote, so
// it is never applied twice.
func (s *Store) Append(ctx context.Context, id string, expectedHead int64, events []session.Event) (int64, error) {
	if s.readOnly {
		return 0, fmt.Errorf("append %s: %w", id, checkpoint.ErrReadOnly)
	}
	if err := s.enter(); err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	defer s.leave()
	prepared, err := checkpoint.Prepare(id, expectedHead, events, s.maxEvent)
	if err != nil {
		return 0, err
	}
	if err := checkStorable(id, prepared); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("append %s: %w", id, err)
	}
	r := &appendReq{ctx: ctx, id: id, expected: expectedHead, events: prepared}
	if l := s.leaseOf(id); l != nil {
		s.appendLeased(l, r)
	} else {
		s.appending.Add(1)
		s.group.Submit(r)
		s.appending.Add(-1)
	}
	if r.err != nil {
		return 0, s.fail("append "+id, r.err)
	}
	return r.head, nil
}

// checkStorable rejects what PostgreSQL's text and timestamptz columns cannot
// hold, before it can fail a whole group commit. It truncates times to the
// microsecond, the precision of timestamptz.
func checkStorable(id string, events []session.Event) error {
	if !storableText(id) {
		return fmt.Errorf("append %q: %w: a session id must be valid UTF-8 without NUL bytes", id, checkpoint.ErrInvalid)
	}
	if len(id) > maxKeyBytes {
		return fmt.Errorf("append %.40s…: %w: a session id of %d bytes is longer than the %d this store indexes", id, checkpoint.ErrInvalid, len(id), maxKeyBytes)
	}
	for i := range events {
		e := &events[i]
		if !storableText(string(e.Type)) {
			return fmt.Errorf("append %s: %w: event %d has a type %q that is not valid UTF-8 or holds a NUL byte", id, checkpoint.ErrInvalid, i, e.Type)
		}
		if y := e.Time.Year(); y < -4000 || y > 200000 {
			return fmt.Errorf("append %s: %w: event %d has a time (%v) outside the range PostgreSQL stores", id, checkpoint.ErrInvalid, i, e.Time)
		}
		e.Time = e.Time.Truncate(time.Microsecond)
	}
	return nil
}

// maxKeyBytes bounds the indexed text columns (session ids, namespaces): a
// B-tree entry must fit in a third of a page.
const maxKeyBytes = 1024

func storableText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// gatherWait is the group's Gather policy, the client-side twin of the
// server's commit_delay/commit_siblings: a leader waits for the other
// Appends in progress to queue up, for at most a quarter of a recent
// commit's time. A lone Append never waits.
func (s *Store) gatherWait(queued int) time.Duration {
	if int64(queued) >= s.appending.Load() {
		return 0
	}
	return min(max(time.Duration(s.commitTime.Load())/4, 50*time.Microsecond), time.Millisecond)
}

// commit is the group commit: it settles every request of the batch.
func (s *Store) commit(batch []*appendReq) {
	start := time.Now()
	defer func() {
		d := int64(time.Since(start))
		s.commitTime.Store((s.commitTime.Load()*7 + d) / 8)
	}()
	ctx, cancel := batchContext(batch)
	defer cancel()
	var pending []*appendReq
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		pending = append(pending, r)
	}
	deadline := time.Now().Add(retryWindow)
	backoff := 25 * time.Millisecond
	solo := false
	for round := 0; len(pending) > 0; round++ {
		err := s.onPool(ctx, func(c *pgx.Conn) error { return s.round(ctx, c, pending, solo) })
		if errors.Is(err, errSolo) {
			solo, err = true, nil
		}
		pending = slices.DeleteFunc(pending, func(r *appendReq) bool { return r.done })
		if len(pending) == 0 {
			return
		}
		switch {
		case err == nil && round < maxRounds:
			continue
		case err == nil:
			err = fmt.Errorf("gave up after %d attempts: the session kept changing under this writer", maxRounds)
		case isTransient(err) && ctx.Err() == nil && time.Now().Add(backoff).Before(deadline):
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			backoff *= 2
			continue
		}
		s.giveUp(ctx, pending, err)
		return
	}
}

// onPool runs fn on a connection of the pool.
func (s *Store) onPool(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return fn(c.Conn())
}

// appendLeased settles r, an append to a session whose lease this Store
// holds, on the lease's connection (lease.go): it is applied only while
// the lock is held, taken back if the connection broke and nobody else took
// it. It does not wait for a group commit: the lease's connection serves
// one session, whose appends come one at a time.
func (s *Store) appendLeased(l *lease, r *appendReq) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pending := []*appendReq{r}
	always := func(error) bool { return true } // the etag settles a repeat
	for round := 0; !r.done; round++ {
		if round == maxRounds {
			r.err = fmt.Errorf("gave up after %d attempts: the session kept changing under this writer", maxRounds)
			return
		}
		err := s.onLease(r.ctx, l, always, func(c *pgx.Conn) error { return s.round(r.ctx, c, pending, false) })
		if err != nil && !r.done && !(isTransient(err) && !isConnectionLost(err)) {
			s.giveUp(r.ctx, pending, err)
			return
		}
	}
}

// giveUp fails the pending requests with err, after settling those whose
// last attempt may have been applied: those succeed if it was.
func (s *Store) giveUp(ctx context.Context, pending []*appendReq, err error) {
	if slices.ContainsFunc(pending, func(r *appendReq) bool { return r.tag != 0 }) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
		defer cancel()
		rerr := s.onPool(rctx, func(c *pgx.Conn) error {
			_, err := s.resolve(rctx, c, pending)
			return err
		})
		if rerr != nil {
			for _, r := range pending {
				if r.tag != 0 {
					r.err = &ambiguousError{err}
					r.done = true
				}
			}
		}
	}
	for _, r := range pending {
		if r.done {
			continue
		}
		r.done = true
		if cerr := r.ctx.Err(); cerr != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			r.err = cerr
		} else {
			r.err = err
		}
	}
}

// batchContext returns a context for a group commit that is cancelled only
// when every request's context is done: a commit that someone still waits
// for goes on.
func batchContext(batch []*appendReq) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var left atomic.Int64
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, r := range batch {
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

// resolve reads the current state of the pending requests' sessions, settles
// the requests whose earlier attempt turned out to be applied, and returns
// the states read.
func (s *Store) resolve(ctx context.Context, c *pgx.Conn, pending []*appendReq) (map[string]state, error) {
	ids := make([]string, 0, len(pending))
	for _, r := range pending {
		if !slices.Contains(ids, r.id) {
			ids = append(ids, r.id)
		}
	}
	states, err := s.readStates(ctx, c, ids)
	if err != nil {
		return nil, err
	}
	// A session's etag names the last write to it. If it is the etag of an
	// attempt of ours, that attempt and those chained before it in the same
	// pipeline were applied; later ones were not.
	for _, id := range ids {
		st := states[id]
		last := -1
		for i, r := range pending {
			if r.id == id && r.tag != 0 && st.exists && r.tag == st.etag {
				last = i
			}
		}
		for i, r := range pending {
			if r.id != id || r.tag == 0 {
				continue
			}
			if i <= last {
				r.done, r.head, r.err = true, r.newHead, nil
			}
			r.tag = 0
		}
	}
	return states, nil
}

// readStates reads the rows of sessions ids. Sessions without a row get a
// state with exists false. The states are remembered in the cache.
func (s *Store) readStates(ctx context.Context, c *pgx.Conn, ids []string) (map[string]state, error) {
	rows, err := c.Query(ctx, `SELECT id, entry, generation, etag FROM sessions WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]state, len(ids))
	for rows.Next() {
		var (
			id  string
			raw []byte
			st  = state{exists: true}
		)
		if err := rows.Scan(&id, &raw, &st.gen, &st.etag); err != nil {
			rows.Close()
			return nil, err
		}
		if err := entry.DecodeInto(string(raw), &st.sum); errors.Is(err, session.ErrNewer) {
			st.newer = entryError(id, err)
		} else if err != nil {
			rows.Close()
			return nil, entryError(id, err)
		}
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for _, id := range ids {
		st := out[id]
		s.remember(id, st)
		out[id] = st
	}
	return out, nil
}

// remember caches st for id; cacheMu must be held.
func (s *Store) remember(id string, st state) {
	if !st.exists || st.newer != nil {
		delete(s.cache, id)
		return
	}
	if _, ok := s.cache[id]; !ok && len(s.cache) >= maxCached {
		for k := range s.cache { // evict an arbitrary quarter
			delete(s.cache, k)
			if len(s.cache) < maxCached*3/4 {
				break
			}
		}
	}
	s.cache[id] = st
}

func (s *Store) forget(id string) {
	s.cacheMu.Lock()
	delete(s.cache, id)
	s.cacheMu.Unlock()
}

// known is a state and whether it was read in this round (so a head that
// differs from an append's expected head is a real conflict) or comes from
// the cache or from an earlier append of this round (so it may be stale).
type known struct {
	state
	fresh bool
}

// plan is one append statement of a round.
type plan struct {
	r    *appendReq
	next state
	prev state
}

// round makes one attempt at every pending request: it reads the sessions
// the cache does not vouch for, decides conflicts that a fresh read proves,
// and sends one pipeline of conditional statements for the rest. Requests it
// settles are marked done; the others are left for the next round. The error
// is that of the read or of the pipeline.
func (s *Store) round(ctx context.Context, c *pgx.Conn, pending []*appendReq, solo bool) error {
	states := make(map[string]known, len(pending))
	var need []*appendReq
	s.cacheMu.Lock()
	for _, r := range pending {
		if st, ok := s.cache[r.id]; ok && r.tag == 0 {
			states[r.id] = known{state: st}
		} else {
			need = append(need, r)
		}
	}
	s.cacheMu.Unlock()
	if len(need) > 0 {
		fresh, err := s.resolve(ctx, c, need)
		if err != nil {
			return err
		}
		for id, st := range fresh {
			states[id] = known{state: st, fresh: true}
		}
	}

	var plans []plan
	blocked := make(map[string]bool)
	for _, r := range pending {
		if r.done || blocked[r.id] {
			continue
		}
		st := states[r.id]
		if st.newer != nil {
			r.done, r.err = true, st.newer
			continue
		}
		if st.exists && checkpoint.Stale(&st.sum) {
			// An older fold's summary is never folded further: store the
			// fold of the log first (refold.go), then go on from it.
			if _, _, err := s.refoldOne(ctx, r.id); err != nil {
				r.done, r.err = true, err
				continue
			}
			blocked[r.id] = true
			s.forget(r.id)
			continue
		}
		head := int64(0)
		if st.exists {
			head = st.sum.Head
		}
		if head != r.expected {
			if st.fresh {
				r.done, r.err = true, &checkpoint.ConflictError{Session: r.id, Expected: r.expected, Actual: head}
				continue
			}
			// The cache may be stale: read the session next round.
			blocked[r.id] = true
			s.forget(r.id)
			continue
		}
		next := state{exists: true, gen: st.gen, etag: newTag()}
		if st.exists {
			next.sum = st.sum
			next.sum.Open = slices.Clone(st.sum.Open)
		} else {
			next.sum = session.Summary{ID: r.id}
			next.gen = newTag()
		}
		for _, e := range r.events {
			next.sum.Apply(e)
		}
		if err := storableSummary(next.sum); err != nil {
			r.done, r.err = true, err
			continue
		}
		plans = append(plans, plan{r: r, next: next, prev: st.state})
		states[r.id] = known{state: next}
	}
	if len(plans) == 0 {
		return nil
	}
	return s.send(ctx, c, plans, solo)
}

// storableSummary rejects summaries whose indexed fields PostgreSQL's text
// columns cannot hold.
func storableSummary(sum session.Summary) error {
	for _, f := range []string{sum.Namespace, sum.Kind} {
		if !storableText(f) {
			return fmt.Errorf("%w: the session_started event names a namespace or kind with a NUL byte", checkpoint.ErrInvalid)
		}
	}
	if len(sum.Namespace) > maxKeyBytes {
		return fmt.Errorf("%w: a namespace of %d bytes is longer than the %d this store indexes", checkpoint.ErrInvalid, len(sum.Namespace), maxKeyBytes)
	}
	return nil
}

func newTag() int64 { return rand.Int64() }

// The append statements. Each appends to one or more sessions at once: per
// session, a compare-and-set on its row (insert if absent; update if head
// and etag are as expected) with the events inserted only where it took. A
// statement is atomic, and an append that does not take writes nothing and
// raises no error, so a conflict in one append does not abort the others.
// oneSQL serves a single append; manySQL serves several appends to distinct
// sessions, whose fields come as parallel arrays.
const (
	oneSQL = `WITH c AS (
	INSERT INTO sessions (id, namespace, kind, head, messages, status, created, updated, entry, generation, etag, max_data)
	SELECT $1, $3, $4, $5, $6, $7, $8, $9, $10::bytea, $11, $12, $18::integer WHERE $13
	ON CONFLICT (id) DO NOTHING
	RETURNING id
), u AS (
	UPDATE sessions SET namespace = $3, kind = $4, head = $5, messages = $6, status = $7,
		created = $8, updated = $9, entry = $10::bytea, etag = $12, max_data = greatest(max_data, $18::integer)
	WHERE NOT $13 AND id = $1 AND head = $2 AND etag = $14
	RETURNING id
), a AS (
	SELECT id FROM c UNION ALL SELECT id FROM u
), e AS (
	INSERT INTO events (session, seq, type, time, data, crc)
	SELECT $1, $2::bigint + u.n, u.type, u.time, u.data, u.crc
	FROM unnest($15::text[], $16::timestamptz[], $17::bytea[], $19::integer[]) WITH ORDINALITY AS u(type, time, data, crc, n)
	WHERE EXISTS (SELECT FROM a)
), x AS (
	INSERT INTO search_index (session, seq, time, namespace, words)
	SELECT $1, $2::bigint + w.n, w.time, $3, array_to_tsvector(string_to_array(w.words, ' '))
	FROM unnest($20::text[], $16::timestamptz[]) WITH ORDINALITY AS w(words, time, n)
	WHERE w.words <> '' AND $4 = '' AND EXISTS (SELECT FROM a)
	ON CONFLICT (session, seq) DO UPDATE SET time = excluded.time, namespace = excluded.namespace, words = excluded.words
)
SELECT id FROM a`

	manySQL = `WITH r AS (
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::integer[], $7::text[],
		$8::timestamptz[], $9::timestamptz[], $10::bytea[], $11::bigint[], $12::bigint[], $13::boolean[], $14::bigint[], $20::integer[])
	AS r(id, expected, namespace, kind, head, messages, status, created, updated, entry, generation, etag, fresh, old_etag, max_data)
), c AS (
	INSERT INTO sessions (id, namespace, kind, head, messages, status, created, updated, entry, generation, etag, max_data)
	SELECT id, namespace, kind, head, messages, status, created, updated, entry, generation, etag, max_data FROM r WHERE fresh
	ON CONFLICT (id) DO NOTHING
	RETURNING id
), u AS (
	UPDATE sessions s SET namespace = r.namespace, kind = r.kind, head = r.head, messages = r.messages,
		status = r.status, created = r.created, updated = r.updated, entry = r.entry, etag = r.etag,
		max_data = greatest(s.max_data, r.max_data)
	FROM r
	WHERE NOT r.fresh AND s.id = r.id AND s.head = r.expected AND s.etag = r.old_etag
	RETURNING s.id
), a AS (
	SELECT id FROM c UNION ALL SELECT id FROM u
), e AS (
	INSERT INTO events (session, seq, type, time, data, crc)
	SELECT v.session, v.seq, v.type, v.time, v.data, v.crc
	FROM unnest($15::text[], $16::bigint[], $17::text[], $18::timestamptz[], $19::bytea[], $21::integer[]) AS v(session, seq, type, time, data, crc)
	WHERE v.session IN (SELECT id FROM a)
), x AS (
	INSERT INTO search_index (session, seq, time, namespace, words)
	SELECT v.session, v.seq, v.time, r.namespace, array_to_tsvector(string_to_array(v.words, ' '))
	FROM unnest($15::text[], $16::bigint[], $18::timestamptz[], $22::text[]) AS v(session, seq, time, words)
	JOIN r ON r.id = v.session
	WHERE v.words <> '' AND r.kind = '' AND v.session IN (SELECT id FROM a)
	ON CONFLICT (session, seq) DO UPDATE SET time = excluded.time, namespace = excluded.namespace, words = excluded.words
)
SELECT id FROM a`
)

// statement is one append statement of a pipeline and the plans it serves.
type statement struct {
	plans []plan
}

// queue adds the statement to b.
func (st statement) queue(b *pgx.Batch) error {
	if len(st.plans) == 1 {
		p := st.plans[0]
		x := p.next.sum
		n := len(p.r.events)
		types, times, datas, sums, words := make([]string, n), make([]time.Time, n), make([][]byte, n), make([]int32, n), make([]string, n)
		for i, e := range p.r.events {
			types[i], times[i], datas[i], sums[i], words[i] = string(e.Type), e.Time, e.Data, int32(checkpoint.Checksum(e)), indexWords(e)
		}
		b.Queue(oneSQL, p.r.id, p.r.expected, x.Namespace, x.Kind, x.Head, x.Messages, string(x.Status), x.Created, x.Updated,
			entry.Encode(&x), p.next.gen, p.next.etag, !p.prev.exists, p.prev.etag, types, times, datas, maxData(p.r.events), sums, words)
		return nil
	}
	n := len(st.plans)
	var (
		ids, namespaces, kinds, statuses       = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		entries                                = make([][]byte, n)
		expected, heads, gens, etags, oldEtags = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		messages, maxDatas                     = make([]int32, n), make([]int32, n)
		created, updated                       = make([]time.Time, n), make([]time.Time, n)
		fresh                                  = make([]bool, n)
		evSessions, evTypes                    []string
		evSeqs                                 []int64
		evTimes                                []time.Time
		evDatas                                [][]byte
		evSums                                 []int32
		evWords                                []string
	)
	for i, p := range st.plans {
		x := p.next.sum
		ids[i], expected[i], namespaces[i], kinds[i], heads[i] = p.r.id, p.r.expected, x.Namespace, x.Kind, x.Head
		messages[i], statuses[i], created[i], updated[i], entries[i] = int32(x.Messages), string(x.Status), x.Created, x.Updated, entry.Encode(&x)
		gens[i], etags[i], fresh[i], oldEtags[i], maxDatas[i] = p.next.gen, p.next.etag, !p.prev.exists, p.prev.etag, maxData(p.r.events)
		for _, e := range p.r.events {
			evSessions, evSeqs, evTypes = append(evSessions, p.r.id), append(evSeqs, e.Seq), append(evTypes, string(e.Type))
			evTimes, evDatas, evSums = append(evTimes, e.Time), append(evDatas, e.Data), append(evSums, int32(checkpoint.Checksum(e)))
			evWords = append(evWords, indexWords(e))
		}
	}
	b.Queue(manySQL, ids, expected, namespaces, kinds, heads, messages, statuses, created, updated, entries, gens, etags, fresh, oldEtags,
		evSessions, evSeqs, evTypes, evTimes, evDatas, maxDatas, evSums, evWords)
	return nil
}

// maxData is the size of the largest data of events.
func maxData(events []session.Event) int32 {
	n := 0
	for _, e := range events {
		n = max(n, len(e.Data))
	}
	return int32(n)
}

// statements groups plans into statements: one per plan if solo, else as
// few as can be, each serving distinct sessions, in the plans' order (an
// append chained on another one of the same session goes in a later
// statement, which sees the earlier one's effect).
func statements(plans []plan, solo bool) []statement {
	var out []statement
	if solo {
		for _, p := range plans {
			out = append(out, statement{plans: []plan{p}})
		}
		return out
	}
	// Appends go to the first statement after the last one holding their
	// session, unless that statement's data would pass statementBytes.
	last := make(map[string]int, len(plans))
	var size []int
	for _, p := range plans {
		n := 0
		for _, e := range p.r.events {
			n += len(e.Data)
		}
		l := 0
		if prev, ok := last[p.r.id]; ok {
			l = prev + 1
		}
		for l < len(out) && size[l] > 0 && size[l]+n > statementBytes {
			l++
		}
		if l == len(out) {
			out, size = append(out, statement{}), append(size, 0)
		}
		out[l].plans = append(out[l].plans, p)
		size[l] += n
		last[p.r.id] = l
	}
	return out
}

// statementBytes caps the event data one statement carries when it serves
// several appends, well below the 1 GB PostgreSQL allows in one message.
const statementBytes = 32 << 20

// errSolo asks for a round to be repeated with one statement per append: a
// statement serving several appends was refused, and only a statement of
// its own tells which append is at fault.
var errSolo = errors.New("retry appends one by one")

// send runs the plans as one pipeline and settles them: applied, or not
// (left pending, their session to be read again), or failed with their
// statement's error. If the connection breaks, the plans stay pending with
// their etags set so the next round can tell whether they were applied.
func (s *Store) send(ctx context.Context, conn *pgx.Conn, plans []plan, solo bool) error {
	stmts := statements(plans, solo)
	b := &pgx.Batch{}
	for _, st := range stmts {
		if err := st.queue(b); err != nil {
			for _, p := range st.plans {
				p.r.done, p.r.err = true, err
			}
			return nil
		}
	}
	ids := make([]string, 0, len(plans))
	for _, p := range plans {
		p.r.tag, p.r.newHead = p.next.etag, p.next.sum.Head
		ids = append(ids, p.r.id)
	}
	queueNotify(b, ids...)
	br := conn.SendBatch(ctx, b)
	applied := make(map[*appendReq]bool, len(plans))
	var stmtErr error
	failed := -1
	for i := range stmts {
		rows, err := br.Query()
		if err == nil {
			var id string
			_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
				for _, p := range stmts[i].plans {
					if p.r.id == id {
						applied[p.r] = true
					}
				}
				return nil
			})
		}
		if err != nil {
			stmtErr, failed = err, i
			break
		}
	}
	closeErr := br.Close()
	var refused *pgconn.PgError
	switch {
	case stmtErr != nil && errors.As(stmtErr, &refused) && !isTransient(stmtErr) && ctx.Err() == nil:
		// The statement was refused and the implicit transaction rolled
		// back: nothing was applied.
		s.forgetAll(plans)
		for _, p := range plans {
			p.r.tag = 0
		}
		if len(stmts[failed].plans) > 1 {
			return errSolo
		}
		p := stmts[failed].plans[0]
		p.r.done, p.r.err = true, stmtErr
		return nil
	case stmtErr != nil:
		s.forgetAll(plans)
		return stmtErr
	case closeErr != nil:
		if errors.As(closeErr, &refused) && !isTransient(closeErr) {
			// The commit was refused: nothing was applied.
			for _, p := range plans {
				p.r.tag = 0
			}
		}
		s.forgetAll(plans)
		return closeErr
	}
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for _, p := range plans {
		p.r.tag = 0
		if applied[p.r] {
			p.r.done, p.r.head = true, p.next.sum.Head
			s.remember(p.r.id, p.next)
		} else {
			delete(s.cache, p.r.id)
		}
	}
	return nil
}

func (s *Store) forgetAll(plans []plan) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	for _, p := range plans {
		delete(s.cache, p.r.id)
	}
}
