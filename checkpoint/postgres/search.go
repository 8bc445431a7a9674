package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// The search index: one row per event with search text in a conversation,
// holding the event's distinct words (checkpoint.Words) as a tsvector built
// with array_to_tsvector, so PostgreSQL's own parser and dictionaries never
// change them, under a GIN index. Its time and namespace columns let a query
// pick the newest hits before it reads any event. It is derived data: rows
// are written in the statement of every append and removed with Truncate
// and Delete; a writable Open builds it from the logs when it is missing or
// of another checkpoint.SearchVersion, and Reindex rebuilds it. It is not
// part of the versioned schema: a database without it is still readable, and
// Search then scans the logs.

var (
	_ checkpoint.Searcher  = (*Store)(nil)
	_ checkpoint.Reindexer = (*Store)(nil)
)

const (
	indexTablesSQL = `CREATE TABLE IF NOT EXISTS search_index (
		session   text NOT NULL,
		seq       bigint NOT NULL,
		time      timestamptz NOT NULL,
		namespace text NOT NULL,
		words     tsvector NOT NULL,
		PRIMARY KEY (session, seq)
	);
	CREATE INDEX IF NOT EXISTS search_index_words ON search_index USING gin (words);
	CREATE INDEX IF NOT EXISTS search_index_time ON search_index (time DESC, seq DESC);
	CREATE TABLE IF NOT EXISTS search_meta (version integer NOT NULL)`
	indexTimeSQL    = `CREATE INDEX IF NOT EXISTS search_index_time ON search_index (time DESC, seq DESC)`
	indexExistsSQL  = `SELECT to_regclass('search_meta') IS NOT NULL AND to_regclass('search_index') IS NOT NULL`
	indexVersionSQL = `SELECT coalesce(max(version), 0) FROM search_meta`
	indexLockSQL    = `SELECT pg_advisory_xact_lock(hashtext('lite-agent search index ' || current_schema()))`
	// The searchable events of conversations after (session, seq), a page.
	indexPageSQL = `SELECT e.session, e.seq, e.type, e.time, e.data, s.namespace FROM events e JOIN sessions s ON s.id = e.session
		WHERE (e.session, e.seq) > ($1, $2) AND s.kind = '' AND e.type IN ('user_prompt', 'assistant_message', 'tool_finished', 'session_titled')
		ORDER BY e.session, e.seq LIMIT 1000`
	indexInsertSQL = `INSERT INTO search_index (session, seq, time, namespace, words)
		SELECT v.session, v.seq, v.time, v.namespace, array_to_tsvector(string_to_array(v.words, ' '))
		FROM unnest($1::text[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[]) AS v(session, seq, time, namespace, words)
		ON CONFLICT (session, seq) DO UPDATE SET time = excluded.time, namespace = excluded.namespace, words = excluded.words`
	// searchRecentSQL looks for hits among the newest $4 index rows only,
	// along the (time, seq) index: when they hold $3 hits, those are the
	// newest of all, found without touching the rest (a word in most
	// events).
	searchRecentSQL = `SELECT i.session, i.seq, e.type, e.time, e.data FROM (
		SELECT session, seq, time FROM (SELECT session, seq, time, words, namespace FROM search_index ORDER BY time DESC, seq DESC LIMIT $4) r
		WHERE words @@ $1::tsquery AND ($2 = '' OR namespace = $2)
		ORDER BY time DESC, seq DESC, session LIMIT $3) i
		JOIN events e ON e.session = i.session AND e.seq = i.seq
		ORDER BY i.time DESC, i.seq DESC, i.session`
	// searchSQL finds every match through the GIN index (materialized, so
	// the planner cannot walk the time index instead) and sorts them.
	searchSQL = `WITH m AS MATERIALIZED (SELECT session, seq, time FROM search_index WHERE words @@ $1::tsquery AND ($2 = '' OR namespace = $2))
		SELECT i.session, i.seq, e.type, e.time, e.data FROM (SELECT session, seq, time FROM m ORDER BY time DESC, seq DESC, session LIMIT $3) i
		JOIN events e ON e.session = i.session AND e.seq = i.seq
		ORDER BY i.time DESC, i.seq DESC, i.session`
)

// indexWords is what the index holds for e: its words joined by spaces, or
// "" when it has none.
func indexWords(e session.Event) string {
	if !session.Searchable(e.Type) {
		return ""
	}
	return strings.Join(checkpoint.Words(session.SearchText(e)), " ")
}

// tsQuery writes q as a tsquery: each term a quoted lexeme (terms are
// letters and digits only), all of them required, the last a prefix.
func tsQuery(q checkpoint.Query) string {
	terms := q.Terms()
	for i, t := range terms {
		terms[i] = "'" + t + "'"
	}
	return strings.Join(terms, " & ") + ":*"
}

// ensureIndex creates the search index and builds it from the logs when it
// is missing or stale. It runs when a writable store opens.
func ensureIndex(ctx context.Context, conn *pgx.Conn) error {
	v, err := indexVersion(ctx, conn)
	if err != nil {
		return fmt.Errorf("read the search index version: %w", err)
	}
	if v == checkpoint.SearchVersion {
		// Words in most events are found newest first along this index
		// instead of sorting every match; indexes built before it get it.
		_, err := conn.Exec(ctx, indexTimeSQL)
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, indexLockSQL); err != nil {
			return fmt.Errorf("lock the search index: %w", err)
		}
		if v, err := indexVersion(ctx, tx); err != nil || v == checkpoint.SearchVersion {
			return err
		}
		return rebuildIndex(ctx, tx)
	})
}

// indexVersion returns the search index's version, 0 if there is none.
func indexVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, indexExistsSQL).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	var v int
	err := q.QueryRow(ctx, indexVersionSQL).Scan(&v)
	return v, err
}

// rebuildIndex empties the index and fills it from every log, in tx.
func rebuildIndex(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, indexTablesSQL); err != nil {
		return fmt.Errorf("create the search index: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM search_index; DELETE FROM search_meta`); err != nil {
		return fmt.Errorf("clear the search index: %w", err)
	}
	afterSession, afterSeq := "", int64(0)
	for {
		rows, err := tx.Query(ctx, indexPageSQL, afterSession, afterSeq)
		if err != nil {
			return fmt.Errorf("read events to index: %w", err)
		}
		var sessions, namespaces, words []string
		var seqs []int64
		var times []time.Time
		n := 0
		for rows.Next() {
			var (
				id, typ, ns string
				e           session.Event
			)
			if err := rows.Scan(&id, &e.Seq, &typ, &e.Time, &e.Data, &ns); err != nil {
				rows.Close()
				return fmt.Errorf("read events to index: %w", err)
			}
			n++
			afterSession, afterSeq = id, e.Seq
			e.Type = session.Type(typ)
			if w := indexWords(e); w != "" {
				sessions, seqs, times, namespaces, words = append(sessions, id), append(seqs, e.Seq), append(times, e.Time), append(namespaces, ns), append(words, w)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read events to index: %w", err)
		}
		if n == 0 {
			break
		}
		if len(sessions) > 0 {
			if _, err := tx.Exec(ctx, indexInsertSQL, sessions, seqs, times, namespaces, words); err != nil {
				return fmt.Errorf("index: %w", err)
			}
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO search_meta (version) VALUES ($1)`, checkpoint.SearchVersion)
	return err
}

// Reindex implements checkpoint.Reindexer: it rebuilds the search index from
// the logs in one transaction. Appends go on meanwhile; what they index
// themselves the rebuild keeps.
func (s *Store) Reindex(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	defer s.leave()
	if s.readOnly {
		return fmt.Errorf("reindex: %w: the store was opened read-only; open it read-write to rebuild its search index", checkpoint.ErrReadOnly)
	}
	err := s.retrySafe(ctx, func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, indexLockSQL); err != nil {
				return err
			}
			return rebuildIndex(ctx, tx)
		})
	})
	if err != nil {
		return s.fail("reindex", err)
	}
	return nil
}

// Search implements checkpoint.Searcher: first among the newest index rows
// along the (time, seq) index, then, when they hold fewer hits than the
// limit, through the GIN index. A
// database whose index is missing or stale (opened read-only before any
// writable Open built it) is searched by checkpoint.Scan instead.
func (s *Store) Search(ctx context.Context, q checkpoint.Query, opts checkpoint.SearchOptions) ([]checkpoint.Hit, error) {
	if err := s.enter(); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = checkpoint.DefaultSearchLimit
	}
	var hits []checkpoint.Hit
	stale := false
	err := s.retrySafe(ctx, func() error {
		hits = nil
		v, err := indexVersion(ctx, s.pool)
		if err != nil {
			return err
		}
		if stale = v != checkpoint.SearchVersion; stale {
			return nil
		}
		if hits, err = s.searchRows(ctx, q, searchRecentSQL, opts.Namespace, limit, recentRows); err != nil || len(hits) >= limit {
			return err
		}
		hits, err = s.searchRows(ctx, q, searchSQL, opts.Namespace, limit)
		return err
	})
	s.leave()
	if err != nil {
		return nil, s.fail("search", err)
	}
	if stale {
		return checkpoint.Scan(ctx, s, q, opts)
	}
	return hits, nil
}

// recentRows is how many of the newest index rows Search looks at first.
const recentRows = 20_000

// searchRows runs one search statement (args after the query).
func (s *Store) searchRows(ctx context.Context, q checkpoint.Query, stmt string, args ...any) ([]checkpoint.Hit, error) {
	var hits []checkpoint.Hit
	rows, err := s.pool.Query(ctx, stmt, append([]any{tsQuery(q)}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, typ string
			e       session.Event
		)
		if err := rows.Scan(&id, &e.Seq, &typ, &e.Time, &e.Data); err != nil {
			return nil, err
		}
		e.Type, e.Time = session.Type(typ), e.Time.UTC()
		hits = append(hits, checkpoint.Hit{Session: id, Seq: e.Seq, Type: e.Type, Snippet: q.Snippet(session.SearchText(e)), Time: e.Time})
	}
	return hits, rows.Err()
}
