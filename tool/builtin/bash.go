package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/tool"
)

//go:embed bash.md
var bashDescription string

const bashSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run with bash -c in the workdir."},
    "timeout_seconds": {"type": "number", "minimum": 0, "maximum": 600, "description": "How long it may run. Default 120, at most 600."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

// Defaults of Bash.
const (
	bashDefaultTimeout = 2 * time.Minute
	bashMaxTimeout     = 10 * time.Minute
	bashGrace          = 2 * time.Second
	bashMaxOutput      = 32 << 10
)

// Bash runs a shell command in the workdir. The zero value uses the
// defaults; All returns it.
//
// The command runs in its own session (setsid), which makes it the leader
// of its own process group and detaches it from the terminal, so nothing it
// runs can read the user's keyboard. On timeout or cancellation the whole
// group gets SIGTERM, then SIGKILL after Grace. Processes still running in
// the group when the command ends are stopped the same way; a process that
// leaves the group (setsid, a double fork into a new session) escapes this.
type Bash struct {
	// DefaultTimeout applies when the call sets none; 0 means 2 minutes.
	DefaultTimeout time.Duration
	// MaxTimeout is the longest timeout a call may ask for; 0 means 10
	// minutes.
	MaxTimeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL; 0 means 2 seconds.
	Grace time.Duration
	// MaxOutput is how many bytes of output are kept, half from the start
	// and half from the end; 0 means 32 KiB.
	MaxOutput int
	// Env is the command's environment ("KEY=value" entries). Nil means the
	// agent's own environment without the model credentials it holds
	// (HiddenEnv), so a command such as `env` cannot copy them into the
	// transcript and the session log.
	Env []string
}

// HiddenEnv names the variables Bash leaves out of the default environment.
var HiddenEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}

// environ returns the environment for a command.
func (b Bash) environ() []string {
	if b.Env != nil {
		return b.Env
	}
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(HiddenEnv, name)
	})
}

type bashInput struct {
	Command        string    `json:"command"`
	TimeoutSeconds flexFloat `json:"timeout_seconds"`
}

// Spec implements tool.Tool.
func (b Bash) Spec() tool.Spec {
	return tool.Spec{Name: "bash", Description: bashDescription, InputSchema: json.RawMessage(bashSchema), Kind: tool.KindExec}
}

func (b Bash) settings() (def, maxT, grace time.Duration, maxOut int) {
	def, maxT, grace, maxOut = b.DefaultTimeout, b.MaxTimeout, b.Grace, b.MaxOutput
	if def <= 0 {
		def = bashDefaultTimeout
	}
	if maxT <= 0 {
		maxT = bashMaxTimeout
	}
	if grace <= 0 {
		grace = bashGrace
	}
	if maxOut <= 0 {
		maxOut = bashMaxOutput
	}
	return def, maxT, grace, maxOut
}

// Run implements tool.Tool. A non-zero exit code is reported in the output,
// not as an error: the model reads it like any other result. Timeouts,
// cancellation and failures to start are errors. Every result of a command
// that started is Untracked.
func (b Bash) Run(ctx context.Context, call tool.Call) tool.Result {
	var in bashInput
	if err := decode(call.Input, &in); err != nil {
		return tool.Errorf("%s", err)
	}
	if strings.TrimSpace(in.Command) == "" {
		return tool.Errorf("command is required: the command line to run")
	}
	def, maxT, grace, maxOut := b.settings()
	timeout := def
	switch t := float64(in.TimeoutSeconds); {
	case t < 0:
		return tool.Errorf("timeout_seconds must be positive (or left out for the default of %s)", def)
	case t > maxT.Seconds():
		return tool.Errorf("timeout_seconds may be at most %g; split the work or run it with a shorter timeout", maxT.Seconds())
	case t > 0:
		timeout = time.Duration(t * float64(time.Second))
	}
	if call.Root == nil {
		return tool.Errorf("no workdir is set for this call")
	}
	if ctx.Err() != nil {
		return tool.Errorf("cancelled before the command started")
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Errorf("cannot start bash: %v", err)
	}
	cmd := exec.Command("bash", "-c", in.Command)
	cmd.Dir = call.Root.Dir()
	cmd.Env = b.environ()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return tool.Errorf("cannot start bash: %v", err)
	}
	pgid := cmd.Process.Pid

	out := newHeadTail(maxOut)
	copied := make(chan struct{})
	go func() {
		io.Copy(out, pr)
		close(copied)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	select {
	case <-waited:
	case <-timer.C:
		stopped = fmt.Sprintf("timed out after %s", timeout)
	case <-ctx.Done():
		stopped = "cancelled"
	}
	leftovers := stopGroup(pgid, waited, stopped != "", grace)
	// Everything in the group is gone, so the pipe is closed unless a
	// process that left the group still holds it: stop reading then.
	detached := false
	select {
	case <-copied:
	case <-time.After(grace):
		detached = true
	}
	pr.Close()
	<-copied

	var res strings.Builder
	text := out.String()
	if text == "" {
		text = "(no output)"
	}
	res.WriteString(text)
	if !strings.HasSuffix(text, "\n") {
		res.WriteString("\n")
	}
	switch {
	case stopped != "":
		fmt.Fprintf(&res, "[%s: the command and the processes it started were stopped]", stopped)
	default:
		res.WriteString(exitNote(cmd.ProcessState))
	}
	if leftovers && stopped == "" {
		res.WriteString("\n[background processes the command left running were stopped]")
	}
	if detached {
		res.WriteString("\n[a process that detached itself still holds the output open; stopped reading]")
	}
	return tool.Result{Output: res.String(), IsError: stopped != "", Untracked: true}
}

// exitNote describes how the command ended.
func exitNote(ps *os.ProcessState) string {
	if ps == nil {
		return "[exit status unknown]"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("[killed by signal %s]", ws.Signal())
	}
	return fmt.Sprintf("[exit code %d]", ps.ExitCode())
}

// stopGroup ends the command's process group. With now set (timeout or
// cancellation) the whole group gets SIGTERM at once; otherwise the leader
// has exited and only processes left behind, if any, get it. Whatever still
// lives after grace gets SIGKILL. It returns once the leader has been waited
// for and the group is gone (or, for zombies nobody reaps, after a bound),
// and reports whether processes other than the leader were left to stop.
func stopGroup(pgid int, waited <-chan error, now bool, grace time.Duration) (leftovers bool) {
	deadline := time.Now().Add(grace)
	if now {
		syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-waited:
		case <-t.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-waited
		}
		t.Stop()
	}
	if !groupAlive(pgid) {
		return false
	}
	if !now {
		syscall.Kill(-pgid, syscall.SIGTERM)
	}
	if !waitGroupGone(pgid, time.Until(deadline)) {
		syscall.Kill(-pgid, syscall.SIGKILL)
		waitGroupGone(pgid, grace)
	}
	return true
}

// waitGroupGone polls until the group has no live process or d has passed.
func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}

// errNoProcess is what kill(2) says about a group with no process left.
var errNoProcess = syscall.ESRCH

// headTail keeps the first and the last max/2 bytes written to it.
type headTail struct {
	half  int
	head  []byte
	tail  []byte // the last bytes after head, up to 2*half before compaction
	total int64
}

func newHeadTail(max int) *headTail {
	return &headTail{half: max / 2}
}

// Write implements io.Writer; it never fails.
func (h *headTail) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	n := len(p)
	if room := h.half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= h.half {
		h.tail = append(h.tail[:0], p[len(p)-h.half:]...)
		return n, nil
	}
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*h.half {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-h.half:]...)
	}
	return n, nil
}

// String returns the kept output as valid UTF-8, with a note where bytes
// were cut from the middle.
func (h *headTail) String() string {
	tail := h.tail
	if len(tail) > h.half {
		tail = tail[len(tail)-h.half:]
	}
	omitted := h.total - int64(len(h.head)) - int64(len(tail))
	if omitted == 0 {
		return strings.ToValidUTF8(string(h.head)+string(tail), "\uFFFD")
	}
	// Cut neither end in the middle of a character.
	head := h.head
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if utf8.RuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				omitted += int64(len(head) - i)
				head = head[:i]
			}
			break
		}
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
		omitted++
	}
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n[… %d bytes of output cut here …]\n", omitted) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}
