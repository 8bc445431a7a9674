package usercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad(t *testing.T) {
	base := t.TempDir()
	work, conf := filepath.Join(base, "work"), filepath.Join(base, "conf", "lite-agent", "config.toml")
	proj, user := filepath.Join(work, ".lite-agent", "commands"), filepath.Join(base, "conf", "lite-agent", "commands")
	writeFiles(t, proj, map[string]string{
		"review.md":   "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs.\nThen $ARGUMENTS again.\n",
		"fix-ci.md":   "# Fix the CI\r\n\r\nRun the tests and fix what fails.\r\n",
		"help.md":     "not used",
		"bad name.md": "x",
		"empty.md":    "---\ndescription: nothing\n---\n\n",
		"notes.txt":   "not a command file",
		"bin.md":      "a\x00b",
		"open.md":     "---\ndescription: never closed\nText.\n",
		"sub/deep.md": "subdirectories are not read",
	})
	writeFiles(t, user, map[string]string{
		"review.md":  "the user's review",
		"explain.md": "Explain $ARGUMENTS simply.",
	})
	cmds, notes := Load(Dirs(work, conf), []string{"help", "exit"})
	type short struct{ Name, Scope, Description, ArgumentHint, Text string }
	var got []short
	for _, c := range cmds {
		got = append(got, short{c.Name, c.Scope, c.Description, c.ArgumentHint, c.Text})
	}
	want := []short{
		{"explain", ScopeUser, "Explain $ARGUMENTS simply.", "", "Explain $ARGUMENTS simply."},
		{"fix-ci", ScopeProject, "Fix the CI", "", "# Fix the CI\n\nRun the tests and fix what fails."},
		{"review", ScopeProject, "Review a file", "FILE", "Review $ARGUMENTS for bugs.\nThen $ARGUMENTS again."},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("commands (-want +got):\n%s", d)
	}
	wantNotes := []string{
		filepath.Join(proj, "bad name.md") + " is not a command: a command's name has letters, digits, -, _ and dots only",
		filepath.Join(proj, "bin.md") + " is not a command: it is not UTF-8 text",
		filepath.Join(proj, "empty.md") + " is not a command: its prompt is empty",
		filepath.Join(proj, "help.md") + " is not used: /help is a built-in command (rename the file)",
		filepath.Join(proj, "open.md") + ": its front matter (from the first ---) has no closing --- line",
		"/review of " + filepath.Join(proj, "review.md") + " shadows the user command " + filepath.Join(user, "review.md"),
	}
	if d := cmp.Diff(wantNotes, notes); d != "" {
		t.Errorf("notes (-want +got):\n%s", d)
	}
	review, ok := Find(cmds, "review")
	if !ok {
		t.Fatal("no /review")
	}
	if p := review.Prompt("  main.go "); p != "Review main.go for bugs.\nThen main.go again." {
		t.Errorf("prompt with $ARGUMENTS: %q", p)
	}
	fix, _ := Find(cmds, "fix-ci")
	if p := fix.Prompt(""); p != fix.Text {
		t.Errorf("prompt without arguments: %q", p)
	}
	if p := fix.Prompt("only the unit tests"); !strings.HasSuffix(p, "fails.\n\nonly the unit tests") {
		t.Errorf("arguments with no $ARGUMENTS in the text are appended: %q", p)
	}
	if _, ok := Find(cmds, "help"); ok {
		t.Error("a command shadows the built-in /help")
	}
}

func TestLoadBadInput(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"big.md":  strings.Repeat("x", maxFile+1),
		"yaml.md": "---\ndescription: [unclosed\n---\ntext\n",
		"ctl.md":  "---\ndescription: \"a\\x1b[2Jb\"\n---\ntext\n",
	})
	cmds, notes := Load([]Dir{{Path: filepath.Join(dir, "missing"), Scope: ScopeProject}, {Path: dir, Scope: ScopeUser}}, nil)
	if len(cmds) != 1 || cmds[0].Name != "ctl" || cmds[0].Description != "a [2Jb" {
		t.Errorf("commands: %+v", cmds)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "big.md is not a command: it is 262145 bytes, over the 256 KiB") || !strings.Contains(notes[1], "yaml.md: its front matter is not YAML") {
		t.Errorf("notes: %q", notes)
	}
	// A file that is not a directory where the commands should be.
	file := filepath.Join(dir, "big.md")
	if _, notes := Load([]Dir{{Path: file, Scope: ScopeProject}}, nil); len(notes) != 1 || !strings.Contains(notes[0], "cannot read the commands in "+file) {
		t.Errorf("notes for a file as the directory: %q", notes)
	}
}
