package builtin

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/shell"
)

//go:embed bash.md
var bashDescription string

const bashSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run with bash -c in the workdir."},
    "timeout_seconds": {"type": "number", "minimum": 0, "maximum": 600, "description": "How long it may run. Default 120, at most 600; a background job runs until it ends unless this is given."},
    "background": {"type": "boolean", "description": "Start the command as a background job and return its job id at once, for long builds, test runs or servers. Read its output with job_output, stop it with job_stop; you are told when it finishes."}
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
	// Jobs starts the commands run with background: true; nil refuses
	// them (the model is told to run the command in the foreground). The
	// agent gives each session's bash its own (see WithJobs).
	Jobs JobStarter
	// Sandbox confines every command, foreground and background; nil
	// runs them unconfined. package sandbox's *Policy is one.
	Sandbox Launcher
}

// Launcher starts commands confined (see shell.Launcher).
type Launcher = shell.Launcher

// JobStarter starts the commands bash runs with background: true as
// background jobs. package jobs's *Starter is one.
type JobStarter interface {
	// StartJob starts c for call as a job that is stopped after timeout
	// (0: no limit), with grace between SIGTERM and SIGKILL, and returns
	// the id the model names it by and its process group id. ctx is the
	// call's: it does not stop the job once started. An error means no job
	// runs; the model is told it.
	StartJob(ctx context.Context, call tool.Call, c shell.Command, timeout, grace time.Duration) (id string, pid int, err error)
}

// JobTool is implemented by tools that can run background jobs once given
// a JobStarter, such as Bash. The agent gives each session's copy its own.
type JobTool interface {
	tool.Tool
	// WithJobs returns the tool with js starting its jobs, or ok false
	// when it has a JobStarter already (it keeps that one).
	WithJobs(js JobStarter) (t tool.Tool, ok bool)
}

// WithJobs implements JobTool.
func (b Bash) WithJobs(js JobStarter) (tool.Tool, bool) {
	if b.Jobs != nil {
		return b, false
	}
	b.Jobs = js
	return b, true
}

// SandboxMode names the sandbox commands run in: the Launcher's Name, or
// "off" without one.
func (b Bash) SandboxMode() string {
	if b.Sandbox == nil {
		return "off"
	}
	return b.Sandbox.Name()
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
	Background     flexBool  `json:"background"`
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
//
// With background: true the command starts as a Job handed to b.Jobs and
// Run returns its id at once; the job has no timeout unless the call gives
// one, and ctx does not stop it once it started.
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

	if in.Background {
		return b.background(ctx, call, in, timeout, grace)
	}
	out := newHeadTail(maxOut)
	p, err := shell.Start(b.command(call, in.Command), out)
	if err != nil {
		return tool.Errorf("cannot start bash: %v", err)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	select {
	case <-p.Exited():
	case <-timer.C:
		stopped = fmt.Sprintf("timed out after %s", timeout)
	case <-ctx.Done():
		stopped = "cancelled"
	}
	leftovers, detached := p.End(stopped != "", grace)

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
		res.WriteString(shell.ExitNote(p.State()))
	}
	if leftovers && stopped == "" {
		res.WriteString("\n[background processes the command left running were stopped]")
	}
	if detached {
		res.WriteString("\n[a process that detached itself still holds the output open; stopped reading]")
	}
	return tool.Result{Output: res.String(), IsError: stopped != "", Untracked: true}
}

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

// command is the shell command a call runs.
func (b Bash) command(call tool.Call, line string) shell.Command {
	return shell.Command{Line: line, Dir: call.Root.Dir(), Env: b.environ(), Sandbox: b.Sandbox}
}

// background starts the command as a job through b.Jobs.
func (b Bash) background(ctx context.Context, call tool.Call, in bashInput, timeout, grace time.Duration) tool.Result {
	if b.Jobs == nil {
		return tool.Errorf("background jobs are not available here; run the command without background (it may run up to %g seconds with timeout_seconds)", b.maxTimeout().Seconds())
	}
	if in.TimeoutSeconds <= 0 {
		timeout = 0
	}
	id, pid, err := b.Jobs.StartJob(ctx, call, b.command(call, in.Command), timeout, grace)
	if err != nil {
		return tool.Result{Output: fmt.Sprintf("The background job could not be started: %v", err), IsError: true, Untracked: true}
	}
	limit := "It runs until it ends."
	if timeout > 0 {
		limit = fmt.Sprintf("It is stopped if it runs longer than %s.", timeout)
	}
	return tool.Result{Output: fmt.Sprintf("Started background job %s (process group %d): %s\n%s Read its output with job_output, stop it with job_stop. You will be told when it finishes; do not wait for it by polling in a loop.", id, pid, in.Command, limit), Untracked: true}
}

func (b Bash) maxTimeout() time.Duration {
	_, maxT, _, _ := b.settings()
	return maxT
}
