package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameButImportMark checks that export got is export want of the same
// session after an import: every line equal but the session_started one
// (line 2), which gains an import mark naming from. The headers are
// compared only when withHeader is set (a salvaged stream's header differs
// from an ordinary export's).
func sameButImportMark(t *testing.T, got, want, from string, withHeader bool) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) || len(g) < 3 {
		t.Fatalf("the re-export has %d lines, the export %d:\n%s", len(g), len(w), got)
	}
	if withHeader && g[0] != w[0] {
		t.Fatalf("header %s, want %s", g[0], w[0])
	}
	if strings.Join(g[2:], "\n") != strings.Join(w[2:], "\n") {
		t.Fatalf("events after session_started differ:\n%s\nwant:\n%s", got, want)
	}
	q, _ := json.Marshal(from)
	if !strings.Contains(g[1], `"imported":{"from":`+string(q)) || strings.Contains(w[1], `"imported"`) {
		t.Fatalf("session_started %s carries no import mark from %s (the original: %s)", g[1], from, w[1])
	}
}

// TestImportedSessionIsMarked: an imported session says where it came from
// in --session-info and --sessions, a session written here says nothing of
// the kind, and the imported one stays bound to the workdir its log names.
func TestImportedSessionIsMarked(t *testing.T) {
	db, id, work, exported := exportedTurn(t)
	in := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(in, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if code, _, errs := run(t, nil, work, "--session-db", fresh, "--import", in); code != 0 {
		t.Fatalf("--import: %d %s", code, errs)
	}
	host, _ := os.Hostname()
	type mark struct {
		Imported *struct {
			From, Host string
			Head       int64
		}
	}
	var info mark
	code, out, errs := run(t, nil, work, "--session-db", fresh, "--session-info", id)
	if code != 0 || json.Unmarshal([]byte(out), &info) != nil || info.Imported == nil || info.Imported.From != in || info.Imported.Host != host || info.Imported.Head == 0 {
		t.Fatalf("--session-info of the imported session: %d %s %s; want imported from %s on %s", code, out, errs, in, host)
	}
	var list []mark
	code, out, errs = run(t, nil, work, "--session-db", fresh, "--sessions")
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Imported == nil || list[0].Imported.From != in {
		t.Fatalf("--sessions after the import: %d %s %s; want it marked imported from %s", code, out, errs, in)
	}
	for _, args := range [][]string{{"--session-info", id}, {"--sessions"}} {
		if _, out, _ := run(t, nil, work, append([]string{"--session-db", db}, args...)...); strings.Contains(out, `"imported"`) {
			t.Errorf("%v of the session written here says imported: %s", args, out)
		}
	}
	_, again, _ := run(t, nil, work, "--session-db", fresh, "--export", id)
	sameButImportMark(t, again, exported, in, true)
	// The log names work; another directory is refused.
	other := t.TempDir()
	if code, _, errs := run(t, nil, other, "--session-db", fresh, "--resume", id, "go on"); code != 2 || !strings.Contains(errs, "--retarget") {
		t.Fatalf("--resume of the imported session in another workdir: exit %d, %q; want 2 naming --retarget", code, errs)
	}
}
