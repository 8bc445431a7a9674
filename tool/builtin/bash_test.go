package builtin

import (
	"bytes"
	"fmt"
	"github.com/lite-agent/lite-agent/tool/shell"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBash(t *testing.T) {
	w := newWorkdir(t)
	var seq strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintln(&seq, i)
	}
	tests := []struct {
		name, input string
		wantErr     bool
		exact       string
		want        []string
	}{
		{name: "echo", input: `{"command": "echo hello"}`, exact: "hello\n[exit code 0]"},
		{name: "workdir", input: `{"command": "pwd"}`, exact: w.dir + "\n[exit code 0]"},
		{name: "exit code", input: `{"command": "echo out; echo err >&2; exit 3"}`, exact: "out\nerr\n[exit code 3]"},
		{name: "no output", input: `{"command": "true"}`, exact: "(no output)\n[exit code 0]"},
		{name: "stdin is empty", input: `{"command": "cat"}`, exact: "(no output)\n[exit code 0]"},
		{name: "no terminal", input: `{"command": "(: </dev/tty) 2>/dev/null && echo tty || echo no-tty"}`, exact: "no-tty\n[exit code 0]"},
		{name: "signal", input: `{"command": "kill -SEGV $$"}`, want: []string{"[killed by signal segmentation fault]"}},
		{name: "output cap", input: `{"command": "seq 1 20000"}`, want: []string{
			"1\n2\n3\n", fmt.Sprintf("\n[… %d bytes of output cut here …]\n", seq.Len()-bashMaxOutput), "19999\n20000\n[exit code 0]"}},
		{name: "no command", input: `{"command": "  "}`, wantErr: true, want: []string{"command is required"}},
		{name: "negative timeout", input: `{"command": "true", "timeout_seconds": -1}`, wantErr: true, want: []string{"must be positive"}},
		{name: "timeout too long", input: `{"command": "true", "timeout_seconds": 601}`, wantErr: true, want: []string{"at most 600"}},
	}
	for _, tt := range tests {
		got := w.call(t, Bash{}, tt.input)
		check(t, tt.name, got, tt.wantErr, tt.want)
		if tt.exact != "" && got.Output != tt.exact {
			t.Errorf("%s: output\n%s\nwant\n%s", tt.name, clipOutput(got.Output), tt.exact)
		}
		if !tt.wantErr && !got.Untracked {
			t.Errorf("%s: result not marked Untracked", tt.name)
		}
	}
}

// processGone reports whether pid has exited.
func processGone(pid int) bool { return shell.Exited(pid) }

// waitPID waits for the command under test to write a process id to file.
func waitPID(t testing.TB, file string) int {
	t.Helper()
	pid, err := pollPID(file)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// pollPID polls file for a process id and a newline, for up to 20 s.
func pollPID(file string) (int, error) {
	for range 2000 {
		if b, err := os.ReadFile(file); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, fmt.Errorf("the command did not write %s", file)
}

// TestBashStops checks that nothing the command started outlives the call,
// however it ends.
func TestBashStops(t *testing.T) {
	tests := []struct {
		name    string
		command string
		timeout string
		cancel  bool
		wantErr bool
		want    []string
	}{
		{name: "timeout", command: "echo start; sleep 60 & echo $! > pid; wait", timeout: "1", wantErr: true,
			want: []string{"start\n", "[timed out after 1s: the command and the processes it started were stopped]"}},
		{name: "cancel", command: "sleep 60 & echo $! > pid; wait", cancel: true, wantErr: true,
			want: []string{"[cancelled: the command and the processes it started were stopped]"}},
		{name: "SIGTERM ignored", command: "trap '' TERM; sleep 60 & echo $! > pid; wait", timeout: "1", wantErr: true,
			want: []string{"timed out"}},
		{name: "background leftovers", command: "sleep 60 & echo $! > pid; echo done",
			want: []string{"done\n[exit code 0]\n[background processes the command left running were stopped]"}},
		{name: "leftover ignoring SIGTERM", command: "(trap '' TERM; exec sleep 60) & echo $! > pid; echo done",
			want: []string{"done\n[exit code 0]", "[background processes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkdir(t)
			ctx, cancel := contextWithCancel(t)
			defer cancel()
			input := fmt.Sprintf(`{"command": %q}`, tt.command)
			if tt.timeout != "" {
				input = fmt.Sprintf(`{"command": %q, "timeout_seconds": %s}`, tt.command, tt.timeout)
			}
			if tt.cancel {
				go func() {
					pollPID(filepath.Join(w.dir, "pid"))
					cancel()
				}()
			}
			got := Bash{Grace: 200 * time.Millisecond}.Run(ctx, callFor(w, input))
			check(t, tt.name, got, tt.wantErr, tt.want)
			if !got.Untracked {
				t.Error("result not marked Untracked")
			}
			pid := waitPID(t, filepath.Join(w.dir, "pid"))
			if !processGone(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("process %d the command started is still running", pid)
			}
		})
	}
}

func TestBashDetachedProcess(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	w := newWorkdir(t)
	// A process in a session of its own escapes the group; the call must
	// still return, and stop reading the output it holds open.
	got := Bash{Grace: 100 * time.Millisecond}.Run(t.Context(), callFor(w, `{"command": "setsid sh -c 'echo $$ > pid; exec sleep 60' & while [ ! -s pid ]; do sleep 0.01; done; echo done"}`))
	pid := waitPID(t, filepath.Join(w.dir, "pid"))
	syscall.Kill(pid, syscall.SIGKILL)
	check(t, "detached", got, false, []string{"done\n[exit code 0]", "detached itself still holds the output open"})
}

func TestBashEnv(t *testing.T) {
	w := newWorkdir(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test-secret")
	t.Setenv("LITE_AGENT_TEST_VAR", "visible")
	const cmd = `{"command": "echo ${ANTHROPIC_API_KEY:-hidden} $LITE_AGENT_TEST_VAR"}`
	check(t, "default env", w.call(t, Bash{}, cmd), false, []string{"hidden visible\n"})
	check(t, "explicit env", w.call(t, Bash{Env: []string{"ANTHROPIC_API_KEY=given", "PATH=" + os.Getenv("PATH")}}, cmd), false, []string{"given\n[exit code 0]"})
}

func TestHeadTail(t *testing.T) {
	data := []byte(strings.Repeat("0123456789", 30)) // 300 bytes
	tests := []struct {
		max    int
		chunks []int
		want   string
	}{
		{max: 1000, chunks: []int{300}, want: string(data)},
		{max: 300, chunks: []int{1, 299}, want: string(data)},
		{max: 100, chunks: []int{300}, want: string(data[:50]) + "\n[… 200 bytes of output cut here …]\n" + string(data[250:])},
		{max: 100, chunks: []int{7, 13, 1, 100, 79, 100}, want: string(data[:50]) + "\n[… 200 bytes of output cut here …]\n" + string(data[250:])},
		{max: 100, chunks: []int{60, 240}, want: string(data[:50]) + "\n[… 200 bytes of output cut here …]\n" + string(data[250:])},
	}
	for _, tt := range tests {
		h := newHeadTail(tt.max)
		rest := data
		for _, c := range tt.chunks {
			if n, err := h.Write(rest[:c]); n != c || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			rest = rest[c:]
		}
		if got := h.String(); got != tt.want {
			t.Errorf("max %d chunks %v:\n%s\nwant\n%s", tt.max, tt.chunks, got, tt.want)
		}
	}
	// Cuts never split a character.
	h := newHeadTail(10)
	h.Write([]byte(strings.Repeat("é", 20)))
	if got := h.String(); !strings.HasPrefix(got, "éé\n[") || !strings.HasSuffix(got, "…]\néé") || strings.Contains(got, "\uFFFD") {
		t.Errorf("multibyte cut = %q", got)
	}
}
