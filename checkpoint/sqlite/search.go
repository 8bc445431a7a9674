package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// The search index: an FTS5 table holding, for each event with search
// text, its distinct words (checkpoint.Words) under the event's key as
// rowid. It is contentless (the text stays in events only) and derived:
// it trails the appends (pending.go: a Search, Close or every indexLag
// appends index what they marked), is cut in the transaction of every
// truncate and delete, built from the logs when a writable Open finds it
// missing or of another checkpoint.SearchVersion, and rebuilt by Reindex.
// It is not part of the versioned schema, so a database without it is
// still readable: Search then scans the logs. Beside it, search_words
// holds every word the index holds (and perhaps words of events since
// deleted), written in the same transactions as its rows: the vocabulary
// match spells prefixes out from.

var (
	_ checkpoint.Searcher  = (*Store)(nil)
	_ checkpoint.Reindexer = (*Store)(nil)
)

// searchableTypes is the SQL list of the event types with search text
// (session.Searchable).
const searchableTypes = `('user_prompt', 'assistant_message', 'tool_finished', 'session_titled')`

// Statements of the search index.
const (
	stmtIndexTables = `CREATE VIRTUAL TABLE IF NOT EXISTS search USING fts5(words, content='', contentless_delete=1, tokenize='ascii');
		CREATE TABLE IF NOT EXISTS search_meta (version INTEGER NOT NULL);
		CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search, row);
		CREATE TABLE IF NOT EXISTS search_words (word TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID;
		` + stmtPendingTable
	// stmtVocab creates the index's vocabulary table (the words it holds,
	// in order), which stores nothing of its own.
	stmtVocab = `CREATE VIRTUAL TABLE IF NOT EXISTS search_vocab USING fts5vocab(search, row)`
	// stmtWordsFill makes search_words for an index built before it, from
	// the index's own vocabulary (one pass over the whole index).
	stmtWordsFill = `CREATE TABLE search_words (word TEXT NOT NULL PRIMARY KEY) WITHOUT ROWID;
		INSERT INTO search_words SELECT term FROM search_vocab`
	stmtWordsExist   = `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'search_words')`
	stmtWordsInsert  = `INSERT OR IGNORE INTO search_words (word) SELECT value FROM json_each(?)`
	stmtWords        = `SELECT word FROM search_words WHERE word >= ?1 AND word < ?2 ORDER BY word LIMIT ?3`
	stmtVocabWords   = `SELECT term FROM search_vocab WHERE term >= ?1 AND term < ?2 ORDER BY term LIMIT ?3`
	stmtIndexVersion = `SELECT (SELECT max(version) FROM search_meta), EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'search')`
	stmtMetaVersion  = `SELECT max(version) FROM search_meta`
	stmtIndexInsert  = `INSERT OR REPLACE INTO search (rowid, words) VALUES (?, ?)`
	stmtIndexDrop    = `DELETE FROM search WHERE rowid > ? AND rowid <= ?`
	stmtIndexClear   = `DELETE FROM search; DELETE FROM search_meta; DELETE FROM search_words; DELETE FROM search_pending`
	stmtIndexAll     = `SELECT e.key, e.type, e.data FROM events e JOIN sessions s ON s.n = e.key >> 32
		WHERE e.key > ? AND s.kind = '' AND e.type IN ` + searchableTypes + ` ORDER BY e.key LIMIT 1000`
	stmtIndexStamp = `INSERT INTO search_meta (version) VALUES (?)`
	// stmtIndexRowids lists the index's rows in a range of keys from the
	// table FTS5 keeps one row per document in (search_docsize): a plain
	// b-tree range, where the same range through the FTS5 table costs
	// about four times as much (BenchmarkSearch10kx100/Doctor).
	stmtIndexRowids = `SELECT id FROM search_docsize WHERE id > ? AND id <= ? ORDER BY id`
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
// as the indexed words it starts (read from search_words) when there are at
// most maxExpansion: FTS5 answers a prefix by merging the whole doclist of
// every word it starts, which for a common word costs about a second per
// query on a million events, while an OR of whole words is read as fast as
// the words themselves. A database written only by builds before
// search_words is read through search_vocab, an fts5vocab table over the
// index, which counts the documents of every word it returns (tens of
// milliseconds for a common one); one whose vocabulary cannot be read at
// all gets ftsQuery. ok is false when no indexed word starts with the last
// term: nothing matches.
func (s *Store) match(ctx context.Context, c *conn, q checkpoint.Query) (expr string, ok bool) {
	terms := q.Terms()
	if len(terms) == 0 {
		return ftsQuery(q), true
	}
	last := terms[len(terms)-1]
	words, err := s.startingWith(ctx, c, stmtWords, last)
	if err != nil {
		// Bounded above too: fts5vocab counts each row's documents as it
		// reads it, and the word after the last match may be a common one.
		if words, err = s.startingWith(ctx, c, stmtVocabWords, last); err != nil {
			return ftsQuery(q), true // a database whose writable opens predate the vocabulary
		}
	}
	switch {
	case len(words) == 0:
		return "", false
	case len(words) > maxExpansion:
		return ftsQuery(q), true
	}
	for i, t := range terms[:len(terms)-1] {
		terms[i] = `"` + t + `"`
	}
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	terms[len(terms)-1] = "(" + strings.Join(words, " OR ") + ")"
	return strings.Join(terms, " AND "), true
}

// startingWith runs stmt, a query of the vocabulary's words from ?1 below
// ?2 in order, and returns up to maxExpansion+1 words that start with
// prefix.
func (s *Store) startingWith(ctx context.Context, c *conn, stmt, prefix string) ([]string, error) {
	rows, err := c.query(ctx, stmt, prefix, prefix+"\xff", int64(maxExpansion+1))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var words []string
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				return words, nil
			}
			return nil, err
		}
		w := asString(dest[0])
		if !strings.HasPrefix(w, prefix) {
			return words, nil
		}
		words = append(words, w)
	}
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
	seen := make(map[string]bool)
	for _, e := range events {
		if err := s.indexRow(c, seen, eventKey(n, e.Seq), indexWords(e)); err != nil {
			return err
		}
	}
	return nil
}

// indexRow writes the index row of the event of key key, whose words are
// words (nothing when it is ""), and adds its words to search_words but
// for those in seen, the words the caller's transaction added already.
func (s *Store) indexRow(c *conn, seen map[string]bool, key int64, words string) error {
	if words == "" {
		return nil
	}
	bg := context.Background()
	if _, err := c.exec(bg, stmtIndexInsert, key, words); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	var fresh []string
	for w := range strings.SplitSeq(words, " ") {
		if !seen[w] {
			fresh = append(fresh, w)
			seen[w] = true
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	// One statement for all the words, handed over as a JSON array: a row
	// per word cost a statement step each (BenchmarkAppendWords).
	list, err := json.Marshal(fresh)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if _, err := c.exec(bg, stmtWordsInsert, string(list)); err != nil {
		return fmt.Errorf("index: %w", err)
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
// st is what the opening connection found: when the index's tables are
// all there, reading its version is the only statement this runs.
func (s *Store) ensureIndex(ctx context.Context, c *conn, st dbState) error {
	if st.search && st.meta {
		dest := make([]driver.Value, 1)
		if _, err := c.row(ctx, dest, stmtMetaVersion); err != nil {
			return err
		}
		if v, _ := dest[0].(int64); v == checkpoint.SearchVersion {
			if !st.pending {
				if _, err := c.exec(ctx, stmtPendingTable); err != nil {
					return err
				}
			}
			if st.vocab && st.words {
				return nil
			}
			return s.ensureWords(ctx, c)
		}
	}
	return s.inTx(ctx, c, func() error {
		// Again under the write lock: another process may have built it.
		if v, exists, err := s.indexState(context.Background(), c); err != nil || exists && v == checkpoint.SearchVersion {
			return err
		}
		return s.rebuildIndex(c)
	})
}

// ensureWords makes the index's vocabularies (see match) for an index
// built before them.
func (s *Store) ensureWords(ctx context.Context, c *conn) error {
	if _, err := c.exec(ctx, stmtVocab); err != nil {
		return err
	}
	dest := make([]driver.Value, 1)
	if _, err := c.row(ctx, dest, stmtWordsExist); err != nil || dest[0] != int64(0) {
		return err
	}
	return s.inTx(ctx, c, func() error {
		// Again under the write lock: another process may have made it.
		if _, err := c.row(context.Background(), dest, stmtWordsExist); err != nil || dest[0] != int64(0) {
			return err
		}
		return c.script(context.Background(), stmtWordsFill)
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
	if err := s.indexPages(c, stmtIndexAll); err != nil {
		return err
	}
	_, err := c.exec(bg, stmtIndexStamp, int64(checkpoint.SearchVersion))
	return err
}

// indexPages indexes the events stmt lists, inside the caller's
// transaction: stmt takes the key to list from after (-1 first), and gives
// a page of (key, type, data) in key order; the pages are read until one
// is empty. A page is read whole before it is indexed.
func (s *Store) indexPages(c *conn, stmt string) error {
	type row struct {
		key   int64
		words string
	}
	bg := context.Background()
	seen := make(map[string]bool)
	dest := make([]driver.Value, 3)
	for after := int64(-1); ; {
		var batch []row
		err := c.each(bg, dest, func() error {
			key, _ := dest[0].(int64)
			e := session.Event{Type: session.Type(asString(dest[1])), Data: []byte(asString(dest[2]))}
			batch = append(batch, row{key, indexWords(e)})
			return nil
		}, stmt, after)
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		for _, r := range batch {
			if err := s.indexRow(c, seen, r.key, r.words); err != nil {
				return err
			}
		}
		after = batch[len(batch)-1].key
	}
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

// Search implements checkpoint.Searcher with one FTS5 query, after the
// index has caught up with the appends (pending.go). A database whose
// index is missing or stale (opened read-only before any writable Open
// built it) is searched by checkpoint.Scan instead.
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
		// Events appended since the index last caught up (pending.go): a
		// writable store indexes them first; a read-only one cannot, and
		// reads them beside the index.
		if s.readOnly {
			marked, err := pendingAny(ctx, c)
			if err != nil {
				return err
			}
			if marked {
				hits, err = s.searchTrailing(ctx, c, q, opts)
				return err
			}
		} else {
			ictx, cancel := context.WithTimeout(ctx, min(s.busyTimeout, catchUpWait))
			err := s.indexPending(ictx, c)
			cancel()
			if err != nil && ctx.Err() == nil && (ictx.Err() != nil || isBusy(err) || lockTimeout(err)) {
				// Another connection keeps the write lock: answer without
				// indexing, as a read-only store does.
				hits, err = s.searchTrailing(ctx, c, q, opts)
				return err
			}
			if err != nil {
				return err
			}
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

// catchUpWait bounds how long a Search waits for the write lock to index
// the marked events (pending.go) before it reads them beside the index
// instead: a search does not wait on a long write of another process.
const catchUpWait = 100 * time.Millisecond

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

// Pages of the conversations, most recently updated first, for
// queryBySession: one statement per kind of namespace filter so that the one
// with a namespace reads the sessions_list index in order.
const (
	stmtSessionsPage = `SELECT id, n, updated FROM sessions WHERE namespace = ?1 AND kind = ''
		AND (updated < ?2 OR updated = ?2 AND id > ?3) ORDER BY updated DESC, id LIMIT ?4`
	stmtSessionsPageAll = `SELECT id, n, updated FROM sessions WHERE kind = ''
		AND (updated < ?2 OR updated = ?2 AND id > ?3) AND ?1 = '' ORDER BY updated DESC, id LIMIT ?4`
)

// sessionsPage is how many sessions queryBySession reads at a time.
var sessionsPage = 64

// queryBySession searches sessions one by one, newest first, reading them
// a page at a time: a common word is usually answered by the first few.
func (s *Store) queryBySession(ctx context.Context, c *conn, q checkpoint.Query, expr string, opts checkpoint.SearchOptions, limit int) ([]checkpoint.Hit, error) {
	stmt := stmtSessionsPage
	if opts.Namespace == "" {
		stmt = stmtSessionsPageAll
	}
	type sess struct {
		id      string
		n       int64
		updated int64
	}
	var hits []checkpoint.Hit
	after := sess{updated: math.MaxInt64}
	row := make([]driver.Value, 3)
	for {
		rows, err := c.query(ctx, stmt, opts.Namespace, after.updated, after.id, int64(sessionsPage))
		if err != nil {
			return nil, err
		}
		var page []sess
		for {
			if err := rows.Next(row); err != nil {
				rows.Close()
				if !errors.Is(err, io.EOF) {
					return nil, err
				}
				break
			}
			n, _ := row[1].(int64)
			u, _ := row[2].(int64)
			page = append(page, sess{asString(row[0]), n, u})
		}
		for _, ss := range page {
			if len(hits) >= limit && hits[len(hits)-1].Time.UnixMicro() > ss.updated {
				return hits, nil
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
		if len(page) < sessionsPage {
			return hits, nil
		}
		after = page[len(page)-1]
	}
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
