package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The search index: an FTS5 table holding, for each event with search
// text, its distinct words (checkpoint.Words) under the event's key as
// rowid. It is contentless (the text stays in events only) and derived:
// written in the transaction of every append, truncate and delete, built
// from the logs when a writable Open finds it missing or of another
// checkpoint.SearchVersion, and rebuilt by Reindex. It is not part of the
// versioned schema, so a database without it is still readable: Search then
// scans the logs.

var (
	_ checkpoint.Searcher  = (*Store)(nil)
	_ checkpoint.Reindexer = (*Store)(nil)
)

// Statements of the search index.
const (
	stmtIndexTables = `CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(words, content='', contentless_delete=1, tokenize='ascii');
		CREATE TABLE IF NOT EXISTS search_meta (version INTEGER NOT NULL);
		CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search, row)`
	// stmtVocab creates the index's vocabulary table (the words it holds,
	// in order), which stores nothing of its own.
	stmtVocab        = `CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search, row)`
	stmtIndexVersion = `SELECT (SELECT max(version) FROM search_meta), EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'search')`
	stmtIndexInsert  = `INSERT OR REPLACE INTO search (rowid, words) VALUES (?, ?)`
	stmtIndexDrop    = `DELETE FROM search WHERE rowid > ? AND rowid <= ?`
	stmtIndexClear   = `DELETE FROM search; DELETE FROM search_meta`
	stmtIndexAll     = `SELECT e.key, e.type, e.data FROM events e JOIN sessions s ON s.n = e.key >> 32
		WHERE e.key > ? AND s.kind = '' AND e.type IN ('user_prompt', 'assistant_message', 'tool_finished', 'session_titled') ORDER BY e.key LIMIT 1000`
	stmtIndexStamp  = `INSERT INTO search_meta (version) VALUES (?)`
	stmtIndexRowids = `SELECT rowid FROM search WHERE rowid > ? AND rowid <= ? ORDER BY rowid`
	stmtSearch      = `SELECT s.id, e.key & 4294967295, e.type, e.time, e.data
		FROM search f JOIN events e ON e.key = f.rowid JOIN sessions s ON s.n = e.key >> 32
		WHERE search MATCH ?1 AND (?2 = '' OR s.namespace = ?2)
		ORDER BY e.time DESC, e.key & 4294967295 DESC, s.id LIMIT ?3`
	stmtSearchSession = `SELECT s.id, e.key & 4294967295, e.type, e.time, e.data
		FROM search f JOIN events e ON e.key = f.rowid JOIN sessions s ON s.n = e.key >> 32
		WHERE search MATCH ?1 AND f.rowid > ?2 AND f.rowid <= ?3
		ORDER BY e.time DESC, e.key & 4294967295 DESC LIMIT ?4`
)

// ftsQuery writes q for FTS5 MATCH: each term quoted (terms are letters and
// digits only), the last one a prefix.
func ftsQuery(q checkpoint.Query) string {
	terms := q.Terms()
	for i, t := range terms {
		terms[i] = `"` + t + `"`
	}
	return strings.Join(terms, " ") + "*"
}

// maxExpansion is how many indexed words the last term of a query may be
// the start of for match to spell them out instead of asking FTS5 for a
// prefix.
const maxExpansion = 32

// match writes q for FTS5 MATCH, spelling the prefix its last term is out
// as the indexed words it starts (read from search_vocab, an fts5vocab
// table over the index, made by every writable open) when there are at most
// maxExpansion: FTS5 answers a prefix by merging the whole doclist of every
// word it starts, which for a common word costs about a second per query on
// a million events, while an OR of whole words is read as fast as the words
// themselves. Where the vocabulary cannot be read it is ftsQuery. ok is
// false when no indexed word starts with the last term: nothing matches.
func (s *Store) match(ctx context.Context, c *conn, q checkpoint.Query) (expr string, ok bool) {
	terms := q.Terms()
	if len(terms) == 0 {
		return ftsQuery(q), true
	}
	last := terms[len(terms)-1]
	// Bounded above too: fts5vocab counts each row's documents as it
	// reads it, and the word after the last match may be a common one.
	rows, err := c.query(ctx, `SELECT term FROM search_vocab WHERE term >= ?1 AND term < ?2 ORDER BY term LIMIT ?3`, last, last+"\xff", int64(maxExpansion+1))
	if err != nil {
		return ftsQuery(q), true // a database whose writable opens predate the vocabulary
	}
	var words []string
	dest := make([]driver.Value, 1)
	for rows.Next(dest) == nil {
		w := asString(dest[0])
		if !strings.HasPrefix(w, last) {
			break
		}
		words = append(words, `"`+w+`"`)
	}
	rows.Close()
	switch {
	case len(words) == 0:
		return "", false
	case len(words) > maxExpansion:
		return ftsQuery(q), true
	}
	for i, t := range terms[:len(terms)-1] {
		terms[i] = `"` + t + `"`
	}
	terms[len(terms)-1] = "(" + strings.Join(words, " OR ") + ")"
	return strings.Join(terms, " AND "), true
}

// indexWords is what the index holds for e: its words joined by spaces, or
// "" when it has none.
func indexWords(e session.Event) string {
	if !session.Searchable(e.Type) {
		return ""
	}
	return strings.Join(checkpoint.Words(session.SearchText(e)), " ")
}

// indexEvents adds the events of session number n, of kind kind, to the
// index, inside the caller's transaction. Only conversations are indexed.
func (s *Store) indexEvents(c *conn, n int64, kind string, events []session.Event) error {
	if kind != "" {
		return nil
	}
	for _, e := range events {
		if w := indexWords(e); w != "" {
			if _, err := c.exec(context.Background(), stmtIndexInsert, eventKey(n, e.Seq), w); err != nil {
				return fmt.Errorf("index: %w", err)
			}
		}
	}
	return nil
}

// unindex drops the index rows of session number n after seq keep.
func (s *Store) unindex(c *conn, n, keep int64) error {
	_, err := c.exec(context.Background(), stmtIndexDrop, eventKey(n, keep), eventKey(n, maxSeq))
	return err
}

// indexState reports the index's version (0: none) and whether its table
// exists.
func (s *Store) indexState(ctx context.Context, c *conn) (version int64, exists bool, err error) {
	dest := make([]driver.Value, 2)
	if _, err := c.row(ctx, dest, stmtIndexVersion); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0, false, nil
		}
		return 0, false, err
	}
	version, _ = dest[0].(int64)
	e, _ := dest[1].(int64)
	return version, e != 0, nil
}

// ensureIndex creates the index if it is missing and builds it from the
// logs if it is missing or stale. It runs when a writable store opens.
func (s *Store) ensureIndex(ctx context.Context, c *conn) error {
	v, exists, err := s.indexState(ctx, c)
	if err != nil {
		return err
	}
	if exists && v == checkpoint.SearchVersion {
		// The index's vocabulary (see match), for indexes built before it.
		_, err := c.exec(ctx, stmtVocab)
		return err
	}
	return s.inTx(ctx, c, func() error {
		// Again under the write lock: another process may have built it.
		if v, exists, err := s.indexState(context.Background(), c); err != nil || exists && v == checkpoint.SearchVersion {
			return err
		}
		return s.rebuildIndex(c)
	})
}

// rebuildIndex empties the index and fills it from every log, inside the
// caller's transaction.
func (s *Store) rebuildIndex(c *conn) error {
	bg := context.Background()
	if err := c.script(bg, stmtIndexTables); err != nil {
		return fmt.Errorf("create the search index: %w", err)
	}
	if err := c.script(bg, stmtIndexClear); err != nil {
		return fmt.Errorf("clear the search index: %w", err)
	}
	after := int64(-1)
	for {
		rows, err := c.query(bg, stmtIndexAll, after)
		if err != nil {
			return err
		}
		type row struct {
			key   int64
			words string
		}
		var batch []row
		dest := make([]driver.Value, 3)
		for {
			if err := rows.Next(dest); err != nil {
				if !errors.Is(err, io.EOF) {
					rows.Close()
					return err
				}
				break
			}
			key, _ := dest[0].(int64)
			e := session.Event{Type: session.Type(asString(dest[1])), Data: []byte(asString(dest[2]))}
			batch = append(batch, row{key, indexWords(e)})
		}
		rows.Close()
		if len(batch) == 0 {
			break
		}
		for _, r := range batch {
			if r.words == "" {
				continue
			}
			if _, err := c.exec(bg, stmtIndexInsert, r.key, r.words); err != nil {
				return fmt.Errorf("index: %w", err)
			}
		}
		after = batch[len(batch)-1].key
	}
	_, err := c.exec(bg, stmtIndexStamp, int64(checkpoint.SearchVersion))
	return err
}

// Reindex implements checkpoint.Reindexer: it rebuilds the search index
// from the logs in one transaction. Writers wait for it; readers do not.
func (s *Store) Reindex(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	defer s.mu.RUnlock()
	if err := s.writable("reindex", s.path); err != nil {
		return err
	}
	c, err := s.conn(ctx)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", s.path, s.readError(err))
	}
	err = s.inTx(ctx, c, func() error { return s.rebuildIndex(c) })
	s.pool.put(c, err != nil)
	if err != nil {
		return fmt.Errorf("reindex %s: %w", s.path, s.explain(err))
	}
	return nil
}

// Search implements checkpoint.Searcher with one FTS5 query. A database
// whose index is missing or stale (opened read-only before any writable
// Open built it) is searched by checkpoint.Scan instead.
func (s *Store) Search(ctx context.Context, q checkpoint.Query, opts checkpoint.SearchOptions) ([]checkpoint.Hit, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	if s.empty {
		s.mu.RUnlock()
		return nil, nil
	}
	c, err := s.conn(ctx)
	if err != nil {
		s.mu.RUnlock()
		return nil, fmt.Errorf("search %s: %w", s.path, s.readError(err))
	}
	var hits []checkpoint.Hit
	stale := false
	err = s.retry(ctx, func() error {
		v, exists, err := s.indexState(ctx, c)
		if err != nil {
			return err
		}
		if stale = !exists || v != checkpoint.SearchVersion; stale {
			return nil
		}
		hits, err = s.query(ctx, c, q, opts)
		return err
	})
	s.pool.put(c, false)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", s.path, s.readError(err))
	}
	if stale {
		return checkpoint.Scan(ctx, s, q, opts)
	}
	return hits, nil
}

// manyMatches is how many matching events make query switch from sorting
// every match by time to reading sessions newest first: sorting costs
// seconds once the matches are in the hundreds of thousands
// (BenchmarkSearch10kx100/CommonWords).
var manyMatches int64 = 20_000

// query runs the FTS5 query: one sorted join when the query matches few
// events, else one query per session, most recently updated first, until
// the hits kept are newer than any session left could hold.
func (s *Store) query(ctx context.Context, c *conn, q checkpoint.Query, opts checkpoint.SearchOptions) ([]checkpoint.Hit, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = checkpoint.DefaultSearchLimit
	}
	expr, ok := s.match(ctx, c, q)
	if !ok {
		return nil, nil
	}
	dest := make([]driver.Value, 1)
	if _, err := c.row(ctx, dest, `SELECT count(*) FROM (SELECT rowid FROM search WHERE search MATCH ? LIMIT ?)`, expr, manyMatches); err != nil {
		return nil, err
	}
	if n, _ := dest[0].(int64); n >= manyMatches {
		return s.queryBySession(ctx, c, q, expr, opts, limit)
	}
	return s.queryRows(ctx, c, stmtSearch, limit, q, expr, opts.Namespace, int64(limit))
}

// queryBySession searches sessions one by one, newest first.
func (s *Store) queryBySession(ctx context.Context, c *conn, q checkpoint.Query, expr string, opts checkpoint.SearchOptions, limit int) ([]checkpoint.Hit, error) {
	stmt := `SELECT id, n, updated FROM sessions WHERE kind = '' AND (?1 = '' OR namespace = ?1) ORDER BY updated DESC, id`
	rows, err := c.query(ctx, stmt, opts.Namespace)
	if err != nil {
		return nil, err
	}
	type sess struct {
		n       int64
		updated int64
	}
	var list []sess
	row := make([]driver.Value, 3)
	for rows.Next(row) == nil {
		n, _ := row[1].(int64)
		u, _ := row[2].(int64)
		list = append(list, sess{n, u})
	}
	rows.Close()
	var hits []checkpoint.Hit
	for _, ss := range list {
		if len(hits) >= limit && hits[len(hits)-1].Time.UnixMicro() > ss.updated {
			break
		}
		found, err := s.queryRows(ctx, c, stmtSearchSession, limit, q, expr, eventKey(ss.n, 0), eventKey(ss.n, maxSeq), int64(limit))
		if err != nil {
			return nil, err
		}
		hits = append(hits, found...)
		slices.SortFunc(hits, checkpoint.CompareHits)
		if len(hits) > limit {
			hits = hits[:limit]
		}
	}
	return hits, nil
}

// queryRows runs a search statement whose rows are (id, seq, type, time,
// data) and makes them hits.
func (s *Store) queryRows(ctx context.Context, c *conn, stmt string, limit int, q checkpoint.Query, args ...driver.Value) ([]checkpoint.Hit, error) {
	rows, err := c.query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []checkpoint.Hit
	dest := make([]driver.Value, 5)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return hits, nil
			}
			return nil, err
		}
		seq, _ := dest[1].(int64)
		us, _ := dest[3].(int64)
		e := session.Event{Seq: seq, Type: session.Type(asString(dest[2])), Time: entry.Micro(us), Data: []byte(asString(dest[4]))}
		hits = append(hits, checkpoint.Hit{Session: asString(dest[0]), Seq: e.Seq, Type: e.Type, Snippet: q.Snippet(session.SearchText(e)), Time: e.Time})
	}
}
