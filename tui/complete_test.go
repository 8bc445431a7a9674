package tui

import (
	"os"
	"path/filepath"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

var keyTab = tea.KeyPressMsg{Code: tea.KeyTab}

func writeTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompletePaths: tab after @ completes the workdir's paths as the
// ignore files leave them, a directory at a time; several candidates
// insert what they share and are listed in the hint.
func TestCompletePaths(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	m := newViewModel(t, 80, 24)
	writeTree(t, m.agent.Workdir(), map[string]string{
		".gitignore": "node_modules/\n*.log\n", "cmd/main.go": "", "cmd/util.go": "", "cli/x.go": "",
		"node_modules/pkg/a.js": "", "debug.log": "", ".hidden": "", "README.md": "",
	})
	steps := []struct {
		typed, value, hint string
	}{
		{"explain @c", "explain @c", "@cli/  @cmd/"},
		{"m", "explain @cmd/", ""},
		{"", "explain @cmd/", "@cmd/main.go  @cmd/util.go"},
		{"m", "explain @cmd/main.go ", ""},
		{"and @n", "explain @cmd/main.go and @n", "nothing to complete @n with"},
		{" @d", "explain @cmd/main.go and @n @d", "nothing to complete @d with"},
		{" @.h", "explain @cmd/main.go and @n @d @.hidden ", ""},
		{"@../", "explain @cmd/main.go and @n @d @.hidden @../", "nothing to complete @../ with"},
	}
	for _, s := range steps {
		typeText(m, s.typed)
		m.Update(keyTab)
		if got := m.input.Value(); got != s.value {
			t.Fatalf("after typing %q and tab: input %q, want %q", s.typed, got, s.value)
		}
		if m.hint != s.hint {
			t.Errorf("after typing %q and tab: hint %q, want %q", s.typed, m.hint, s.hint)
		}
	}
}

// TestCompleteCommands: tab at the start of the input completes the
// built-in commands and the user's own.
func TestCompleteCommands(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	m := newViewModel(t, 80, 24)
	writeTree(t, m.agent.Workdir(), map[string]string{".lite-agent/commands/review.md": "Review $ARGUMENTS."})
	for _, tc := range []struct{ typed, value, hint string }{
		{"/he", "/help ", ""},
		{"/c", "/c", "/checkpoints  /compact"},
		{"/rev", "/review ", ""},
		{"/zz", "/zz", "nothing to complete /zz with"},
		{"not /he", "not /he", ""}, // not at the start: the tab goes to the input
	} {
		m.input.Reset()
		typeText(m, tc.typed)
		m.Update(keyTab)
		if got := m.input.Value(); got != tc.value || m.hint != tc.hint {
			t.Errorf("%q and tab: input %q hint %q, want %q and %q", tc.typed, got, m.hint, tc.value, tc.hint)
		}
	}
}

// TestUserCommandRunsInTheTUI: /review ARGS sends the command's prompt
// with $ARGUMENTS replaced, and /help lists the command.
func TestUserCommandRunsInTheTUI(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	p := &fakeProvider{replies: []provider.Response{reply(text("Looks fine."))}}
	a, _ := newTestAgent(t, p, nil)
	writeTree(t, a.Workdir(), map[string]string{".lite-agent/commands/review.md": "---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs."})
	d := drive(t, a, Options{})
	d.typeText("/help")
	d.key(keyEnter)
	d.shows("/review  Review a file (project)")
	d.typeText("/review main.go")
	d.key(keyEnter)
	d.shows("Review main.go for bugs.")
	d.shows("Looks fine.")
}

// TestModelCommandInTheTUI: /model NAME switches the session's model,
// shown in the status line and recorded in the log; /model alone says it.
func TestModelCommandInTheTUI(t *testing.T) {
	p := &fakeProvider{replies: []provider.Response{reply(text("Hi."))}}
	a, store := newTestAgent(t, p, nil)
	d := drive(t, a, Options{Model: "test-model"})
	d.m.Update(tea.WindowSizeMsg{Width: 120, Height: 24}) // wide enough for the model beside the spend
	d.typeText("/model claude-haiku-4-5")
	d.key(keyEnter)
	d.shows("model: claude-haiku-4-5 from the next prompt on")
	d.shows("claude-haiku-4-5 ·")
	d.typeText("hello")
	d.key(keyEnter)
	d.shows("Hi.")
	d.typeText("/model")
	d.key(keyEnter)
	d.shows("model: claude-haiku-4-5 (switch with /model NAME)")
	found := false
	for e, err := range store.Read(t.Context(), a.SessionID(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || e.Type == session.TypeModelChanged
	}
	if !found {
		t.Error("no model_changed event in the log")
	}
}
