package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

type hitJSON struct {
	Session string    `json:"session"`
	Seq     int64     `json:"seq"`
	Type    string    `json:"type"`
	Snippet string    `json:"snippet"`
	Time    time.Time `json:"time"`
}

func search(t *testing.T, work, db string, args ...string) []hitJSON {
	t.Helper()
	code, out, errs := run(t, nil, work, append([]string{"--session-db", db, "--search"}, args...)...)
	if code != 0 {
		t.Fatalf("--search %v: exit %d: %s", args, code, errs)
	}
	var hits []hitJSON
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		t.Fatalf("--search output is not a JSON array: %v\n%s", err, out)
	}
	return hits
}

// TestSearchAcrossSessions: --search finds prompts and answers of this
// workspace's sessions, newest first, --all-workspaces every workspace's,
// and it never changes the database.
func TestSearchAcrossSessions(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "sessions.db")
	workA, workB := filepath.Join(root, "a"), filepath.Join(root, "b")
	os.Mkdir(workA, 0o755)
	os.Mkdir(workB, 0o755)
	srv := startModel(t,
		fakemodel.Reply{Text: "The zebra parser is fixed."},
		fakemodel.Reply{Text: "Docs written for the lexer."},
		fakemodel.Reply{Text: "Another zebra, in workspace b."},
	)
	for _, c := range []struct{ work, prompt string }{
		{workA, "fix the Zebra parser"}, {workA, "write the lexer docs"}, {workB, "count the zebras"},
	} {
		if code, _, errs := run(t, srv, c.work, "--session-db", db, c.prompt); code != 0 {
			t.Fatalf("%q: exit %d: %s", c.prompt, code, errs)
		}
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	// The model's title (the fake model's: the prompt's first words) comes
	// last, when the turn ends: it is the newest hit.
	hits := search(t, workA, db, "zebra")
	if len(hits) != 3 {
		t.Fatalf("--search zebra in workspace a: %d hits, want the title, the answer and the prompt: %+v", len(hits), hits)
	}
	if hits[0].Type != "session_titled" || hits[0].Snippet != "Fix the Zebra parser" ||
		hits[1].Type != "assistant_message" || hits[1].Snippet != "The zebra parser is fixed." ||
		hits[2].Type != "user_prompt" || hits[2].Snippet != "fix the Zebra parser" {
		t.Fatalf("hits not newest first with their snippets: %+v", hits)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Session != hits[0].Session || hits[i-1].Seq <= hits[i].Seq || hits[i-1].Time.Before(hits[i].Time) {
			t.Fatalf("hits of one session should be newest first: %+v", hits)
		}
	}
	all := search(t, workA, db, "zebra", "--all-workspaces")
	if len(all) != 6 || all[0].Session == hits[0].Session || !strings.Contains(all[1].Snippet, "workspace b") {
		t.Fatalf("--all-workspaces: %+v", all)
	}
	if got := search(t, workA, db, "lex"); len(got) != 3 {
		t.Fatalf("the last word is a prefix: --search lex found %+v", got)
	}
	if got := search(t, workA, db, "zebra", "--limit", "1"); len(got) != 1 || got[0] != hits[0] {
		t.Fatalf("--limit 1: %+v", got)
	}
	if got := search(t, workA, db, "giraffe"); len(got) != 0 {
		t.Fatalf("no such word: %+v", got)
	}
	after, _ := os.ReadFile(db)
	if !bytes.Equal(before, after) {
		t.Fatal("--search changed the database")
	}

	// The line mode's /sessions WORDS lists the sessions that mention them.
	cmd := exec.Command(os.Args[0], "--workdir", workA, "--session-db", db, "--plain")
	cmd.Env = append(os.Environ(), "LITE_AGENT_TEST_MAIN=1", "ANTHROPIC_API_KEY=test-key", "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader("/sessions written\n1\n/exit\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("line mode: %v\n%s", err, stderr.String())
	}
	lines := stderr.String()
	if !strings.Contains(lines, "“Docs written for the lexer.”") || strings.Contains(lines, "Zebra") || !strings.Contains(lines, "loaded session") {
		t.Fatalf("/sessions written in line mode:\n%s", lines)
	}

	for _, bad := range [][]string{
		{"--search", "zebra"},                               // no --session-db
		{"--session-db", db, "--search", "  ...  "},         // no words
		{"--session-db", db, "--all-workspaces"},            // without --search
		{"--session-db", db, "--search", "x", "--sessions"}, // two operations
		{"--session-db", db, "--search", "x", "a prompt"},   // a prompt
	} {
		code, out, errs := run(t, nil, workA, bad...)
		if code != 2 || out != "" || !strings.Contains(errs, "lite-agent:") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and a reason", bad, code, out, errs)
		}
	}
}
