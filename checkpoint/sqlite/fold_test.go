package sqlite_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/checkpointtest"
	"github.com/lite-agent/lite-agent/checkpoint/internal/entry"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
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

// TestNewerEntryFormat plants a summary entry of the next entry format (as
// a newer lite-agent would write one) and checks that a writable and a
// read-only store refuse Head, List, the doctor and an append to that
// session with checkpoint.ErrNewer, in words that say to upgrade, while
// the session's events still read and another session's appends, in the
// same group commit, go on; the planted entry is left byte for byte.
func TestNewerEntryFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s) // a and b, three events each
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	newer := []byte{entry.Version + 1, 3, 'x', 'y', 'z'}
	if _, err := sqlDB(t, path).Exec(`UPDATE sessions SET entry = ? WHERE id = 'a'`, newer); err != nil {
		t.Fatal(err)
	}
	bHead := int64(3)
	for _, ro := range []bool{false, true} {
		s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		checkpointtest.CheckRefusesNewer(t, s, "a", "ns", 3, "b", &bHead, ro)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	if err := sqlDB(t, path).QueryRow(`SELECT entry FROM sessions WHERE id = 'a'`).Scan(&got); err != nil || !bytes.Equal(got, newer) {
		t.Fatalf("the newer entry is now %x (%v), want it left as %x", got, err, newer)
	}
}
