//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestFIFOInTheWorkdir: write, edit and delete of a named pipe return a
// clear error at once (the turn goes on and ends), and a restore that would
// put a file back where a FIFO now sits stops before writing anything,
// naming it. Nothing ever waits for a writer on the pipe.
func TestFIFOInTheWorkdir(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "one\n"})}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			toolCall("w2", "write", map[string]any{"path": "pipe", "content": "x"}),
			toolCall("e1", "edit", map[string]any{"path": "pipe", "old_string": "a", "new_string": "b"}),
			toolCall("d1", "delete", map[string]any{"path": "pipe"}),
		}},
		fakemodel.Reply{Text: "done", Expect: &fakemodel.Expect{ToolResultFor: []string{"w2", "e1", "d1"}, BodyContains: []string{"not a regular file"}}},
	)
	work, _ := filepath.EvalSymlinks(t.TempDir())
	db := filepath.Join(t.TempDir(), "s.db")
	if err := syscall.Mkfifo(filepath.Join(work, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "edit", "touch the pipe")
	if code != 0 {
		t.Fatalf("turn with tools on a FIFO: exit %d: %s", code, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatalf("fake model: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(work, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced or removed: %v %v", fi, err)
	}
	// a.txt, created after checkpoint 1, is now a FIFO: the restore must
	// not open it for reading (its drift check) nor remove it blindly.
	id := onlySession(t, work, db)
	os.Remove(filepath.Join(work, "a.txt"))
	if err := syscall.Mkfifo(filepath.Join(work, "a.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, nil, work, "--session-db", db, "--restore", id, "--to", firstCheckpoint(t, work, db, id), "--force")
	if code != 1 || !strings.Contains(errs, "a.txt is not a regular file") || !strings.Contains(errs, "nothing was written") {
		t.Fatalf("restore over a FIFO: exit %d, %q; want 1 naming a.txt as not a regular file, nothing written", code, errs)
	}
	if fi, err := os.Lstat(filepath.Join(work, "a.txt")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the restore touched the FIFO: %v %v", fi, err)
	}
}
