// Package jobs runs the background jobs of the agent's sessions: commands
// the bash tool starts with background: true, their table, the watcher that
// notices when one ends, and the hand-over of ended jobs to the session
// that started them for a background completion turn.
//
// A job starts through a Starter, which is bound to one Owner (the SDK's
// session) and is what the bash tool is given (builtin.JobStarter). Start
// only starts the process and registers it: it writes nothing. The owner
// records job_started once the tool call returns (Table.StartedBy, then
// Logged or Refuse), so the log names every job before the model hears of
// it, and no tool calls back into its session mid-turn.
//
// One watcher goroutine per job waits for it to end and queues it; one
// notifier goroutine takes the queue and calls Owner.JobsEnded, one batch
// per owner at a time. The owner records the ends (Unrecorded, Recorded)
// and, for the jobs the model has not seen end, may run a completion turn
// with CompletionPrompt. Shut refuses new jobs and stops the running ones;
// Close waits for the table's goroutines.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/shell"
)

// ErrClosed is returned by Start once the table is shut, and by Wait when
// the table shuts while it waits.
var ErrClosed = errors.New("background jobs are shut down")

// maxKept bounds the ended jobs the table keeps for job_output.
const maxKept = 64

// Owner is the conversation jobs belong to, as the table sees it: the
// SDK's session. Its methods are called from the table's goroutines.
type Owner interface {
	// SessionID names the session a job started now belongs to.
	SessionID() string
	// JobsStarted returns how many jobs the session's log records as
	// started; a job started now is numbered after them.
	JobsStarted() int
	// Goal returns the user's goal to keep with a job started now.
	Goal() string
	// JobsEnded is called from the table's notifier, one call at a time,
	// with jobs of the owner that ended, oldest first. A job can end while
	// the call that started it runs, before its start is logged: the owner
	// must deal with ends only after that call (the SDK waits for the
	// session's turn). It records their
	// ends (see Unrecorded, Recorded) and may run a completion turn. ctx
	// ends when the table shuts. The table then counts the jobs as dealt
	// with (Wait stops waiting for them), unless JobsEnded returns an error
	// or ctx has ended: the one who shut the table records them then.
	JobsEnded(ctx context.Context, js []*Job) error
}

// Options adjusts New. Nil means defaults; there are none to adjust yet.
type Options struct{}

// Table holds the background jobs of an agent, running and recently ended,
// across its sessions. Its methods are safe for concurrent use.
type Table struct {
	ctx  context.Context // ends at Shut
	shut context.CancelFunc

	mu        sync.Mutex
	closed    bool
	all       []*Job         // oldest first
	last      map[string]int // the highest job number given out per session
	changed   chan struct{}  // closed and replaced when a job is dealt with
	pending   []*Job         // ended, waiting for the notifier
	wake      chan struct{}
	notifying bool
	wg        sync.WaitGroup // watchers and the notifier
}

// New returns an empty table.
func New(opts *Options) *Table {
	t := &Table{last: map[string]int{}, wake: make(chan struct{}, 1)}
	t.ctx, t.shut = context.WithCancel(context.Background())
	return t
}

// Starter starts jobs for one owner; it is what the bash tool is given
// (builtin.JobStarter).
type Starter struct {
	t     *Table
	owner Owner
}

// For returns the Starter of owner's jobs.
func (t *Table) For(owner Owner) *Starter { return &Starter{t: t, owner: owner} }

// StartJob starts c as a background job of call, stopped after timeout
// (0: no limit) with grace between SIGTERM and SIGKILL, and returns the
// job's id and process group id. It writes nothing to the session's log:
// the owner records the start when the call returns (Table.StartedBy). ctx
// is the call's; it does not stop the job once started. It fails with
// ErrClosed once the table is shut, or when the process cannot start.
func (s *Starter) StartJob(ctx context.Context, call tool.Call, c shell.Command, timeout, grace time.Duration) (string, int, error) {
	t, o := s.t, s.owner
	sid := o.SessionID()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return "", 0, ErrClosed
	}
	n := max(o.JobsStarted(), t.last[sid]) + 1
	t.last[sid] = n
	t.mu.Unlock()
	j := &Job{id: fmt.Sprintf("j%d", n), session: sid, owner: o, callID: call.ID, command: c.Line, goal: o.Goal(), workdir: c.Dir,
		out: &tailBuffer{max: outputCap}, stop: make(chan struct{}), done: make(chan struct{}), state: State{Running: true, ExitCode: -1}}
	p, err := shell.Start(c, j.out)
	if err != nil {
		return "", 0, err
	}
	j.pid, j.started = p.PID(), time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		j.Stop("background jobs are shut down")
		j.supervise(p, 0, grace)
		return "", 0, ErrClosed
	}
	t.all = append(t.all, j)
	if !t.notifying {
		t.notifying = true
		t.wg.Add(1)
		go t.notify()
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		j.supervise(p, timeout, grace)
		t.mu.Lock()
		t.pending = append(t.pending, j)
		t.mu.Unlock()
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}()
	return j.id, j.pid, nil
}

// Tools returns the job_output and job_stop tools over the owner's jobs.
func (s *Starter) Tools() []tool.Tool {
	return []tool.Tool{outputTool{s}, stopTool{s}}
}

// notify hands ended jobs to their owners, one batch at a time, until Shut.
func (t *Table) notify() {
	defer t.wg.Done()
	for {
		select {
		case <-t.wake:
		case <-t.ctx.Done():
			return
		}
		t.mu.Lock()
		batch := t.pending
		t.pending = nil
		t.mu.Unlock()
		var failed []*Job
		for _, owner := range owners(batch) {
			var js []*Job
			for _, j := range batch {
				if j.owner == owner {
					js = append(js, j)
				}
			}
			if err := owner.JobsEnded(t.ctx, js); err != nil {
				failed = append(failed, js...)
			}
		}
		if t.ctx.Err() != nil {
			return // Shut's caller records what this batch did not.
		}
		t.Processed(slices.DeleteFunc(batch, func(j *Job) bool { return slices.Contains(failed, j) })...)
	}
}

// owners returns the owners of js, in order of first appearance.
func owners(js []*Job) []Owner {
	var out []Owner
	for _, j := range js {
		if !slices.Contains(out, j.owner) {
			out = append(out, j.owner)
		}
	}
	return out
}

// All returns the table's jobs, running and recently ended, oldest first.
func (t *Table) All() []*Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.all)
}

// OfSession returns the jobs of session sid, oldest first.
func (t *Table) OfSession(sid string) []*Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Job
	for _, j := range t.all {
		if j.session == sid {
			out = append(out, j)
		}
	}
	return out
}

// Find returns job id of session sid, nil if there is none.
func (t *Table) Find(sid, id string) *Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.all {
		if j.session == sid && j.id == id {
			return j
		}
	}
	return nil
}

// Running reports whether the table accounts for job id of session sid: it
// runs, or it ended and its end was not dealt with yet.
func (t *Table) Running(sid, id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.ContainsFunc(t.all, func(j *Job) bool { return j.session == sid && j.id == id && !j.processed })
}

// StartedBy returns the jobs tool call callID of session sid started whose
// start is not recorded yet (see Logged, Refuse).
func (t *Table) StartedBy(sid, callID string) []*Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Job
	for _, j := range t.all {
		if j.session == sid && j.callID == callID && !j.logged && !j.dropped {
			out = append(out, j)
		}
	}
	return out
}

// Logged marks js as recorded in their session's log.
func (t *Table) Logged(js ...*Job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range js {
		j.logged = true
	}
}

// Refuse stops jobs whose start could not be recorded, waits for them to
// end, and forgets their ends: no one is told.
func (t *Table) Refuse(reason string, js ...*Job) {
	t.drop(reason, js)
	for _, j := range js {
		<-j.done
	}
	t.Processed(js...)
}

// Drop stops the jobs of session sid, being deleted: their ends are not
// recorded (the log is gone) and no one is told.
func (t *Table) Drop(sid, reason string) { t.drop(reason, t.OfSession(sid)) }

func (t *Table) drop(reason string, js []*Job) {
	t.mu.Lock()
	for _, j := range js {
		j.dropped, j.seen = true, true
	}
	t.mu.Unlock()
	for _, j := range js {
		j.Stop(reason)
	}
}

// Seen records that the model saw how j ended, so its end needs no
// completion turn.
func (t *Table) Seen(j *Job) {
	t.mu.Lock()
	j.seen = true
	t.mu.Unlock()
}

// Unrecorded returns the jobs of js whose start is recorded and whose end
// is not (nor dropped): those whose job_finished is to be written.
func (t *Table) Unrecorded(js []*Job) []*Job {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Job
	for _, j := range js {
		if j.logged && !j.dropped && !j.recorded {
			out = append(out, j)
		}
	}
	return out
}

// Recorded marks the ends of js as written to the log, and returns those
// the model has not seen end: the ones to tell it about.
func (t *Table) Recorded(js []*Job) (tell []*Job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range js {
		j.recorded = true
		if !j.seen {
			tell = append(tell, j)
		}
	}
	return tell
}

// Processed marks js as dealt with, forgets the oldest ended jobs beyond
// the ones kept, and wakes Wait.
func (t *Table) Processed(js ...*Job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range js {
		j.processed = true
	}
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	if n := len(t.all) - maxKept; n > 0 {
		t.all = slices.DeleteFunc(t.all, func(j *Job) bool {
			if n > 0 && j.processed {
				n--
				return true
			}
			return false
		})
	}
}

// Wait waits until no job of session sid (of any session with "") is left
// that runs or whose end was not dealt with. It returns ctx's error when
// ctx ends first, ErrClosed when the table shuts first.
func (t *Table) Wait(ctx context.Context, sid string) error {
	for {
		t.mu.Lock()
		if !slices.ContainsFunc(t.all, func(j *Job) bool { return !j.processed && (sid == "" || j.session == sid) }) {
			t.mu.Unlock()
			return nil
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.ctx.Done():
			return ErrClosed
		}
	}
}

// Shut refuses new jobs, stops the running ones with reason, ends the
// notifier's context, and returns the jobs whose end was not dealt with:
// the caller records those once they are Done (and after Close).
func (t *Table) Shut(reason string) []*Job {
	t.mu.Lock()
	t.closed = true
	var open []*Job
	for _, j := range t.all {
		if !j.processed {
			open = append(open, j)
		}
	}
	t.mu.Unlock()
	for _, j := range open {
		j.Stop(reason)
	}
	t.shut()
	return open
}

// Close shuts the table if it is not yet and waits until its goroutines
// (the watchers, whose jobs Shut stopped, and the notifier) have returned.
func (t *Table) Close() {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if !closed {
		t.Shut("background jobs are shut down")
	}
	t.wg.Wait()
}
