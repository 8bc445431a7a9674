package sqlite

import (
	"database/sql/driver"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestReadOnlyCacheSize: a read-only connection gets the small page cache
// (readCacheSize) whichever way it opens the file: immutable, when no
// writer left anything in the WAL, or through the -shm file of a writer
// that is open.
func TestReadOnlyCacheSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(t.Context(), "s", 0, []session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"})}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		r, err := Open(path, &Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		c, err := r.conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer r.pool.put(c, false)
		dest := make([]driver.Value, 1)
		if _, err := c.row(t.Context(), dest, "PRAGMA cache_size"); err != nil {
			t.Fatal(err)
		}
		if got, _ := dest[0].(int64); got != readCacheSize {
			t.Errorf("%s: a read-only connection's cache_size is %v, want %d", when, dest[0], readCacheSize)
		}
		if list, err := r.List(t.Context(), "", checkpoint.ListOptions{AllKinds: true}); err != nil || len(list) != 1 {
			t.Errorf("%s: listed %d sessions (%v), want 1", when, len(list), err)
		}
	}
	check("with a writer open") // its WAL holds the append: readonly_shm
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := walBytes(path); n != 0 {
		t.Fatalf("the WAL has %d bytes after the writer closed, want 0", n)
	}
	check("after the writer closed") // immutable
}
