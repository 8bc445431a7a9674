package sqlite

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkPrepare prepares each statement a one-shot process runs once
// per connection (what a process pays for SQL parsing beside the
// schema's), and some it could run instead: the single version query the
// open path used to run, a REPLACE for stmtSave.
func BenchmarkPrepare(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "sessions.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(b.Context(), "a", 0, []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "a"}), session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "hello"})}); err != nil {
		b.Fatal(err)
	}
	c, err := s.pool.get(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer s.pool.put(c, false)
	for _, q := range []struct{ name, sql string }{
		{"version", `SELECT (SELECT application_id FROM pragma_application_id),
			(SELECT user_version FROM pragma_user_version),
			EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table')`},
		{"pragmaUV", "PRAGMA user_version"},
		{"pragmaApp", "PRAGMA application_id"},
		{"names", "SELECT type, name FROM sqlite_schema"},
		{"vocab", stmtVocab},
		{"wordsExist", stmtWordsExist},
		{"wordsInsert", stmtWordsInsert},
		// The REPLACE that stmtSave is not: half its parsing, but it
		// deletes and reinserts the row and its index entries on every
		// save, and would drop another session's row sharing a number.
		{"replace", `INSERT OR REPLACE INTO sessions (id, n, namespace, kind, head, messages, status, created, updated, title, summary, entry) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{"indexVersion", stmtIndexVersion},
		{"metaVersion", stmtMetaVersion},
		{"summary", stmtSummary},
		{"insert", stmtInsert},
		{"save", stmtSave},
		{"indexInsert", stmtIndexInsert},
		{"begin", "BEGIN IMMEDIATE"},
		{"commit", "COMMIT"},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				st, err := c.dc.(driver.ConnPrepareContext).PrepareContext(context.Background(), q.sql)
				if err != nil {
					b.Fatal(err)
				}
				st.Close()
			}
		})
	}
}
