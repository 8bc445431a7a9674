package jobs

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/tool/shell"
)

// Job is one background job: a command line running in a process group of
// its own. It ends when its command ends (processes it left running in
// its group are then stopped, as for a foreground command), when its
// timeout passes, or when Stop is called. Its methods are safe for
// concurrent use.
type Job struct {
	id, session, callID, command, goal, workdir string
	owner                                       Owner

	pid     int
	started time.Time
	out     *tailBuffer

	stop     chan struct{}
	stopOnce sync.Once
	mu       sync.Mutex
	reason   string // why Stop was called; guarded by mu
	state    State  // set before done is closed; guarded by mu
	done     chan struct{}

	// Guarded by the table's mutex:
	logged    bool // the owner recorded that it started (Table.Logged)
	seen      bool // the model saw the end (job_output after it, job_stop)
	recorded  bool // its end is in the log (Table.Recorded)
	processed bool // its end was dealt with: recorded (or given up) and reported
	dropped   bool // refused, or its session was deleted: nothing to record
}

// State is how a background job stands.
type State struct {
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

// outputCap is how much of a job's output is kept: the end of it.
const outputCap = 64 << 10

// ID returns the id the model names the job by ("j1"), unique in its
// session.
func (j *Job) ID() string { return j.id }

// Session returns the id of the session the job belongs to.
func (j *Job) Session() string { return j.session }

// Owner returns the owner that started the job.
func (j *Job) Owner() Owner { return j.owner }

// CallID returns the id of the tool call that started the job.
func (j *Job) CallID() string { return j.callID }

// Command returns the job's command line.
func (j *Job) Command() string { return j.command }

// Goal returns the user's goal when the job started: the prompt that
// started the work, as its owner said.
func (j *Job) Goal() string { return j.goal }

// Workdir returns the directory the job's command runs in.
func (j *Job) Workdir() string { return j.workdir }

// PID returns the job's process id, which is also its process group id; 0
// before its process started.
func (j *Job) PID() int { return j.pid }

// Started returns when the job's process started.
func (j *Job) Started() time.Time { return j.started }

// Done is closed when the job has ended and nothing of its process group
// is left (but a process that left the group).
func (j *Job) Done() <-chan struct{} { return j.done }

// State returns how the job stands.
func (j *Job) State() State {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

// Output returns the last max bytes of the job's output so far (at most the
// 64 KiB kept; all of them with max <= 0), cut at a character boundary,
// and how many bytes it has written in all.
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

// supervise waits for the job's command to end, its timeout or Stop, then
// stops what is left of its group and records how it ended.
func (j *Job) supervise(p *shell.Process, timeout, grace time.Duration) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var stopped string
	select {
	case <-p.Exited():
	case <-expired:
		stopped = fmt.Sprintf("timed out after %s", timeout)
	case <-j.stop:
		j.mu.Lock()
		stopped = j.reason
		j.mu.Unlock()
	}
	p.End(stopped != "", grace)
	ps := p.State()
	st := State{ExitCode: -1, Stopped: stopped, Note: shell.ExitNote(ps)}
	if ps != nil {
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

// Outcome describes how a job stands or ended, for the model and the user:
// "still running", "exit code 3", "stopped (timed out after 5s); killed by
// signal terminated".
func Outcome(st State) string {
	switch {
	case st.Running:
		return "still running"
	case st.Stopped != "":
		return fmt.Sprintf("stopped (%s); %s", st.Stopped, strings.Trim(st.Note, "[]"))
	}
	return strings.Trim(st.Note, "[]")
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
