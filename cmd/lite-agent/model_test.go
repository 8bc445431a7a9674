package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestModelCommand: /model lists the current and known models, /model
// NAME switches the session's model, the switch is in the log, a resume
// goes on with it, and an explicit --model on a resume wins (recorded too).
func TestModelCommand(t *testing.T) {
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	srv := startModel(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{Model: "claude-opus-4-1", LastUserContains: []string{"hello"}}, Text: "Hi from opus."},
		fakemodel.Reply{Expect: &fakemodel.Expect{Model: "claude-opus-4-1", LastUserContains: []string{"go on"}}, Text: "Still opus."},
		fakemodel.Reply{Expect: &fakemodel.Expect{Model: "claude-haiku-4-5", LastUserContains: []string{"cheaper"}}, Text: "Haiku now."},
	)
	r := liteAgent(t, srv, work, "/model\n/model two words\n/model claude-opus-4-1\nhello\n/model\n/exit\n", nil, "--plain", "--session-db", db)
	if r.code != 0 || !strings.Contains(r.stdout, "Hi from opus.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
	}
	for _, want := range []string{
		"model: claude-sonnet-4-6\nknown models",
		"  claude-opus-4*          200K window  $15 in / $75 out per million tokens",
		"error: set model: model name \"two words\" holds spaces or control characters",
		"model: claude-opus-4-1 from the next prompt on\n",
		"model: claude-opus-4-1\nknown models",
	} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errs)
		}
	}
	id := onlySession(t, work, db)
	code, out, errs := run(t, srv, work, "--session-db", db, "--resume", id, "go on")
	if code != 0 || !strings.Contains(out, "Still opus.") {
		t.Fatalf("resume: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	code, out, errs = run(t, srv, work, "--session-db", db, "--resume", id, "--model", "claude-haiku-4-5", "cheaper please")
	if code != 0 || !strings.Contains(out, "Haiku now.") {
		t.Fatalf("resume --model: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	code, log, errs := run(t, nil, work, "--session-db", db, "--export", id)
	if code != 0 {
		t.Fatal(errs)
	}
	for _, want := range []string{
		`"type":"model_changed"`,
		`"data":{"model":"claude-opus-4-1","from":"claude-sonnet-4-6","provider":"anthropic"}`,
		`"data":{"model":"claude-haiku-4-5","from":"claude-opus-4-1","provider":"anthropic"}`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
}
