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
	all       []*job        // oldest first
	changed   chan struct{} // closed and replaced when a job is processed
	pending   []*job        // ended, waiting for the notifier
	wake      chan struct{}
	notifying bool
	wg        sync.WaitGroup // watchers and the notifier
	results   []jobResult
}

// jobResult is a completion turn's result or error, kept for WaitJobs.
type jobResult struct {
	session string
	res     *Result
	err     error
}

// job is one background job of the agent.
type job struct {
	id, session, callID, command, goal string
	owner                              *Session
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
	return a.jobInfos(all)
}

func (a *Agent) jobInfos(all []*job) []JobInfo {
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
	return a.waitJobs(ctx, "")
}

// waitJobs is WaitJobs for the jobs of session sid, or all with "".
func (a *Agent) waitJobs(ctx context.Context, sid string) ([]*Result, error) {
	for {
		t := &a.jobs
		t.mu.Lock()
		if !slices.ContainsFunc(t.all, func(j *job) bool { return !j.processed && (sid == "" || j.session == sid) }) {
			var res []*Result
			var errs []error
			t.results = slices.DeleteFunc(t.results, func(r jobResult) bool {
				if sid != "" && r.session != sid {
					return false
				}
				if r.res != nil {
					res = append(res, r.res)
				}
				if r.err != nil {
					errs = append(errs, r.err)
				}
				return true
			})
			t.mu.Unlock()
			return res, errors.Join(errs...)
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
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
	}
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
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
func (t *jobs) report(sid string, res *Result, err error) {
	if res == nil && err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.results = append(t.results, jobResult{session: sid, res: res, err: err})
	if n := len(t.results) - maxKeptResults; n > 0 {
		t.results = slices.Delete(t.results, 0, n)
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

// jobRunner is a session as the bash tool's builtin.JobRunner.
type jobRunner struct{ s *Session }

var _ builtin.JobRunner = jobRunner{}

// Adopt records the job in the session's log and watches it. It runs
// inside the tool call, so inside the turn that holds the log.
func (r jobRunner) Adopt(ctx context.Context, call tool.Call, pj *builtin.Job) (string, error) {
	s, a := r.s, r.s.a
	s.mu.Lock()
	goal, n := s.goal, s.jobLog.started
	s.mu.Unlock()
	j := &job{id: fmt.Sprintf("j%d", n+1), session: s.id, owner: s, callID: call.ID, command: pj.Command(), goal: goal, proc: pj}
	if err := a.jobs.add(j, a.notifyLoop); err != nil {
		return "", err
	}
	ev := mustEvent(session.TypeJobStarted, session.JobStarted{Job: j.id, CallID: call.ID, Command: j.command, PID: pj.PID()})
	if err := s.append(ctx, ev); err != nil {
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

// completeJobs records the ends of the queued jobs, session by session,
// and runs a completion turn in each live session for the jobs the model
// has not seen end. It waits for a running turn of the session first.
func (a *Agent) completeJobs() {
	ctx, leave, err := a.enter(context.Background())
	if err != nil {
		return
	}
	defer leave()
	a.jobs.mu.Lock()
	batch := a.jobs.pending
	a.jobs.pending = nil
	a.jobs.mu.Unlock()
	for _, owner := range ownersOf(batch) {
		var js []*job
		for _, j := range batch {
			if j.owner == owner {
				js = append(js, j)
			}
		}
		a.completeIn(ctx, owner, js)
	}
	if ctx.Err() != nil {
		// Close records what this batch did not.
		return
	}
	a.jobs.done(batch...)
}

// completeIn records the ends of js, jobs of session s, and runs the
// completion turn when s is live.
func (a *Agent) completeIn(ctx context.Context, s *Session, js []*job) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		return
	}
	defer unlock()
	live := s.live()
	tell, err := a.recordEnds(ctx, s, js, live)
	if err != nil {
		if ctx.Err() == nil {
			a.jobs.report(s.id, nil, err)
		}
		return
	}
	if len(tell) == 0 || !live || a.opts.Provider == nil {
		return
	}
	res, err := s.turnLocked(ctx, completionPrompt(tell), true)
	if err != nil {
		err = fmt.Errorf("background completion turn: %w", err)
	}
	a.jobs.report(s.id, res, err)
}

// recordEnds appends job_finished for the jobs of js not recorded yet to
// session s's log (through its state when live, else at the stored head),
// and returns those the model should be told about. The caller holds s's
// turn.
func (a *Agent) recordEnds(ctx context.Context, s *Session, js []*job, live bool) ([]*job, error) {
	var rec []*job
	var events []session.Event
	a.jobs.mu.Lock()
	for _, j := range js {
		if !j.dropped && !j.recorded {
			rec = append(rec, j)
			events = append(events, finishedEvent(j))
		}
	}
	a.jobs.mu.Unlock()
	if len(events) == 0 {
		return nil, nil
	}
	var err error
	if live {
		err = s.append(ctx, events...)
	} else {
		err = a.appendAt(ctx, s.id, events)
	}
	if err != nil {
		return nil, fmt.Errorf("record the end of background jobs of session %s: %w", s.id, err)
	}
	var tell []*job
	a.jobs.mu.Lock()
	for _, j := range rec {
		j.recorded = true
		if !j.seen {
			tell = append(tell, j)
		}
	}
	a.jobs.mu.Unlock()
	return tell, nil
}

// recordAllEnds is Close's part: after every job was stopped and every
// turn ended, it records the end of each job not recorded yet.
func (a *Agent) recordAllEnds(js []*job) error {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	var errs []error
	for _, owner := range ownersOf(js) {
		var own []*job
		for _, j := range js {
			if j.owner == owner {
				own = append(own, j)
			}
		}
		if _, err := a.recordEnds(ctx, owner, own, false); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	a.jobs.done(js...)
	return errors.Join(errs...)
}

// stopSessionJobs is Session.Close's part: it stops the session's running
// jobs, waits for them to end and records their ends.
func (a *Agent) stopSessionJobs(s *Session) error {
	var js []*job
	for _, j := range a.jobs.ofSession(s.id) {
		if j.owner == s {
			js = append(js, j)
		}
	}
	for _, j := range js {
		j.proc.Stop("its session was closed")
	}
	for _, j := range js {
		<-j.proc.Done()
	}
	if len(js) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	_, err = a.recordEnds(ctx, s, js, false)
	return err
}

// ownersOf returns the sessions of js, in order of first appearance.
func ownersOf(js []*job) []*Session {
	var out []*Session
	for _, j := range js {
		if !slices.Contains(out, j.owner) {
			out = append(out, j.owner)
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

// appendAt appends events to session sid's log at its stored head,
// retrying when another writer moved it.
func (a *Agent) appendAt(ctx context.Context, sid string, events []session.Event) error {
	for attempt := 1; ; attempt++ {
		h, err := a.store.Head(ctx, sid)
		if err != nil {
			return err
		}
		if _, err = a.store.Append(ctx, sid, h.Head, events); err == nil || !checkpoint.IsConflict(err) || attempt == 10 {
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

// short returns s on one line, cut to n runes.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
