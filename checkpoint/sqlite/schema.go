package sqlite

import (
	"context"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// migrations holds the schema: schema/NNNN_name.sql brings the database
// from version NNNN-1 to NNNN. PRAGMA user_version records the version a
// database is at; PRAGMA application_id marks it as ours.
//
//go:embed schema/*.sql
var migrations embed.FS

// applicationID is "lite" in ASCII, stored in the database header so that
// another program's SQLite file is never mistaken for a session database.
const applicationID = 0x6c697465

// schemaSteps returns the migration scripts in order.
func schemaSteps() []string {
	names, err := fs.Glob(migrations, "schema/*.sql")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	steps := make([]string, len(names))
	for i, n := range names {
		b, err := migrations.ReadFile(n)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		steps[i] = string(b)
	}
	return steps
}

// backfills are the steps, written in Go, that follow a migration script
// in its transaction, by the version the script brings the database to.
var backfills = map[int64]func(*conn) error{
	2: backfillChecksums,
}

// backfillBatch is how many events backfillChecksums reads per query.
const backfillBatch = 1000

// backfillChecksums fills in the crc column (version 2) of every stored
// event, a batch at a time in key order.
func backfillChecksums(c *conn) error {
	bg := context.Background()
	after := int64(-1)
	dest := make([]driver.Value, 4)
	var keys []int64
	var sums []int64
	for {
		rows, err := c.query(bg, `SELECT key, type, time, data FROM events WHERE key > ? ORDER BY key LIMIT ?`, after, int64(backfillBatch))
		if err != nil {
			return fmt.Errorf("read events: %w", err)
		}
		keys, sums = keys[:0], sums[:0]
		for {
			var e session.Event
			ok, err := nextEvent(rows, dest, &e)
			if err != nil {
				rows.Close()
				return fmt.Errorf("read events: %w", err)
			}
			if !ok {
				break
			}
			key := e.Seq
			e.Seq = key & maxSeq
			keys, sums = append(keys, key), append(sums, int64(checkpoint.Checksum(e)))
		}
		rows.Close()
		if len(keys) == 0 {
			return nil
		}
		for i, k := range keys {
			if _, err := c.exec(bg, `UPDATE events SET crc = ? WHERE key = ?`, sums[i], k); err != nil {
				return fmt.Errorf("write checksums: %w", err)
			}
		}
		after = keys[len(keys)-1]
	}
}

// schemaVersion is the version this build creates and reads.
var schemaVersion = int64(len(schemaSteps()))

// version reads the database's application id, user version and whether it
// holds any table.
func (s *Store) version(ctx context.Context, c *conn) (app, ver int64, tables bool, err error) {
	dest := make([]driver.Value, 3)
	err = s.retry(ctx, func() error {
		_, err := c.row(ctx, dest, `SELECT (SELECT application_id FROM pragma_application_id),
			(SELECT user_version FROM pragma_user_version),
			EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table')`)
		return err
	})
	if err != nil {
		return 0, 0, false, err
	}
	app, _ = dest[0].(int64)
	ver, _ = dest[1].(int64)
	t, _ := dest[2].(int64)
	return app, ver, t != 0, nil
}

// dbState is what a writable Open needs to know of a database before it
// decides what to create: the version columns version reads and which of
// the search index's tables exist.
type dbState struct {
	app, ver                   int64
	tables                     bool // any table at all
	search, meta, vocab, words bool // search, search_meta, search_vocab, search_words
	pending                    bool // search_pending
}

// state reads the database's dbState, waiting while another connection
// holds a lock. It takes three small statements (two pragmas and a scan
// of the schema table's names) rather than one that joins them: SQLite
// parses them in a third of the time (BenchmarkPrepare), and a one-shot
// process prepares each once.
func (s *Store) state(ctx context.Context, c *conn) (dbState, error) {
	var st dbState
	err := s.retry(ctx, func() error {
		st = dbState{}
		dest := make([]driver.Value, 2)
		if _, err := c.row(ctx, dest[:1], "PRAGMA application_id"); err != nil {
			return err
		}
		st.app, _ = dest[0].(int64)
		if _, err := c.row(ctx, dest[:1], "PRAGMA user_version"); err != nil {
			return err
		}
		st.ver, _ = dest[0].(int64)
		rows, err := c.query(ctx, "SELECT type, name FROM sqlite_schema")
		if err != nil {
			return err
		}
		defer rows.Close()
		for {
			if err := rows.Next(dest); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if asString(dest[0]) == "table" {
				st.tables = true
			}
			switch asString(dest[1]) {
			case "search":
				st.search = true
			case "search_meta":
				st.meta = true
			case "search_vocab":
				st.vocab = true
			case "search_words":
				st.words = true
			case "search_pending":
				st.pending = true
			}
		}
	})
	if err != nil {
		return dbState{}, err
	}
	return st, nil
}

// checkVersion explains why a database of this version cannot be used, or
// returns nil. need is the version the caller can work with.
func (s *Store) checkVersion(app, ver int64, tables bool) error {
	switch {
	case app != 0 && app != applicationID:
		return fmt.Errorf("%s is a SQLite database of another program (application id %#x), not a lite-agent session database; nothing was changed; pass a separate file for sessions", s.path, app)
	case ver > schemaVersion:
		return fmt.Errorf("%s was written by a newer lite-agent (schema version %d; this build knows versions up to %d); nothing was changed; upgrade lite-agent to use it", s.path, ver, schemaVersion)
	case ver == 0 && tables:
		return fmt.Errorf("%s is a SQLite database of another program (it has tables but no lite-agent schema); nothing was changed; pass a separate file for sessions", s.path)
	}
	return nil
}

// migrate brings the database, found at version ver, to schemaVersion,
// creating it if it is new. Several processes may open a new database at
// once: the version is read again under the write lock, so each step runs
// exactly once.
func (s *Store) migrate(ctx context.Context, c *conn, ver int64) error {
	if ver == schemaVersion {
		return nil
	}
	return s.inTx(ctx, c, func() error {
		app, ver, tables, err := s.version(context.Background(), c)
		if err != nil {
			return err
		}
		if err := s.checkVersion(app, ver, tables); err != nil {
			return err
		}
		steps := schemaSteps()
		for v := ver; v < schemaVersion; v++ {
			if err := c.script(context.Background(), steps[v]); err != nil {
				return fmt.Errorf("migrate %s to schema version %d: %w", s.path, v+1, err)
			}
			if fill := backfills[v+1]; fill != nil {
				if err := fill(c); err != nil {
					return fmt.Errorf("migrate %s to schema version %d: %w", s.path, v+1, err)
				}
			}
		}
		return c.script(context.Background(), fmt.Sprintf("PRAGMA application_id = %d; PRAGMA user_version = %d", applicationID, schemaVersion))
	})
}

// checkReadable explains why a read-only store cannot read this database.
func (s *Store) checkReadable(ctx context.Context, c *conn) error {
	app, ver, tables, err := s.version(ctx, c)
	if err != nil {
		return err
	}
	if err := s.checkVersion(app, ver, tables); err != nil {
		return err
	}
	switch {
	case ver == 0:
		return fmt.Errorf("%s holds no lite-agent sessions yet (it has no schema); open it read-write once, or check the path", s.path)
	case ver == 1:
		// Version 2 only adds event checksums: a read-only store reads a
		// version 1 database as it is, checking seqs and heads.
		s.noChecksums = true
	case ver < schemaVersion:
		return fmt.Errorf("%s has schema version %d, older than this build's %d; open it read-write once to upgrade it", s.path, ver, schemaVersion)
	}
	return nil
}
