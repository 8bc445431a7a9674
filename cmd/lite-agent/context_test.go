package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInstructionFilesReachTheModel: the user-level AGENTS.md, the
// repository root's AGENTS.md, a CLAUDE.md standing alone and the
// workdir's AGENTS.md (1 MiB, so cut) reach the request body in that
// order; --session-info lists them; a resume in a new process sends what
// was recorded, not the files as they are now.
func TestInstructionFilesReachTheModel(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "repo")
	work := filepath.Join(repo, "svc", "api")
	config := filepath.Join(base, "config")
	writeFile(t, filepath.Join(config, "lite-agent", "AGENTS.md"), "MARKER-USER: answer briefly\n")
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "MARKER-ROOT: run go vet\n")
	writeFile(t, filepath.Join(repo, "svc", "CLAUDE.md"), "MARKER-CLAUDE: services use slog\n")
	near := "MARKER-NEAR: this file is huge\n" + strings.Repeat("x", 1<<20) + "\nMARKER-TAIL\n"
	writeFile(t, filepath.Join(work, "AGENTS.md"), near)
	writeFile(t, filepath.Join(work, "CLAUDE.md"), "MARKER-SHADOWED\n")
	if out, err := exec.Command("git", "init", "-q", "-b", "main", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	env := []string{"XDG_CONFIG_HOME=" + config}
	srv := startModel(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{SystemContains: []string{"MARKER-USER", "Git branch: main", "Working directory: " + work}}, Text: "noted"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"again"}}, Text: "still noted"},
	)
	db := filepath.Join(t.TempDir(), "s.db")
	code, _, errs := runEnv(t, srv, work, env, "--session-db", db, "hello")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errs)
	}
	body := string(srv.Requests()[0].Body)
	last := -1
	for _, m := range []string{"MARKER-USER", "MARKER-ROOT", "MARKER-CLAUDE", "MARKER-NEAR"} {
		i := strings.Index(body, m)
		if i < 0 || i < last {
			t.Fatalf("%s missing or out of order in the request body", m)
		}
		last = i
	}
	if strings.Contains(body, "MARKER-SHADOWED") || strings.Contains(body, "MARKER-TAIL") || len(body) > 200<<10 {
		t.Fatalf("the body (%d bytes) carries a shadowed CLAUDE.md or the whole 1 MiB file", len(body))
	}
	if !strings.Contains(body, "only its first") {
		t.Fatal("the cut file has no note saying it was cut")
	}

	id := onlySession(t, work, db)
	code, out, errs := run(t, nil, work, "--session-db", db, "--session-info", id)
	if code != 0 {
		t.Fatalf("--session-info: %d %s", code, errs)
	}
	var in struct {
		Files []struct {
			Path  string `json:"path"`
			Scope string `json:"scope"`
			Cut   bool   `json:"cut"`
		} `json:"instruction_files"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(config, "lite-agent", "AGENTS.md"), filepath.Join(repo, "AGENTS.md"), filepath.Join(repo, "svc", "CLAUDE.md"), filepath.Join(work, "AGENTS.md")}
	if len(in.Files) != len(want) {
		t.Fatalf("--session-info lists %+v, want %q", in.Files, want)
	}
	for i, f := range in.Files {
		if f.Path != want[i] || f.Cut != (i == 3) {
			t.Fatalf("file %d is %+v, want %s (cut only for the last)", i, f, want[i])
		}
	}

	// The files change; a resumed session is told what was recorded.
	writeFile(t, filepath.Join(repo, "AGENTS.md"), "MARKER-CHANGED\n")
	code, _, errs = runEnv(t, srv, work, env, "--session-db", db, "--resume", id, "again")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	again := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(again, "MARKER-ROOT") || strings.Contains(again, "MARKER-CHANGED") {
		t.Fatal("the resumed request re-read the instruction files instead of replaying the recorded context")
	}
	if a, b := systemOf(t, reqs[0].Body), systemOf(t, reqs[len(reqs)-1].Body); a != b {
		t.Fatal("the system prompt of the resumed session differs from the first run's")
	}
}

// systemOf returns the raw JSON of a Messages API request's system field.
func systemOf(t testing.TB, body []byte) string {
	t.Helper()
	var req struct {
		System json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return string(req.System)
}
