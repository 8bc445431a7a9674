package liteagent

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// WorkdirError is returned by Resume and Restore when the session belongs to
// another workdir than the agent's. A session's recorded workdir is only
// information: the agent never follows it to another directory. Work in
// Recorded, or move the session to Workdir deliberately with Retarget.
// Nothing was written.
type WorkdirError struct {
	Session  string
	Recorded string // the session's canonical workdir, as its log records it
	Workdir  string // the agent's canonical workdir
}

func (e *WorkdirError) Error() string {
	return fmt.Sprintf("session %s belongs to workdir %s, not to this agent's workdir %s; nothing was touched: work in %s, or re-target the session to %s on purpose (the move is recorded in its log)",
		e.Session, e.Recorded, e.Workdir, e.Recorded, e.Workdir)
}

// RestoringError is returned by Resume when a restore claimed the session
// (its log ends with restore_started) and has not finished: it is running in
// another agent, or it was cut off. Re-running that restore finishes it.
type RestoringError struct {
	Session string
	ToSeq   int64
}

func (e *RestoringError) Error() string {
	return fmt.Sprintf("session %s is being restored to checkpoint %d, or a restore to it was cut off; re-run that restore to finish it before continuing the session", e.Session, e.ToSeq)
}

// checkWorkdir refuses a session whose workdir is not the agent's. A log
// without a workdir (an old one, or a task list) belongs anywhere.
func (a *Agent) checkWorkdir(sum session.Summary) error {
	if sum.Workdir == "" || sum.Workdir == a.root.Dir() {
		return nil
	}
	return &WorkdirError{Session: sum.ID, Recorded: sum.Workdir, Workdir: a.root.Dir()}
}

// Retarget moves session id to the agent's workdir on purpose: it appends a
// workdir_changed event naming the old workdir and the new one, after which
// Resume and Restore accept the session here (and refuse it in the old
// workdir). The session keeps its namespace. Retargeting a session that
// already belongs here writes nothing. It returns the workdir the session
// had. A concurrent writer makes it fail with a *checkpoint.ConflictError
// and nothing written.
func (a *Agent) Retarget(ctx context.Context, id string) (string, error) {
	if err := a.requirePersistent(); err != nil {
		return "", err
	}
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return "", err
	}
	defer leave()
	open, unlock, err := a.lockSessions(ctx, id)
	if err != nil {
		return "", err
	}
	defer unlock()
	sum, err := a.store.Head(ctx, id)
	if err != nil {
		return "", fmt.Errorf("retarget %s: %w", id, err)
	}
	if sum.Kind != "" {
		return "", fmt.Errorf("retarget %s: it is a %s log, not a conversation", id, sum.Kind)
	}
	if sum.Workdir == a.root.Dir() {
		return sum.Workdir, nil
	}
	if _, err := a.recordRetarget(ctx, id, sum.Head, sum.Workdir, a.root.Dir()); err != nil {
		return "", err
	}
	for _, s := range open {
		if err := s.reload(ctx); err != nil {
			return "", err
		}
	}
	return sum.Workdir, nil
}

// recordRetarget appends the move of session id from one workdir to
// another at head, and returns the event as appended.
func (a *Agent) recordRetarget(ctx context.Context, id string, head int64, from, to string) (session.Event, error) {
	ev := mustEvent(session.TypeWorkdirChanged, session.WorkdirChanged{From: from, To: to})
	if _, err := a.store.Append(ctx, id, head, []session.Event{ev}); err != nil {
		return ev, fmt.Errorf("retarget %s: %w", id, err)
	}
	ev.Seq = head + 1
	return ev, nil
}

// checkResumable refuses a session that belongs to another workdir, or
// that a restore has claimed.
func (a *Agent) checkResumable(ctx context.Context, id string, st *session.State) error {
	if err := a.checkWorkdir(st.Summary); err != nil {
		return err
	}
	return a.checkRestoring(ctx, id, st)
}

// checkRestoring refuses a session that a restore has claimed.
func (a *Agent) checkRestoring(ctx context.Context, id string, st *session.State) error {
	if st.Summary.Status != session.StatusRestoring {
		return nil
	}
	var last []session.Event
	for e, err := range a.store.Read(ctx, id, st.Summary.Head) {
		if err != nil {
			return fmt.Errorf("resume %s: %w", id, err)
		}
		last = append(last[:0], e)
	}
	c, _, _ := restoreClaim(last)
	a.clearRestoreStrays(c)
	return &RestoringError{Session: id, ToSeq: c.ToSeq}
}
