package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// exportedTurn runs one turn whose tool writes a file and returns the
// database, the session and its export.
func exportedTurn(t *testing.T) (db, id, work, exported string) {
	t.Helper()
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "hello\n"})}},
		fakemodel.Reply{Text: "Wrote a.txt."},
	)
	work = t.TempDir()
	db = filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "edit", "write a.txt"); code != 0 {
		t.Fatalf("turn: %d %s", code, errs)
	}
	id = onlySession(t, work, db)
	code, exported, errs := run(t, nil, work, "--session-db", db, "--export", id)
	if code != 0 {
		t.Fatalf("--export: %d %s", code, errs)
	}
	return db, id, work, exported
}

// TestImportCutExport cuts an export after its tool_started line (every
// line whole) and checks that --import refuses it, saying it was cut short,
// and creates nothing: no session with a fabricated interrupted call. An
// export written before exports had a header still imports.
func TestImportCutExport(t *testing.T) {
	_, id, work, exported := exportedTurn(t)
	lines := strings.SplitAfter(exported, "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"type":"tool_started"`) {
			cut = i + 1
		}
	}
	if cut < 0 {
		t.Fatalf("no tool_started in the export:\n%s", exported)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	in := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines[:cut], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, nil, work, "--session-db", fresh, "--import", in)
	if code != 1 || !strings.Contains(errs, "cut short") || !strings.Contains(errs, "nothing was imported") {
		t.Fatalf("--import of a cut export: exit %d, %q; want exit 1 saying it was cut short", code, errs)
	}
	if code, out, _ := run(t, nil, work, "--session-db", fresh, "--sessions"); code != 0 || strings.Contains(out, id) {
		t.Fatalf("after the refused import, --sessions: %d %q", code, out)
	}
	// Without the header (an export from before it existed): imported.
	old := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(old, []byte(strings.Join(lines[1:], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, nil, work, "--session-db", fresh, "--import", old); code != 0 || !strings.Contains(out, id) {
		t.Fatalf("--import of an export without a header: %d %q %q", code, out, errs)
	}
}

// TestImportExistingSession imports a session into the database that holds
// it: refused with exit 1, saying the session exists (not that another
// process wrote it), and the session is unchanged.
func TestImportExistingSession(t *testing.T) {
	db, id, work, exported := exportedTurn(t)
	in := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(in, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, nil, work, "--session-db", db, "--import", in)
	if code != 1 || !strings.Contains(errs, "already holds a session "+id) || strings.Contains(errs, "another process") {
		t.Fatalf("--import of an existing session: exit %d, %q", code, errs)
	}
	if _, again, _ := run(t, nil, work, "--session-db", db, "--export", id); again != exported {
		t.Fatal("the refused import changed the session")
	}
}

// TestSalvageNeedsExport: --salvage goes with --export.
func TestSalvageNeedsExport(t *testing.T) {
	code, _, errs := run(t, nil, t.TempDir(), "--session-db", filepath.Join(t.TempDir(), "s.db"), "--sessions", "--salvage")
	if code != 2 || !strings.Contains(errs, "--salvage goes with --export") {
		t.Fatalf("--salvage without --export: exit %d, %q", code, errs)
	}
}
