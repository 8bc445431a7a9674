package liteagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// Background jobs.
//
// The bash tool's background option starts a command as a job and hands it
// to the agent (jobRunner.Adopt), which appends job_started to the session
// log while the tool call runs, so the log names every job before the model
// hears of it. A watcher goroutine per job waits for it to end and queues
// it; one notifier goroutine takes the queue when no turn runs (a job that
// ends during a turn is dealt with right after that turn), appends
// job_finished to the log of the session that started the job, and, when
// that session is still the current one and the model has not already seen
// the end (job_output after it, or job_stop), runs a background completion
// turn: a user_prompt marked Background that tells the model which job
// ended, how, the end of its output, and the user's goal (the prompt that
// started the work, kept with the job until Close).
//
// A job_started without its job_finished whose job no live agent runs is a
// recovery hazard, like a tool cut off mid-run: the process died and the
// job may still run or may have done anything. Close stops every job (its
// whole process group) and records its end, so a clean exit leaves none.

// jobNoticeTail is how much of a job's output its job_finished event and
// the completion prompt carry: the end.
const jobNoticeTail = 4 << 10

// maxKeptJobs bounds the ended jobs the agent keeps for job_output.
const maxKeptJobs = 64

// maxKeptResults bounds the completion results kept for WaitJobs.
const maxKeptResults = 64

// jobs is the agent's table of background jobs.
type jobs struct {
	mu        sync.Mutex
	closed    bool
	all       []*job // oldest first
	open      int    // jobs not processed yet
	idle      chan struct{}
	pending   []*job // ended, waiting for the notifier
	wake      chan struct{}
	notifying bool
	wg        sync.WaitGroup // watchers and the notifier
	results   []*Result
	errs      []error
}

// job is one background job of the agent.
type job struct {
	id, session, callID, command, goal string
	proc                               *builtin.Job
	// Guarded by jobs.mu:
	seen      bool // the model saw the end (job_output after it, job_stop)
	recorded  bool // its job_finished is in the log
	processed bool // its end was recorded (or recording gave up) and reported
	dropped   bool // its session was deleted: nothing to record
}

// JobInfo describes a background job of the agent.
type JobInfo struct {
	ID       string    `json:"id"`
	Session  string    `json:"session"`
	Command  string    `json:"command"`
	PID      int       `json:"pid"` // also its process group id
	Started  time.Time `json:"started"`
	Running  bool      `json:"running"`
	ExitCode int       `json:"exit_code"` // -1 while running or when a signal ended it
	Stopped  string    `json:"stopped,omitempty"`
}

// Jobs lists the agent's background jobs, running and recently ended,
// oldest first.
func (a *Agent) Jobs() []JobInfo {
	a.jobs.mu.Lock()
	all := slices.Clone(a.jobs.all)
	a.jobs.mu.Unlock()
	out := make([]JobInfo, 0, len(all))
	for _, j := range all {
		st := j.proc.State()
		out = append(out, JobInfo{ID: j.id, Session: j.session, Command: j.command, PID: j.proc.PID(), Started: j.proc.Started(),
			Running: st.Running, ExitCode: st.ExitCode, Stopped: st.Stopped})
	}
	return out
}

// WaitJobs waits until no background job of the agent runs and every
// completion turn their ends started has finished; a completion turn may
// start new jobs, and those are waited for too. It returns the results of
// the completion turns that ended since the previous call, oldest first,
// with their errors joined. When ctx ends it stops waiting (the jobs run
// on) and returns ctx's error; Close ends both, and WaitJobs then returns
// ErrClosed.
func (a *Agent) WaitJobs(ctx context.Context) ([]*Result, error) {
	for {
		a.jobs.mu.Lock()
		if a.jobs.open == 0 {
			res, errs := a.jobs.results, a.jobs.errs
			a.jobs.results, a.jobs.errs = nil, nil
			a.jobs.mu.Unlock()
			return res, errors.Join(errs...)
		}
		idle := a.jobs.idle
		a.jobs.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-a.closing.Done():
			return nil, ErrClosed
		}
	}
}

// add registers a job; it fails once the agent is closing.
func (t *jobs) add(j *job, notifier func()) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.all = append(t.all, j)
	if t.open == 0 {
		t.idle = make(chan struct{})
	}
	t.open++
	if !t.notifying {
		t.notifying = true
		t.wake = make(chan struct{}, 1)
		t.wg.Add(1)
		go notifier()
	}
	return nil
}

// done marks jobs processed, forgets the oldest ended ones beyond
// maxKeptJobs, and wakes WaitJobs when none is left open.
func (t *jobs) done(js ...*job) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range js {
		if j.processed {
			continue
		}
		j.processed = true
		t.open--
	}
	if t.open == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
	if n := len(t.all) - maxKeptJobs; n > 0 {
		var keep []*job
		for _, j := range t.all {
			if n > 0 && j.processed {
				n--
				continue
			}
			keep = append(keep, j)
		}
		t.all = keep
	}
}

// ended queues a job that ended for the notifier.
func (t *jobs) ended(j *job) {
	t.mu.Lock()
	t.pending = append(t.pending, j)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// find returns the job id of session sid, nil if there is none.
func (t *jobs) find(sid, id string) *job {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.all {
		if j.session == sid && j.id == id {
			return j
		}
	}
	return nil
}

// ofSession returns the jobs of session sid, oldest first.
func (t *jobs) ofSession(sid string) []*job {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*job
	for _, j := range t.all {
		if j.session == sid {
			out = append(out, j)
		}
	}
	return out
}

// running reports whether this agent accounts for job id of session sid:
// it runs, or it ended and its end is not recorded yet.
func (t *jobs) running(sid, id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, j := range t.all {
		if j.session == sid && j.id == id && !j.processed {
			return true
		}
	}
	return false
}

// report keeps a completion turn's result or error for WaitJobs.
func (t *jobs) report(res *Result, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if res != nil {
		t.results = append(t.results, res)
		if n := len(t.results) - maxKeptResults; n > 0 {
			t.results = slices.Delete(t.results, 0, n)
		}
	}
	if err != nil && len(t.errs) < maxKeptResults {
		t.errs = append(t.errs, err)
	}
}

// markSeen records that the model saw how job j ended.
func (t *jobs) markSeen(j *job) {
	t.mu.Lock()
	j.seen = true
	t.mu.Unlock()
}

// shut refuses new jobs and returns those not processed yet.
func (t *jobs) shut() []*job {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	var out []*job
	for _, j := range t.all {
		if !j.processed {
			out = append(out, j)
		}
	}
	return out
}

// jobRunner is the agent as the bash tool's builtin.JobRunner.
type jobRunner struct{ a *Agent }

var _ builtin.JobRunner = jobRunner{}

// Adopt records the job in the current session's log and watches it. It
// runs inside the tool call, so inside the turn that holds the log.
func (r jobRunner) Adopt(ctx context.Context, call tool.Call, pj *builtin.Job) (string, error) {
	a := r.a
	a.mu.Lock()
	sid, goal, n := a.id, a.goal, a.jobLog.started
	a.mu.Unlock()
	if sid == "" {
		return "", ErrNoSession
	}
	j := &job{id: fmt.Sprintf("j%d", n+1), session: sid, callID: call.ID, command: pj.Command(), goal: goal, proc: pj}
	if err := a.jobs.add(j, a.notifyLoop); err != nil {
		return "", err
	}
	ev := mustEvent(session.TypeJobStarted, session.JobStarted{Job: j.id, CallID: call.ID, Command: j.command, PID: pj.PID()})
	if err := a.append(ctx, ev); err != nil {
		a.jobs.mu.Lock()
		j.dropped = true
		a.jobs.mu.Unlock()
		a.jobs.done(j)
		return "", err
	}
	a.jobs.wg.Add(1)
	go func() {
		defer a.jobs.wg.Done()
		<-pj.Done()
		a.jobs.ended(j)
	}()
	return j.id, nil
}

// notifyLoop deals with jobs that ended, one batch at a time, until Close.
func (a *Agent) notifyLoop() {
	defer a.jobs.wg.Done()
	for {
		select {
		case <-a.jobs.wake:
		case <-a.closing.Done():
			return
		}
		a.completeJobs()
	}
}

// completeJobs records the ends of the queued jobs and runs a completion
// turn for those of the current session the model has not seen end. It
// waits for a running turn to finish first.
func (a *Agent) completeJobs() {
	ctx, leave, err := a.enter(context.Background())
	if err != nil {
		return
	}
	defer leave()
	unlock, err := a.lockTurn(ctx)
	if err != nil {
		return
	}
	defer unlock()
	a.jobs.mu.Lock()
	batch := a.jobs.pending
	a.jobs.pending = nil
	a.jobs.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	tell := a.recordEnds(ctx, batch)
	var res *Result
	if len(tell) > 0 && a.opts.Provider != nil {
		res, err = a.turnLocked(ctx, completionPrompt(tell), true)
		if err != nil {
			err = fmt.Errorf("background completion turn: %w", err)
		}
		a.jobs.report(res, err)
	}
	if ctx.Err() != nil {
		// Close records what this batch did not.
		return
	}
	a.jobs.done(batch...)
}

// recordEnds appends job_finished for each job to its session's log and
// returns the jobs of the current session the model should be told about.
// Jobs whose end could not be recorded because the agent is closing are
// left for Close.
func (a *Agent) recordEnds(ctx context.Context, batch []*job) []*job {
	var tell []*job
	for _, sid := range sessionsOf(batch) {
		var js []*job
		var events []session.Event
		a.jobs.mu.Lock()
		for _, j := range batch {
			if j.session == sid && !j.dropped && !j.recorded {
				js = append(js, j)
				events = append(events, finishedEvent(j))
			}
		}
		a.jobs.mu.Unlock()
		if len(events) == 0 {
			continue
		}
		if err := a.appendTo(ctx, sid, events); err != nil {
			if ctx.Err() == nil {
				a.jobs.report(nil, fmt.Errorf("record the end of background jobs of session %s: %w", sid, err))
			}
			continue
		}
		current := sid == a.SessionID()
		a.jobs.mu.Lock()
		for _, j := range js {
			j.recorded = true
			if current && !j.seen {
				tell = append(tell, j)
			}
		}
		a.jobs.mu.Unlock()
	}
	return tell
}

// recordAllEnds is Close's part: after every job was stopped and every
// turn ended, it records the end of each job not recorded yet.
func (a *Agent) recordAllEnds(js []*job) error {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	var errs []error
	for _, sid := range sessionsOf(js) {
		var events []session.Event
		a.jobs.mu.Lock()
		for _, j := range js {
			if j.session == sid && !j.dropped && !j.recorded {
				events = append(events, finishedEvent(j))
			}
		}
		a.jobs.mu.Unlock()
		if len(events) == 0 {
			continue
		}
		if err := a.appendTo(ctx, sid, events); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			errs = append(errs, fmt.Errorf("record the end of background jobs of session %s: %w", sid, err))
		}
	}
	a.jobs.done(js...)
	return errors.Join(errs...)
}

// sessionsOf returns the sessions of js, in order of first appearance.
func sessionsOf(js []*job) []string {
	var out []string
	for _, j := range js {
		if !slices.Contains(out, j.session) {
			out = append(out, j.session)
		}
	}
	return out
}

func finishedEvent(j *job) session.Event {
	st := j.proc.State()
	out, _ := j.proc.Output(jobNoticeTail)
	return mustEvent(session.TypeJobFinished, session.JobFinished{
		Job: j.id, ExitCode: st.ExitCode, Signal: st.Signal, Stopped: st.Stopped, Output: out,
		Started: j.proc.Started().UTC().Truncate(time.Microsecond),
	})
}

// appendTo appends events to session sid's log: through the current
// session's state when sid is current (the caller holds the turn), else at
// the stored head, retrying when another writer moved it.
func (a *Agent) appendTo(ctx context.Context, sid string, events []session.Event) error {
	if sid == a.SessionID() {
		return a.append(ctx, events...)
	}
	for attempt := 1; ; attempt++ {
		s, err := a.store.Head(ctx, sid)
		if err != nil {
			return err
		}
		if _, err = a.store.Append(ctx, sid, s.Head, events); err == nil || !checkpoint.IsConflict(err) || attempt == 10 {
			return err
		}
	}
}

// outcome describes how a job ended, for the model and the user.
func outcome(st builtin.JobState) string {
	switch {
	case st.Running:
		return "still running"
	case st.Stopped != "":
		return fmt.Sprintf("stopped (%s); %s", st.Stopped, strings.Trim(st.Note, "[]"))
	}
	return strings.Trim(st.Note, "[]")
}

// completionPrompt is the background prompt that tells the model jobs
// ended, with the user's goal.
func completionPrompt(js []*job) string {
	var b strings.Builder
	b.WriteString("[Background job update from the agent, not a message from the user]\n")
	goal := ""
	for _, j := range js {
		st := j.proc.State()
		out, total := j.proc.Output(jobNoticeTail)
		fmt.Fprintf(&b, "\nBackground job %s finished: %s.\nCommand: %s\n", j.id, outcome(st), j.command)
		switch {
		case total == 0:
			b.WriteString("Output: (none)\n")
		case total > int64(len(out)):
			fmt.Fprintf(&b, "Output (the last %d of %d bytes):\n%s\n", len(out), total, strings.TrimSuffix(out, "\n"))
		default:
			fmt.Fprintf(&b, "Output:\n%s\n", strings.TrimSuffix(out, "\n"))
		}
		if j.goal != "" {
			goal = j.goal
		}
	}
	if goal != "" {
		fmt.Fprintf(&b, "\nThe user's goal, from the prompt that started this work:\n%s\n", goal)
	}
	b.WriteString("\nIf this result calls for more work toward the goal, go on with it; otherwise report the outcome to the user briefly.")
	return b.String()
}

// stopJobsOf stops the jobs of a session being deleted; their ends are not
// recorded (the log is gone) and no completion turn runs for them.
func (a *Agent) stopJobsOf(sid string) {
	for _, j := range a.jobs.ofSession(sid) {
		a.jobs.mu.Lock()
		j.dropped, j.seen = true, true
		a.jobs.mu.Unlock()
		j.proc.Stop("its session was deleted")
	}
}

// jobLog folds the background jobs of a session's log: how many were
// started, and those not recorded as ended nor acknowledged. Jobs a fork
// copied from its parent's log are the parent's: their ends are recorded
// there, so the fork does not count them as open.
type jobLog struct {
	started int
	forkSeq int64 // the copied prefix of a fork's log
	open    []openJob
}

type openJob struct {
	job, callID, command, token string
	pid                         int
	seq                         int64
	time                        time.Time
}

func (l *jobLog) apply(e session.Event) {
	switch e.Type {
	case session.TypeSessionStarted:
		var p session.SessionStarted
		if e.Decode(&p) == nil && p.Parent != nil {
			l.forkSeq = p.Parent.Seq
		}
	case session.TypeJobStarted:
		var p session.JobStarted
		if e.Decode(&p) != nil {
			return
		}
		l.started++
		if e.Seq <= l.forkSeq {
			return
		}
		l.open = append(l.open, openJob{job: p.Job, callID: p.CallID, command: p.Command, pid: p.PID, seq: e.Seq, time: e.Time,
			token: session.ReviewToken(p.CallID+"/"+p.Job, e.Seq)})
	case session.TypeJobFinished:
		var p session.JobFinished
		if e.Decode(&p) != nil {
			return
		}
		l.open = slices.DeleteFunc(l.open, func(o openJob) bool { return o.job == p.Job })
	case session.TypeRecoveryAcknowledged:
		var p session.RecoveryAcknowledged
		if e.Decode(&p) != nil {
			return
		}
		l.open = slices.DeleteFunc(l.open, func(o openJob) bool { return slices.Contains(p.Tokens, o.token) })
	}
}

// jobHazards returns the open jobs of session sid's log that this agent
// does not run: their process died with them still running.
func (a *Agent) jobHazards(sid string, open []openJob) []session.Hazard {
	var out []session.Hazard
	for _, o := range open {
		if a.jobs.running(sid, o.job) {
			continue
		}
		// The job may still run: its process group id lets the user check
		// (ps -g PID) and stop it (kill -- -PID).
		out = append(out, session.Hazard{Token: o.token, CallID: o.callID, Tool: fmt.Sprintf("bash background job %s (process group %d): %s", o.job, o.pid, short(o.command, 60)),
			Seq: o.seq, Started: o.time})
	}
	return out
}

// currentHazards returns the current session's recovery hazards: tool
// calls cut off, and background jobs left running by a process that died.
func (a *Agent) currentHazards() []session.Hazard {
	a.mu.Lock()
	var hz []session.Hazard
	if a.state != nil {
		hz = slices.Clone(a.state.Hazards())
	}
	sid, open := a.id, slices.Clone(a.jobLog.open)
	a.mu.Unlock()
	return append(hz, a.jobHazards(sid, open)...)
}

// isJobToken reports whether tok is the review token of a background job
// of the current session's log.
func (a *Agent) isJobToken(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.jobLog.open, func(o openJob) bool { return o.token == tok })
}

// short returns s on one line, cut to n runes.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
