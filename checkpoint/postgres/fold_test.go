package postgres_test

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
	execSQL(tb, loc, `UPDATE sessions SET entry = $1, messages = $2 WHERE id = $3`, entry.Encode(&s), s.Messages, id)
}
