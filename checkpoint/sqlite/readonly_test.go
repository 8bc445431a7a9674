package sqlite_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// inspect does what an inspection command does with a read-only store:
// list, read heads and logs, try every write (each must be ErrReadOnly),
// close. It returns the heads it saw.
func inspect(tb testing.TB, path string) map[string]int64 {
	tb.Helper()
	ctx := tb.Context()
	s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if err != nil {
		tb.Fatalf("open read-only: %v", err)
	}
	list, err := s.List(ctx, "", checkpoint.ListOptions{AllKinds: true})
	if err != nil {
		tb.Fatal(err)
	}
	heads := make(map[string]int64)
	for _, sum := range list {
		h, err := s.Head(ctx, sum.ID)
		if err != nil {
			tb.Fatal(err)
		}
		log, err := checkpoint.ReadAll(ctx, s, sum.ID)
		if err != nil {
			tb.Fatal(err)
		}
		if int64(len(log)) != h.Head || h.Head != sum.Head {
			tb.Fatalf("%s: head %d, listed %d, %d events", sum.ID, h.Head, sum.Head, len(log))
		}
		heads[sum.ID] = h.Head
		_, err = s.Append(ctx, sum.ID, h.Head, []session.Event{promptEvent("no")})
		wantReadOnly(tb, "append", err)
		_, err = s.Truncate(ctx, sum.ID, 1, h.Head)
		wantReadOnly(tb, "truncate", err)
		wantReadOnly(tb, "delete", s.Delete(ctx, sum.ID))
	}
	_, err = s.Append(ctx, "new", 0, []session.Event{startedIn("new", "ns")})
	wantReadOnly(tb, "create", err)
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return heads
}

func wantReadOnly(tb testing.TB, what string, err error) {
	tb.Helper()
	if !errors.Is(err, checkpoint.ErrReadOnly) {
		tb.Fatalf("%s on a read-only store: %v, want ErrReadOnly", what, err)
	}
}

// copyFiles copies the database files of src (those that exist) to dst, as
// a crash would leave them.
func copyFiles(tb testing.TB, src, dst string, suffixes ...string) {
	tb.Helper()
	for _, suf := range suffixes {
		b, err := os.ReadFile(src + suf)
		if err != nil {
			tb.Fatal(err)
		}
		writeFile(tb, dst+suf, b)
	}
}

// TestReadOnlyChangesNothing opens databases read-only in every state a
// writer can leave them in and checks that the database, -wal and -shm
// files (and whether they exist) are byte for byte as before.
func TestReadOnlyChangesNothing(t *testing.T) {
	t.Run("closed cleanly", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sessions.db")
		w := mustOpen(t, path, nil)
		fill(t, w)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, dir)
		if len(before) != 4 { // the directory, the database and its kept, empty -wal and -shm
			t.Fatalf("after close: %v, want the database file with its kept -wal and -shm files", summarize(before))
		}
		heads := inspect(t, path)
		sameState(t, "a read-only inspection", before, dir)
		if heads["a"] != 3 || heads["b"] != 3 {
			t.Fatalf("heads %v", heads)
		}
	})

	// The inspection runs in another process, as an inspection command
	// does: within one process SQLite shares one mapping of the -shm file
	// between all connections to a database, the writer's writable one
	// included, so a reader there updates its read mark in the file.
	t.Run("writer open", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sessions.db")
		w := mustOpen(t, path, nil)
		fill(t, w)
		before := snapshot(t, dir)
		if _, ok := before["sessions.db-wal"]; !ok {
			t.Fatalf("no WAL while a writer is open: %v", summarize(before))
		}
		heads := inspectElsewhere(t, path)
		sameState(t, "a read-only inspection beside a writer", before, dir)
		if heads["a"] != 3 {
			t.Fatalf("the inspection saw head %d of a, want 3 (the writer's commits in the WAL)", heads["a"])
		}
		// The writer goes on; a new inspection sees its new commits.
		if _, err := w.Append(t.Context(), "a", 3, []session.Event{promptEvent("later")}); err != nil {
			t.Fatal(err)
		}
		before = snapshot(t, dir)
		if heads := inspectElsewhere(t, path); heads["a"] != 4 {
			t.Fatalf("the second inspection saw head %d of a, want 4", heads["a"])
		}
		sameState(t, "a second read-only inspection", before, dir)
	})

	t.Run("writer crashed", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "sessions.db")
		w := mustOpen(t, src, nil)
		fill(t, w)
		dir := t.TempDir()
		path := filepath.Join(dir, "sessions.db")
		copyFiles(t, src, path, "", "-wal", "-shm")
		before := snapshot(t, dir)
		if heads := inspect(t, path); heads["b"] != 3 {
			t.Fatalf("heads %v: the commits in the WAL were not read", heads)
		}
		sameState(t, "a read-only inspection after a crash", before, dir)
	})

	t.Run("writer crashed and the -shm file is gone", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "sessions.db")
		w := mustOpen(t, src, nil)
		fill(t, w)
		dir := t.TempDir()
		path := filepath.Join(dir, "sessions.db")
		copyFiles(t, src, path, "", "-wal")
		before := snapshot(t, dir)
		if heads := inspect(t, path); heads["b"] != 3 {
			t.Fatalf("heads %v: the commits in the WAL were not read", heads)
		}
		// SQLite has to rebuild the -shm index of the WAL to read it; the
		// database and the WAL themselves stay unchanged.
		sameState(t, "a read-only inspection", before, dir, "sessions.db-shm")
	})

	t.Run("empty file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sessions.db")
		writeFile(t, path, nil)
		before := snapshot(t, dir)
		s, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.List(t.Context(), "", checkpoint.ListOptions{})
		if err != nil || len(list) != 0 {
			t.Fatalf("list of an empty database: %v, %v", list, err)
		}
		if _, err := s.Head(t.Context(), "a"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("head in an empty database: %v", err)
		}
		for _, err := range s.Read(t.Context(), "a", 1) {
			if !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("read in an empty database: %v", err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		sameState(t, "a read-only open of an empty file", before, dir)
	})
}

// envInspect tells the test binary, started as a child by
// inspectElsewhere, which database TestInspectChild inspects.
const envInspect = "LITEAGENT_SQLITE_TEST_INSPECT"

// inspectElsewhere runs inspect on path in a child process and returns the
// heads it saw.
func inspectElsewhere(tb testing.TB, path string) map[string]int64 {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.CommandContext(tb.Context(), exe, "-test.run=^TestInspectChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envInspect+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("inspection in a child process: %v\n%s", err, out)
	}
	heads := make(map[string]int64)
	for _, line := range strings.Split(string(out), "\n") {
		var id string
		var head int64
		if n, _ := fmt.Sscanf(strings.TrimSpace(line), "head %s %d", &id, &head); n == 2 {
			heads[id] = head
		}
	}
	if len(heads) == 0 {
		tb.Fatalf("the child saw no sessions:\n%s", out)
	}
	return heads
}

// TestInspectChild is the child process of inspectElsewhere.
func TestInspectChild(t *testing.T) {
	path := os.Getenv(envInspect)
	if path == "" {
		t.Skip("runs only as a child process of TestReadOnlyChangesNothing")
	}
	for id, head := range inspect(t, path) {
		fmt.Printf("head %s %d\n", id, head)
	}
}

func TestReadOnlyMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	_, err := sqlite.Open(path, &sqlite.Options{ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("read-only open of a missing file: %v, want an error matching fs.ErrNotExist and checkpoint.ErrNotFound", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("a read-only open of a missing file left %v (%v)", entries, err)
	}
}
