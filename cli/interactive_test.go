package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// syncBuffer is a bytes.Buffer that the command writes while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lineSession runs the line mode in the background with a stdin the test
// types into.
type lineSession struct {
	t        testing.TB
	stdin    *io.PipeWriter
	out, err *syncBuffer
	code     chan int
}

func startLineMode(t testing.TB, workdir string, args ...string) *lineSession {
	t.Helper()
	r, w := io.Pipe()
	s := &lineSession{t: t, stdin: w, out: &syncBuffer{}, err: &syncBuffer{}, code: make(chan int, 1)}
	args = append([]string{"--workdir", workdir}, args...)
	go func() {
		s.code <- Main(context.Background(), args, IO{Stdin: r, Stdout: s.out, Stderr: s.err})
	}()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-s.code:
		case <-time.After(20 * time.Second):
			t.Error("the line mode did not end after its input did")
		}
	})
	return s
}

// typeLine types a line into the line mode.
func (s *lineSession) typeLine(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor waits until what has been written to w contains want.
func (s *lineSession) waitFor(name string, w *syncBuffer, want string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(w.String(), want) {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s does not show %q within 20s:\nstdout %q\nstderr %q", name, want, s.out.String(), s.err.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// end closes stdin and returns the exit status.
func (s *lineSession) end() int {
	s.t.Helper()
	s.stdin.Close()
	select {
	case code := <-s.code:
		s.code <- code // for the cleanup
		return code
	case <-time.After(20 * time.Second):
		s.t.Fatal("the line mode did not end after its input did")
		return -1
	}
}

// A background job ends while the line mode waits for a prompt: the
// completion turn the agent runs is printed (its answer on stdout, the
// job's end on stderr) and the prompt comes back, without reading stdin.
func TestLineModePrintsBackgroundTurns(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{Name: "start the job", Expect: &fakemodel.Expect{LastUserContains: []string{"build it in the background"}},
			ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "sleep 0.2; echo done", "background": true})}},
		fakemodel.Reply{Name: "started", Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}}, Text: "The build runs in the background."},
		fakemodel.Reply{Name: "completion turn", Expect: &fakemodel.Expect{LastUserContains: []string{"Background job j1 finished", "done", "build it in the background"}},
			Text: "The build finished and printed done."},
		fakemodel.Reply{Name: "next prompt", Expect: &fakemodel.Expect{LastUserContains: []string{"thanks"}}, Text: "You are welcome."},
	)
	s := startLineMode(t, t.TempDir())
	s.waitFor("stderr", s.err, "> ")
	s.typeLine("build it in the background")
	s.waitFor("stderr", s.err, "allow bash")
	s.typeLine("y")
	s.waitFor("stdout", s.out, "The build runs in the background.")
	// Nothing is typed now: the job ends, and its completion turn is
	// printed while the line mode waits for a prompt.
	s.waitFor("stdout", s.out, "The build finished and printed done.")
	s.waitFor("stderr", s.err, "▸ background job j1 ended: exit code 0")
	// The prompt is shown again after the background turn.
	deadline := time.Now().Add(20 * time.Second)
	for {
		errs := s.err.String()
		i := strings.LastIndex(errs, "the agent goes on with the job's result")
		if i >= 0 && strings.Contains(errs[i:], "> ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no prompt after the background turn:\n%s", errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The prompt reader still works, and the next turn is printed once.
	s.typeLine("thanks")
	s.waitFor("stdout", s.out, "You are welcome.")
	if code := s.end(); code != 0 {
		t.Fatalf("exit %d\nstderr %q", code, s.err.String())
	}
	out := s.out.String()
	want := []string{"The build runs in the background.\n", "The build finished and printed done.\n", "You are welcome.\n"}
	if got := strings.Count(out, "\n"); got != len(want) {
		t.Errorf("stdout has %d lines, want %d:\n%s", got, len(want), out)
	}
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("stdout lacks %q after what came before, or repeats something:\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	if strings.Count(s.err.String(), "allow bash") != 1 {
		t.Errorf("the approval was asked %d times:\n%s", strings.Count(s.err.String(), "allow bash"), s.err.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// A completion turn's tool call that needs approval is denied, not asked:
// the prompt reader keeps stdin.
func TestLineModeDeniesBackgroundApprovals(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"start it"}},
			ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "sleep 0.1", "background": true})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}}, Text: "Started."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Background job j1 finished"}},
			ToolCalls: []fakemodel.ToolCall{toolCall("b2", "bash", map[string]any{"command": "echo deploy"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b2"}}, Text: "I could not deploy: denied."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"ok"}}, Text: "Fine."},
	)
	s := startLineMode(t, t.TempDir())
	s.typeLine("start it")
	s.waitFor("stderr", s.err, "allow bash")
	s.typeLine("y")
	s.waitFor("stdout", s.out, "I could not deploy: denied.")
	s.waitFor("stderr", s.err, "denied bash from a background completion turn")
	s.typeLine("ok")
	s.waitFor("stdout", s.out, "Fine.")
	if code := s.end(); code != 0 {
		t.Fatalf("exit %d\nstderr %q", code, s.err.String())
	}
	if n := strings.Count(s.err.String(), "allow bash"); n != 1 {
		t.Errorf("asked %d times, want once (the foreground call):\n%s", n, s.err.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// With --output stream-json the line mode prints the completion turn's
// events too, after the result object that ends the prompt's turn.
func TestLineModeStreamsBackgroundTurns(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo done", "background": true})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}}, Text: "Started."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Background job j1 finished"}}, Text: "It printed done."},
	)
	s := startLineMode(t, t.TempDir(), "--output", "stream-json")
	s.typeLine("go")
	s.waitFor("stderr", s.err, "allow bash")
	s.typeLine("y")
	s.waitFor("stdout", s.out, `"type":"turn_completed"`)
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(s.out.String(), `"type":"turn_completed"`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the completion turn is not streamed:\n%s", s.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := s.end(); code != 0 {
		t.Fatalf("exit %d\nstderr %q", code, s.err.String())
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(s.out.String()), "\n") {
		var v struct {
			Type  string
			Event struct {
				Type string
				Data struct{ Background bool }
			}
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch {
		case v.Type == "result":
			kinds = append(kinds, "result")
		case v.Event.Type == "user_prompt" && v.Event.Data.Background:
			kinds = append(kinds, "background prompt")
		case v.Event.Type == "turn_completed":
			kinds = append(kinds, "turn completed")
		}
	}
	want := []string{"turn completed", "result", "background prompt", "turn completed"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Fatalf("stream %q, want %q:\n%s", kinds, want, s.out.String())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestLineModeLineTooLong: a line over the line mode's limit is not
// dropped in silence with everything after it: the prompts before it run,
// and the run ends with an error that says what happened and what to do.
func TestLineModeLineTooLong(t *testing.T) {
	isolate(t)
	srv := model(t, fakemodel.Reply{Text: "first answer"})
	input := "first prompt\n" + strings.Repeat("x", maxLine+1) + "\nnever read\n"
	code, out, errs := runCLI(t, t.TempDir(), input, "--plain")
	if code != ExitError || !strings.Contains(errs, "longer than 4 MiB") || !strings.Contains(errs, "@FILE") {
		t.Fatalf("exit %d, stderr %q; want %d and a message about the long line", code, errs, ExitError)
	}
	if !strings.Contains(out, "first answer") || len(srv.Requests()) != 1 {
		t.Fatalf("the prompt before the long line did not run: %q, %d requests", out, len(srv.Requests()))
	}
}
