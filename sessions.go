package liteagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// lockTurn waits until no turn runs; the returned function releases it.
func (a *Agent) lockTurn(ctx context.Context) (func(), error) {
	select {
	case a.turn <- struct{}{}:
		return func() { <-a.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensureSession creates the current session on first use.
func (a *Agent) ensureSession(ctx context.Context) error {
	a.mu.Lock()
	if a.id != "" {
		a.mu.Unlock()
		return nil
	}
	a.mu.Unlock()
	id := NewSessionID()
	start := mustEvent(session.TypeSessionStarted, session.SessionStarted{
		ID: id, Namespace: a.namespace, Workdir: a.root.Dir(),
		Provider: providerName(a), Model: a.opts.Model,
	})
	head, err := a.store.Append(ctx, id, 0, []session.Event{start})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	start.Seq = head
	st := &session.State{}
	st.Apply(start)
	a.mu.Lock()
	a.id, a.head, a.state, a.jobLog = id, head, st, jobLog{}
	clear(a.allowed)
	a.mu.Unlock()
	a.hub.publish(Update{Session: id, Event: &start})
	return nil
}

func providerName(a *Agent) string {
	if a.opts.Provider == nil {
		return ""
	}
	return a.opts.Provider.Name()
}

func (a *Agent) current() *session.State {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state
}

// Head returns the current session's head (its last seq), 0 without one.
func (a *Agent) Head() int64 { return a.headNow() }

func (a *Agent) headNow() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.head
}

// append writes events to the current session at its head and folds them
// into the state. Only the goroutine holding the turn calls it.
func (a *Agent) append(ctx context.Context, events ...session.Event) error {
	a.mu.Lock()
	id, head := a.id, a.head
	a.mu.Unlock()
	newHead, err := a.store.Append(ctx, id, head, events)
	if err != nil {
		if checkpoint.IsConflict(err) {
			return fmt.Errorf("session %s is being written by another agent or process at the same time; this turn stopped to keep the log whole (resume the session again to continue): %w", id, err)
		}
		return fmt.Errorf("append to session %s: %w", id, err)
	}
	a.mu.Lock()
	for i := range events {
		events[i].Seq = head + int64(i) + 1
		a.state.Apply(events[i])
		a.jobLog.apply(events[i])
	}
	a.head = newHead
	a.mu.Unlock()
	for i := range events {
		a.hub.publish(Update{Session: id, Event: &events[i]})
	}
	return nil
}

// ListSessions lists the sessions of the agent's namespace, most recently
// updated first.
func (a *Agent) ListSessions(ctx context.Context) ([]session.Summary, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	return a.store.List(ctx, a.namespace, checkpoint.ListOptions{})
}

// FindSession resolves a handle, a full session id or a unique prefix of
// one in this namespace, to a session id. An unknown or ambiguous handle is
// a *LookupError.
func (a *Agent) FindSession(ctx context.Context, handle string) (string, error) {
	if err := a.requirePersistent(); err != nil {
		return "", err
	}
	handle = strings.TrimSpace(handle)
	if handle == "" {
		return "", &LookupError{Handle: handle}
	}
	if s, err := a.store.Head(ctx, handle); err == nil {
		return s.ID, nil
	} else if !errors.Is(err, checkpoint.ErrNotFound) {
		return "", err
	}
	all, err := a.store.List(ctx, a.namespace, checkpoint.ListOptions{})
	if err != nil {
		return "", err
	}
	var matches []string
	for _, s := range all {
		if strings.HasPrefix(s.ID, handle) {
			matches = append(matches, s.ID)
		}
	}
	if len(matches) != 1 {
		return "", &LookupError{Handle: handle, Candidates: matches}
	}
	return matches[0], nil
}

// Resume makes session id the current session: the next Send continues its
// conversation. A session with recovery hazards loads, but Send refuses to
// go on until they are acknowledged (see Acknowledge).
func (a *Agent) Resume(ctx context.Context, id string) error {
	if err := a.requirePersistent(); err != nil {
		return err
	}
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	unlock, err := a.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	st, jl, err := a.replay(ctx, id)
	if err != nil {
		return err
	}
	if st.Summary.Kind != "" {
		return fmt.Errorf("resume %s: it is a %s log, not a conversation", id, st.Summary.Kind)
	}
	if err := a.checkResumable(ctx, id, st); err != nil {
		return err
	}
	a.mu.Lock()
	a.id, a.head, a.state, a.jobLog = id, st.Summary.Head, st, *jl
	clear(a.allowed)
	a.goal = ""
	a.mu.Unlock()
	return nil
}

// New starts a fresh session on the next Send.
func (a *Agent) NewSession() {
	a.mu.Lock()
	a.id, a.head, a.state, a.goal, a.jobLog = "", 0, nil, "", jobLog{}
	clear(a.allowed)
	a.mu.Unlock()
}

// load replays a session's whole log.
func (a *Agent) load(ctx context.Context, id string) (*session.State, error) {
	st, _, err := a.replay(ctx, id)
	return st, err
}

// replay replays a session's whole log into its state and the fold of its
// background jobs.
func (a *Agent) replay(ctx context.Context, id string) (*session.State, *jobLog, error) {
	st, jl := &session.State{}, &jobLog{}
	for e, err := range a.store.Read(ctx, id, 1) {
		if err != nil {
			return nil, nil, fmt.Errorf("load session %s: %w", id, err)
		}
		st.Apply(e)
		jl.apply(e)
	}
	return st, jl, nil
}

// Hazards returns the current session's interrupted tool calls, and the
// background jobs a process that died left running.
func (a *Agent) Hazards() []session.Hazard {
	return a.currentHazards()
}

// Acknowledge records that the user reviewed the interrupted tool calls
// with these review tokens. The model is then told their outcome is unknown
// and that they were not re-run. An unknown token is an error and nothing
// is recorded.
func (a *Agent) Acknowledge(ctx context.Context, tokens ...string) error {
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	unlock, err := a.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	st := a.current()
	if st == nil {
		return ErrNoSession
	}
	var ack session.RecoveryAcknowledged
	hazards := a.currentHazards()
	for _, tok := range tokens {
		i := slices.IndexFunc(hazards, func(h session.Hazard) bool { return h.Token == tok })
		if i < 0 {
			var known []string
			for _, h := range hazards {
				known = append(known, h.Token)
			}
			return fmt.Errorf("review token %q does not name an interrupted tool call of session %s (open tokens: %s)", tok, a.SessionID(), strings.Join(known, ", "))
		}
		ack.Tokens = append(ack.Tokens, tok)
		// A background job's call already has its result: only the token
		// closes the job.
		if !a.isJobToken(tok) {
			ack.CallIDs = append(ack.CallIDs, hazards[i].CallID)
		}
	}
	if len(ack.Tokens) == 0 {
		return errors.New("no review token given")
	}
	return a.append(ctx, mustEvent(session.TypeRecoveryAcknowledged, ack))
}

// Info is a session's saved state, as inspection shows it.
type Info struct {
	session.Summary
	Checkpoints []session.Checkpoint `json:"checkpoints"`
	Hazards     []session.Hazard     `json:"hazards"`
	Usage       session.Usage        `json:"usage"`
	// InstructionFiles are the instruction files the recorded project
	// context was read from, in the order the model was given them.
	InstructionFiles []session.ContextFile `json:"instruction_files"`
}

// SessionInfo reads a session's log and returns its saved state,
// checkpoints and recovery hazards. It writes nothing.
func (a *Agent) SessionInfo(ctx context.Context, id string) (*Info, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	st, jl, err := a.replay(ctx, id)
	if err != nil {
		return nil, err
	}
	hz := append(slices.Clone(st.Hazards()), a.jobHazards(id, jl.open)...)
	info := &Info{Summary: st.Summary, Checkpoints: st.Checkpoints(), Hazards: hz, Usage: st.Usage}
	if pc := st.ProjectContext(); pc != nil {
		info.InstructionFiles = pc.Files
	}
	return info, nil
}

// DeleteSession removes a session's log and what is private to it: its
// private task list, and its background jobs (stopped). Shared task lists
// remain. The current session cannot be deleted while a turn runs; deleting
// it makes the next Send start a new session. The private list goes first,
// so a delete cut short is finished by repeating it.
func (a *Agent) DeleteSession(ctx context.Context, id string) error {
	if err := a.requirePersistent(); err != nil {
		return err
	}
	unlock, err := a.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	sum, err := a.store.Head(ctx, id)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if sum.Kind != "" {
		return fmt.Errorf("delete session %s: it is a %s log, not a conversation; it goes with the session that owns it", id, sum.Kind)
	}
	a.stopJobsOf(id)
	if err := a.deleteTaskList(ctx, PrivateTaskListID(id)); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if err := a.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if a.SessionID() == id {
		a.NewSession()
	}
	return nil
}

// readFile reads a path (as tool.Root.Rel returns it) through the confined
// root and returns its content and permission bits. Anything that is not a
// regular file (a directory, a FIFO, a device) is an error, found without
// blocking.
func readFile(root *tool.Root, rel string) ([]byte, uint32, error) {
	loc, err := root.Locate(rel)
	if err != nil {
		return nil, 0, err
	}
	data, fi, err := loc.ReadRegular()
	if err != nil {
		return nil, 0, err
	}
	return data, uint32(fi.Mode().Perm()), nil
}
