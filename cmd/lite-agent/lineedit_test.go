package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// terminal is the test binary running as lite-agent in a tmux pane of a
// private tmux server (-L), so the test never touches the user's sessions.
type terminal struct {
	t      *testing.T
	socket string // each run has its own server
	runs   int
}

func (x *terminal) tmux(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", x.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs lite-agent with env and args in a new window; the pane stays
// after it exits, showing its exit status.
func (x *terminal) start(env []string, args ...string) {
	x.t.Helper()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var cmd []string
	for _, e := range env {
		cmd = append(cmd, q(e))
	}
	cmd = append(cmd, q(os.Args[0]))
	for _, a := range args {
		cmd = append(cmd, q(a))
	}
	line := "env " + strings.Join(cmd, " ") + "; echo EXITED $?; sleep 600"
	if x.socket != "" {
		exec.Command("tmux", "-L", x.socket, "kill-server").Run() // the run before
	}
	x.runs++
	x.socket = fmt.Sprintf("lite-agent-test-%d-%d", os.Getpid(), x.runs)
	x.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "sh", "-c", line)
}

func (x *terminal) keys(keys ...string) {
	x.t.Helper()
	x.tmux(append([]string{"send-keys", "-t", "t"}, keys...)...)
}
func (x *terminal) typeText(s string) { x.t.Helper(); x.tmux("send-keys", "-t", "t", "-l", s) }

// waitFor polls the screen until it shows want, and returns it.
func (x *terminal) waitFor(want string) string {
	x.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := x.tmux("capture-pane", "-p", "-t", "t")
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the screen did not show %q within 20s; it shows:\n%s", want, s)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// TestLineEditingAndHistory: on a terminal the line mode edits the line
// (Ctrl-A, Ctrl-E, arrows, backspace) and keeps the prompts per workspace: in
// a second run, Up recalls the first run's prompts (not the answer to
// its approval), and Enter sends one again.
func TestLineEditingAndHistory(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the line editing test needs a terminal (CI installs it; apt-get install tmux)")
	}
	x := &terminal{t: t}
	t.Cleanup(func() { exec.Command("tmux", "-L", x.socket, "kill-server").Run() })
	work, state := t.TempDir(), t.TempDir()
	srv := startModel(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"hello wide world!"}}, Text: "First answer."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"make a.txt"}}, ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]string{"path": "a.txt", "content": "a\n"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"w1"}}, Text: "Wrote a.txt."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"hello wide world!"}}, Text: "Recalled answer."},
	)
	env := []string{"LITE_AGENT_TEST_MAIN=1", "ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + srv.URL(),
		"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=", "TERM=xterm"}

	x.start(env, "--plain", "--workdir", work)
	x.waitFor("/exit to quit\n>")
	// "world" → Ctrl-A (start of line) → "hello " → Ctrl-E (end) → "!" →
	// Left Left → "X" → BSpace → Left×4 (after "hello ") → "wide ":
	// "hello wide world!".
	x.typeText("world")
	x.keys("C-a")
	x.typeText("hello ")
	x.keys("C-e")
	x.typeText("!")
	x.keys("Left", "Left")
	x.typeText("X")
	x.keys("BSpace")
	x.keys("Left", "Left", "Left", "Left")
	x.typeText("wide ")
	x.keys("Enter")
	x.waitFor("First answer.")
	// An approval is answered on the editor's line; answers are not
	// history.
	x.typeText("make a.txt")
	x.keys("Enter")
	x.waitFor("[n] no (n REASON tells the model why):")
	time.Sleep(700 * time.Millisecond) // lines sooner were typed before the question (approvalSettle)
	x.typeText("y")
	x.keys("Enter")
	x.waitFor("Wrote a.txt.")
	x.typeText("/exit")
	x.keys("Enter")
	x.waitFor("EXITED 0")
	files, err := filepath.Glob(filepath.Join(state, "lite-agent", "history", "*"))
	if err != nil || len(files) != 1 {
		t.Fatalf("history files %v, %v; want one for the workspace", files, err)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, %v; want 0600", fi.Mode(), err)
	}

	x.start(env, "--plain", "--workdir", work)
	x.waitFor("/exit to quit\n>")
	// Ctrl-C on a typed line drops the line (and does not quit).
	x.typeText("junk")
	x.waitFor("> junk")
	x.keys("C-c")
	x.keys("Enter")
	x.keys("Up") // /exit
	x.waitFor("> /exit")
	x.keys("Up")
	x.waitFor("> make a.txt")
	x.keys("Up") // the first prompt of the first run
	x.waitFor("> hello wide world!")
	x.keys("Enter")
	x.waitFor("Recalled answer.")
	x.keys("C-d")
	x.waitFor("EXITED 0")
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
