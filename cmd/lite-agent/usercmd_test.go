package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestUserCommands: the line mode runs a project command and a user
// command as prompts with $ARGUMENTS replaced, lists them in /help with
// where each comes from, and says which project command shadows a user one.
func TestUserCommands(t *testing.T) {
	work := project(t, "", "")
	for path, text := range map[string]string{
		filepath.Join(work, ".lite-agent", "commands", "review.md"):      "---\ndescription: Review a file for bugs\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs and list them.\n",
		filepath.Join(configHome, "lite-agent", "commands", "review.md"): "the user's own review",
		filepath.Join(configHome, "lite-agent", "commands", "haiku.md"):  "Write a haiku about $ARGUMENTS.",
		filepath.Join(configHome, "lite-agent", "commands", "exit.md"):   "never used",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := startModel(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Review main.go for bugs and list them."}}, Text: "No bugs."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Write a haiku about the sea."}}, Text: "Waves."},
	)
	r := liteAgent(t, srv, work, "/help\n/review main.go\n/haiku the sea\n/nosuch\n/exit\n", []string{"XDG_CONFIG_HOME=" + configHome}, "--plain")
	if r.code != 0 || !strings.Contains(r.stdout, "No bugs.") || !strings.Contains(r.stdout, "Waves.") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.errs)
	}
	userDir := filepath.Join(configHome, "lite-agent", "commands")
	for _, want := range []string{
		"note: /review of " + filepath.Join(work, ".lite-agent", "commands", "review.md") + " shadows the user command " + filepath.Join(userDir, "review.md"),
		"note: " + filepath.Join(userDir, "exit.md") + " is not used: /exit is a built-in command (rename the file)",
		"  /haiku               Write a haiku about $ARGUMENTS. (user)",
		"  /review FILE         Review a file for bugs (project)",
		"error: unknown command /nosuch; /help lists them",
	} {
		if !strings.Contains(r.errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errs)
		}
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
