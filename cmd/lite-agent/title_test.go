package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func titles(t *testing.T, work, db string) []string {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--sessions")
	var list []struct{ Title string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("--sessions: %d %q %q", code, out, errs)
	}
	var out2 []string
	for _, s := range list {
		out2 = append(out2, s.Title)
	}
	return out2
}

// TestTitles: the first turn asks the model for a title in one request
// of its own; later turns do not; --title renames, and the title is
// listed and searchable.
func TestTitles(t *testing.T) {
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	srv := startModel(t, fakemodel.Reply{Text: "done"}, fakemodel.Reply{Text: "done again"})
	prompt := "fix the zebra parser please and then the docs"
	if code, _, errs := run(t, srv, work, "--session-db", db, prompt); code != 0 {
		t.Fatalf("one-shot: %d %s", code, errs)
	}
	want := fakemodel.TitleFor(prompt)
	if got := titles(t, work, db); len(got) != 1 || got[0] != want {
		t.Fatalf("titles %q, want the model's %q", got, want)
	}
	if len(srv.Titles()) != 1 || len(srv.Requests()) != 1 {
		t.Fatalf("title requests %q, turn requests %d: want one of each", srv.Titles(), len(srv.Requests()))
	}
	id := onlySession(t, work, db)
	if code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "go on"); code != 0 {
		t.Fatalf("resume: %d %s", code, errs)
	}
	if len(srv.Titles()) != 1 {
		t.Fatalf("a later turn asked for a title again: %q", srv.Titles())
	}

	code, out, errs := run(t, nil, work, "--session-db", db, "--title", id[:8], "Quokka", "migration")
	if code != 0 || !strings.Contains(out, `"title": "Quokka migration"`) {
		t.Fatalf("--title: %d %q %q", code, out, errs)
	}
	if got := titles(t, work, db); got[0] != "Quokka migration" {
		t.Fatalf("title after --title: %q", got)
	}
	hits := search(t, work, db, "quokka")
	if len(hits) != 1 || hits[0].Type != "session_titled" || hits[0].Session != id {
		t.Fatalf("the title is not searchable: %+v", hits)
	}
	for _, bad := range [][]string{
		{"--session-db", db, "--title", id},                    // no text
		{"--title", id, "name"},                                // no database
		{"--session-db", db, "--title", id, "x", "--sessions"}, // two operations
	} {
		if code, _, errs := run(t, nil, work, bad...); code != 2 || !strings.Contains(errs, "lite-agent:") {
			t.Errorf("%v: exit %d %q, want 2", bad, code, errs)
		}
	}
	if code, _, errs := run(t, nil, work, "--session-db", db, "--title", "nosuchsession", "x"); code != 1 || !strings.Contains(errs, "nosuchsession") {
		t.Errorf("--title of an unknown session: %d %q", code, errs)
	}
}
