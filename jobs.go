package liteagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/jobs"
	"github.com/lite-agent/lite-agent/session"
)

// Background jobs.
//
// Package jobs runs them: the bash tool's background option starts a
// command through the session's jobs.Starter, which only starts and
// registers it. When the tool call returns, the session appends
// job_started with the call's tool_finished (runTool), so the log names
// every job before the model hears of it. When jobs end, the table hands
// them to their session (jobOwner.JobsEnded) once no turn runs there: it
// appends job_finished to the session's log and, when the session is
// still live and the model has not already seen the end (job_output after
// it, or job_stop), runs a background completion turn: a user_prompt
// marked Background that tells the model which job ended, how, the end of
// its output, and the user's goal (the prompt that started the work).
//
// A job_started without its job_finished whose job no live agent runs is a
// recovery hazard, like a tool cut off mid-run: the process died and the
// job may still run or may have done anything. Close stops every job (its
// whole process group) and records its end, so a clean exit leaves none.

// maxKeptResults bounds the completion results kept for WaitJobs.
const maxKeptResults = 64

// jobResults keeps the completion turns' results and errors for WaitJobs.
type jobResults struct {
	mu   sync.Mutex
	list []jobResult
}

// jobResult is a completion turn's result or error.
type jobResult struct {
	session string
	res     *Result
	err     error
}

// report keeps a completion turn's result or error.
func (r *jobResults) report(sid string, res *Result, err error) {
	if res == nil && err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, jobResult{session: sid, res: res, err: err})
	if n := len(r.list) - maxKeptResults; n > 0 {
		r.list = slices.Delete(r.list, 0, n)
	}
}

// take removes and returns the results of session sid (all with ""),
// with their errors joined.
func (r *jobResults) take(sid string) ([]*Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var res []*Result
	var errs []error
	r.list = slices.DeleteFunc(r.list, func(x jobResult) bool {
		if sid != "" && x.session != sid {
			return false
		}
		if x.res != nil {
			res = append(res, x.res)
		}
		if x.err != nil {
			errs = append(errs, x.err)
		}
		return true
	})
	return res, errors.Join(errs...)
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
func (a *Agent) Jobs() []JobInfo { return jobInfos(a.jobs.All()) }

func jobInfos(all []*jobs.Job) []JobInfo {
	out := make([]JobInfo, 0, len(all))
	for _, j := range all {
		st := j.State()
		out = append(out, JobInfo{ID: j.ID(), Session: j.Session(), Command: j.Command(), PID: j.PID(), Started: j.Started(),
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
	if err := a.jobs.Wait(ctx, sid); err != nil {
		if errors.Is(err, jobs.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, err
	}
	return a.jobResults.take(sid)
}

// jobOwner is a session as the job table's jobs.Owner.
type jobOwner struct{ s *Session }

var _ jobs.Owner = jobOwner{}

func (o jobOwner) SessionID() string {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return o.s.id
}

func (o jobOwner) JobsStarted() int {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return o.s.state.JobsStarted()
}

func (o jobOwner) Goal() string {
	o.s.mu.Lock()
	defer o.s.mu.Unlock()
	return o.s.goal
}

// JobsEnded records the ends of js and runs the completion turn when the
// session is live. It waits for a running turn of the session first.
func (o jobOwner) JobsEnded(ctx context.Context, js []*jobs.Job) error {
	s, a := o.s, o.s.a
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return err // Close records them
	}
	defer leave()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		return nil
	}
	defer unlock()
	live := s.live()
	tell, err := a.recordEnds(ctx, s, js, live)
	if err != nil {
		if ctx.Err() == nil {
			a.jobResults.report(s.id, nil, err)
		}
		return nil
	}
	if len(tell) == 0 || !live || a.opts.Provider == nil {
		return nil
	}
	res, err := s.turnLocked(ctx, jobs.CompletionPrompt(tell), true)
	if err != nil {
		err = fmt.Errorf("background completion turn: %w", err)
	}
	a.jobResults.report(s.id, res, err)
	return nil
}

// startedEvents returns the job_started events of the jobs call callID of
// session s started, and those jobs.
func (s *Session) startedEvents(callID string) ([]session.Event, []*jobs.Job) {
	js := s.a.jobs.StartedBy(s.id, callID)
	var events []session.Event
	for _, j := range js {
		events = append(events, mustEvent(session.TypeJobStarted, session.JobStarted{Job: j.ID(), CallID: callID, Command: j.Command(), PID: j.PID()}))
	}
	return events, js
}

// recordEnds appends job_finished for the jobs of js not recorded yet to
// session s's log (through its state when live, else at the stored head),
// and returns those the model should be told about. The caller holds s's
// turn.
func (a *Agent) recordEnds(ctx context.Context, s *Session, js []*jobs.Job, live bool) ([]*jobs.Job, error) {
	rec := a.jobs.Unrecorded(js)
	if len(rec) == 0 {
		return nil, nil
	}
	events := make([]session.Event, 0, len(rec)+1)
	if ev, ok := s.jobsChanged(ctx, rec); ok { // shellwatch_jobs.go
		events = append(events, ev)
	}
	for _, j := range rec {
		events = append(events, finishedEvent(j))
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
	return a.jobs.Recorded(rec), nil
}

// recordAllEnds is Close's part: after every job was stopped and every
// turn ended, it records the end of each job not recorded yet.
func (a *Agent) recordAllEnds(js []*jobs.Job) error {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	var errs []error
	for _, own := range ownedBy(js) {
		if _, err := a.recordEnds(ctx, own[0].Owner().(jobOwner).s, own, false); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	a.jobs.Processed(js...)
	return errors.Join(errs...)
}

// ownedBy splits js by owner, in order of first appearance.
func ownedBy(js []*jobs.Job) [][]*jobs.Job {
	var out [][]*jobs.Job
	for _, j := range js {
		i := slices.IndexFunc(out, func(g []*jobs.Job) bool { return g[0].Owner() == j.Owner() })
		if i < 0 {
			out = append(out, []*jobs.Job{j})
			continue
		}
		out[i] = append(out[i], j)
	}
	return out
}

// stopSessionJobs is Session.Close's part: it stops the session's running
// jobs, waits for them to end and records their ends.
func (a *Agent) stopSessionJobs(s *Session) error {
	var js []*jobs.Job
	for _, j := range a.jobs.OfSession(s.id) {
		if j.Owner() == (jobOwner{s}) {
			js = append(js, j)
		}
	}
	for _, j := range js {
		j.Stop("its session was closed")
	}
	for _, j := range js {
		<-j.Done()
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

func finishedEvent(j *jobs.Job) session.Event {
	st := j.State()
	out, _ := j.Output(jobs.NoticeTail)
	return mustEvent(session.TypeJobFinished, session.JobFinished{
		Job: j.ID(), ExitCode: st.ExitCode, Signal: st.Signal, Stopped: st.Stopped, Output: out,
		Started: j.Started().UTC().Truncate(time.Microsecond),
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

// withoutLive drops the hazards of background jobs of session sid that
// this agent runs (or whose end it has yet to record): they are running,
// not cut off.
func (a *Agent) withoutLive(sid string, hz []session.Hazard) []session.Hazard {
	return slices.DeleteFunc(slices.Clone(hz), func(h session.Hazard) bool { return h.Job != "" && a.jobs.Running(sid, h.Job) })
}
