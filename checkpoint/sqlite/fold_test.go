package sqlite_test

import (
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/session"
)

// storeSummary overwrites a session's stored summary through a connection
// of its own, as an older lite-agent would have left it.
func storeSummary(tb testing.TB, _ checkpoint.Checkpointer, loc, id string, s session.Summary) {
	tb.Helper()
	if _, err := sqlDB(tb, loc).Exec(`UPDATE sessions SET entry = ?, messages = ?, title = ? WHERE id = ?`, entry.Encode(&s), s.Messages, s.Title, id); err != nil {
		tb.Fatalf("store a summary of %s: %v", id, err)
	}
}
