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
	"sync"
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
	// Jobs takes charge of commands run with background: true; nil refuses
	// them (the model is told to run the command in the foreground). The
	// agent sets it to its own job table.
	Jobs JobRunner
	// Sandbox confines every command, foreground and background; nil
	// runs them unconfined. package sandbox's *Policy is one.
	Sandbox Launcher
}

// Launcher starts commands confined. Wrap rewrites a command not yet
// started so that it starts confined (it keeps Dir, Env, the files and
// SysProcAttr); Name is the confinement's name, recorded with each call.
type Launcher interface {
	Wrap(cmd *exec.Cmd) error
	Name() string
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
	p, err := startProc(call.Root.Dir(), b.environ(), in.Command, out, b.Sandbox)
	if err != nil {
		return tool.Errorf("cannot start bash: %v", err)
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var stopped string
	select {
	case <-p.waited:
	case <-timer.C:
		stopped = fmt.Sprintf("timed out after %s", timeout)
	case <-ctx.Done():
		stopped = "cancelled"
	}
	leftovers, detached := p.end(stopped != "", grace)
	cmd := p.cmd

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

// proc is a started command whose output is being copied to a writer.
type proc struct {
	cmd    *exec.Cmd
	pgid   int
	pr     *os.File
	copied chan struct{} // closed when the output copy ends
	waited chan error    // receives cmd.Wait's result once
}

// startProc starts command with bash -c in dir, in a session of its own,
// its stdout and stderr copied to out, through sandbox when it is not nil.
func startProc(dir string, env []string, command string, out io.Writer, sandbox Launcher) (*proc, error) {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if sandbox != nil {
		if err := sandbox.Wrap(cmd); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, pgid: cmd.Process.Pid, pr: pr, copied: make(chan struct{}), waited: make(chan error, 1)}
	go func() {
		io.Copy(out, pr)
		close(p.copied)
	}()
	go func() { p.waited <- cmd.Wait() }()
	return p, nil
}

// end stops the process group (all of it at once with now, else what the
// leader left behind) and stops reading the output. The caller must have
// received from waited unless now is set. It reports whether processes
// other than the leader were left to stop, and whether a process that left
// the group still held the output open.
func (p *proc) end(now bool, grace time.Duration) (leftovers, detached bool) {
	leftovers = stopGroup(p.pgid, p.waited, now, grace)
	// Everything in the group is gone, so the pipe is closed unless a
	// process that left the group still holds it: stop reading then.
	t := time.NewTimer(grace)
	select {
	case <-p.copied:
	case <-t.C:
		detached = true
	}
	t.Stop()
	p.pr.Close()
	<-p.copied
	return leftovers, detached
}

// JobRunner takes charge of commands started with background: true.
type JobRunner interface {
	// Adopt takes charge of job, just started by call, and returns the id
	// the model names it by. From then on the runner must stop the job when
	// it shuts down. An error refuses the job: Run stops it and tells the
	// model. ctx is the tool call's.
	Adopt(ctx context.Context, call tool.Call, job *Job) (id string, err error)
}

// Job is a command running in the background. It ends when its command
// ends (processes it left running in its group are then stopped, as for a
// foreground command), when its timeout passes, or when Stop is called. Its
// methods are safe for concurrent use.
type Job struct {
	command string
	pid     int
	started time.Time
	out     *tailBuffer

	stop     chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	reason   string   // why Stop was called; guarded by mu
	state    JobState // set before done is closed
	done     chan struct{}
}

// JobState is how a background job stands.
type JobState struct {
	Running bool
	// ExitCode is the exit code of an ended job; -1 when a signal ended it
	// or it is unknown.
	ExitCode int
	// Signal names the signal that ended it, if one did.
	Signal string
	// Stopped says why the job was stopped ("timed out after 5m0s" or the
	// reason given to Stop); "" when it ended by itself.
	Stopped string
	// Note describes the end as a foreground command's result does:
	// "[exit code 3]", "[killed by signal terminated]", ….
	Note string
}

// jobOutputCap is how much of a job's output is kept: the end of it.
const jobOutputCap = 64 << 10

// background starts the command as a job and hands it to b.Jobs.
func (b Bash) background(ctx context.Context, call tool.Call, in bashInput, timeout, grace time.Duration) tool.Result {
	if b.Jobs == nil {
		return tool.Errorf("background jobs are not available here; run the command without background (it may run up to %g seconds with timeout_seconds)", b.maxTimeout().Seconds())
	}
	if in.TimeoutSeconds <= 0 {
		timeout = 0
	}
	j := &Job{command: in.Command, out: &tailBuffer{max: jobOutputCap}, stop: make(chan struct{}), done: make(chan struct{}), state: JobState{Running: true, ExitCode: -1}}
	p, err := startProc(call.Root.Dir(), b.environ(), in.Command, j.out, b.Sandbox)
	if err != nil {
		return tool.Errorf("cannot start bash: %v", err)
	}
	j.pid, j.started = p.pgid, time.Now()
	go j.supervise(p, timeout, grace)
	id, err := b.Jobs.Adopt(ctx, call, j)
	if err != nil {
		j.Stop("the job was refused")
		<-j.done
		return tool.Result{Output: fmt.Sprintf("The background job could not be started, so it was stopped: %v", err), IsError: true, Untracked: true}
	}
	limit := "It runs until it ends."
	if timeout > 0 {
		limit = fmt.Sprintf("It is stopped if it runs longer than %s.", timeout)
	}
	return tool.Result{Output: fmt.Sprintf("Started background job %s (process group %d): %s\n%s Read its output with job_output, stop it with job_stop. You will be told when it finishes; do not wait for it by polling in a loop.", id, j.pid, in.Command, limit), Untracked: true}
}

func (b Bash) maxTimeout() time.Duration {
	_, maxT, _, _ := b.settings()
	return maxT
}

// supervise waits for the job's command to end, its timeout or Stop, then
// stops what is left of its group and records how it ended.
func (j *Job) supervise(p *proc, timeout, grace time.Duration) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var stopped string
	select {
	case <-p.waited:
	case <-expired:
		stopped = fmt.Sprintf("timed out after %s", timeout)
	case <-j.stop:
		j.mu.Lock()
		stopped = j.reason
		j.mu.Unlock()
	}
	p.end(stopped != "", grace)
	st := JobState{ExitCode: -1, Stopped: stopped, Note: exitNote(p.cmd.ProcessState)}
	if ps := p.cmd.ProcessState; ps != nil {
		st.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			st.Signal = ws.Signal().String()
		}
	}
	j.mu.Lock()
	j.state = st
	j.mu.Unlock()
	close(j.done)
}

// Command returns the job's command line.
func (j *Job) Command() string { return j.command }

// PID returns the job's process id, which is also its process group id.
func (j *Job) PID() int { return j.pid }

// Started returns when the job started.
func (j *Job) Started() time.Time { return j.started }

// Done is closed when the job has ended and nothing of its process group
// is left (but a process that left the group).
func (j *Job) Done() <-chan struct{} { return j.done }

// State returns how the job stands.
func (j *Job) State() JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

// Output returns the last max bytes of the job's output so far (at most the
// 64 KiB kept), cut at a character boundary, and how many bytes it has
// written in all.
func (j *Job) Output(max int) (string, int64) { return j.out.tail(max) }

// Stop asks the job to stop: its whole process group gets SIGTERM, then
// SIGKILL after the grace period. It returns at once; Done tells when the
// job has ended. reason is recorded in State.Stopped. Stopping an ended job
// does nothing; only the first reason counts.
func (j *Job) Stop(reason string) {
	j.stopOnce.Do(func() {
		j.mu.Lock()
		j.reason = reason
		j.mu.Unlock()
		close(j.stop)
	})
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte // up to 2*max bytes before compaction
	total int64
}

// Write implements io.Writer; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// tail returns the last n bytes kept (all of them if n <= 0), as valid
// UTF-8, and the total written.
func (t *tailBuffer) tail(n int) (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	if n > 0 && len(b) > n {
		b = b[len(b)-n:]
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), t.total
}
