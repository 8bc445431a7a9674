package tui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// tmux drives a terminal with a private server (-L), so the test never
// touches the user's tmux sessions.
type tmux struct {
	t      *testing.T
	socket string
	target string
}

func (x *tmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", x.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (x *tmux) must(args ...string) {
	x.t.Helper()
	if out, err := x.run(args...); err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// typeText types text literally.
func (x *tmux) typeText(s string) { x.t.Helper(); x.must("send-keys", "-t", x.target, "-l", s) }

// keys presses named keys (Enter, Down, Escape, C-c, y …).
func (x *tmux) keys(keys ...string) {
	x.t.Helper()
	x.must(append([]string{"send-keys", "-t", x.target}, keys...)...)
}

func (x *tmux) capture() string {
	out, err := x.run("capture-pane", "-p", "-t", x.target)
	if err != nil {
		return "(capture-pane failed: " + err.Error() + ")\n" + out
	}
	return out
}

// waitFor polls the screen until it shows every one of want, and returns it.
func (x *tmux) waitFor(want ...string) string {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := x.capture()
		missing := ""
		for _, w := range want {
			if !strings.Contains(s, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the screen did not show %q within 20s; it shows:\n%s", missing, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func toolCall(id, name string, input any) fakemodel.ToolCall {
	b, _ := json.Marshal(input)
	return fakemodel.ToolCall{ID: id, Name: name, Input: b}
}

// The real binary in a real terminal (tmux), against the fake model
// server: a streamed answer, an approval, /sessions and /checkpoints.
func TestEndToEndInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and drives it in tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the end-to-end test of the full-screen client needs it (CI installs it; apt-get install tmux)")
	}
	dir := t.TempDir()
	// lite-agent hands the interactive terminal run to lite-agent-tui,
	// installed beside it: build both, run the first.
	bin := filepath.Join(dir, "lite-agent")
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/lite-agent", "./cmd/lite-agent-tui")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build lite-agent and lite-agent-tui: %v\n%s", err, out)
	}

	srv, err := fakemodel.Start(&fakemodel.Script{Replies: []fakemodel.Reply{
		{Name: "session A: write notes.txt", Expect: &fakemodel.Expect{LastUserContains: []string{"first session"}},
			ToolCalls: []fakemodel.ToolCall{toolCall("toolu_a1", "write", map[string]string{"path": "notes.txt", "content": "first\n"})}},
		{Name: "session A: done", Expect: &fakemodel.Expect{ToolResultFor: []string{"toolu_a1"}}, Text: "Created notes.txt for the first session."},
		{Name: "session B: hello", Expect: &fakemodel.Expect{LastUserContains: []string{"say hello"}},
			Text: "Hello from the **fake** model!\n\n- streamed\n- in small pieces", DeltaDelayMS: 15},
		{Name: "session B: write", Expect: &fakemodel.Expect{LastUserContains: []string{"write a.txt"}}, Text: "Writing it.",
			ToolCalls: []fakemodel.ToolCall{toolCall("toolu_b1", "write", map[string]string{"path": "a.txt", "content": "from the TUI\n"})}},
		{Name: "session B: written", Expect: &fakemodel.Expect{ToolResultFor: []string{"toolu_b1"}}, Text: "Wrote a.txt for you."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "sessions.db")
	args := []string{"--session-db", db, "--base-url", srv.URL(), "--provider", "anthropic"}

	// Session A, in one-shot mode.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	oneShot := exec.CommandContext(ctx, bin, append(args, "--allow", "edit", "first session: create notes.txt")...)
	oneShot.Dir = work
	oneShot.Env = append(os.Environ(), "ANTHROPIC_API_KEY=test")
	if out, err := oneShot.CombinedOutput(); err != nil {
		t.Fatalf("one-shot run: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	// Session B, in the full-screen client.
	x := &tmux{t: t, socket: fmt.Sprintf("lite-agent-e2e-%d", os.Getpid()), target: "e2e"}
	t.Cleanup(func() { x.run("kill-server") })
	shell := "cd " + quote(work) + " && env ANTHROPIC_API_KEY=test " + quote(bin)
	for _, a := range args {
		shell += " " + quote(a)
	}
	shell += "; echo EXITED $?; sleep 600"
	x.must("new-session", "-d", "-x", "100", "-y", "30", "-s", "e2e", shell)

	x.waitFor("type a prompt, /help for commands", "new session · rev 0")
	x.typeText("say hello")
	x.keys("Enter")
	s := x.waitFor("› say hello", "Hello from the fake model!", "in small pieces")
	if strings.Contains(s, "**fake**") {
		t.Errorf("the answer is not rendered as Markdown:\n%s", s)
	}

	x.typeText("write a.txt")
	x.keys("Enter")
	x.waitFor("Allow write a.txt (1 line)?", "+ from the TUI", "y allow once")
	if _, err := os.Stat(filepath.Join(work, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a.txt exists before the approval: %v", err)
	}
	x.keys("y")
	x.waitFor("✓ write a.txt", "Wrote a.txt for you.")
	if b, err := os.ReadFile(filepath.Join(work, "a.txt")); err != nil || string(b) != "from the TUI\n" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	screenB := x.capture()

	x.typeText("/sessions")
	x.keys("Enter")
	x.waitFor("sessions in ", "›   say hello", "first session: create notes.txt", "enter load")
	x.keys("Down", "Enter")
	s = x.waitFor("loaded session", "first session: create notes.txt", "Created notes.txt for the first session.")
	if strings.Contains(s, "Wrote a.txt for you.") {
		t.Fatalf("the other session's transcript still shows this one:\n%s", s)
	}

	x.typeText("/checkpoints")
	x.keys("Enter")
	x.waitFor("checkpoints: rewind to before a prompt", "first session: create notes.txt")
	x.keys("Enter")
	x.waitFor("remove notes.txt", "y rewind")
	x.keys("y")
	s = x.waitFor("rewound to revision 1", "To undo: lite-agent --session-db")
	if _, err := os.Stat(filepath.Join(work, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("notes.txt after the rewind: %v\n%s", err, s)
	}
	screenRewound := s

	x.keys("C-c")
	x.waitFor("press ctrl+c again to quit")
	x.keys("C-c")
	x.waitFor("EXITED 0")
	if err := srv.Err(); err != nil {
		t.Errorf("fake model: %v", err)
	}
	if dump := os.Getenv("LITE_AGENT_E2E_SCREENS"); dump != "" {
		os.WriteFile(dump, []byte(screenB+"\n----\n"+screenRewound), 0o644)
	}
}

// quote quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
