package liteagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	a.id, a.head, a.state = id, head, st
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
	st, err := a.load(ctx, id)
	if err != nil {
		return err
	}
	if st.Summary.Kind != "" {
		return fmt.Errorf("resume %s: it is a %s log, not a conversation", id, st.Summary.Kind)
	}
	a.mu.Lock()
	a.id, a.head, a.state = id, st.Summary.Head, st
	clear(a.allowed)
	a.goal = ""
	a.mu.Unlock()
	return nil
}

// New starts a fresh session on the next Send.
func (a *Agent) NewSession() {
	a.mu.Lock()
	a.id, a.head, a.state, a.goal = "", 0, nil, ""
	clear(a.allowed)
	a.mu.Unlock()
}

// load replays a session's whole log.
func (a *Agent) load(ctx context.Context, id string) (*session.State, error) {
	st := &session.State{}
	for e, err := range a.store.Read(ctx, id, 1) {
		if err != nil {
			return nil, fmt.Errorf("load session %s: %w", id, err)
		}
		st.Apply(e)
	}
	return st, nil
}

// Hazards returns the current session's interrupted tool calls.
func (a *Agent) Hazards() []session.Hazard {
	st := a.current()
	if st == nil {
		return nil
	}
	return slices.Clone(st.Hazards())
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
	for _, tok := range tokens {
		i := slices.IndexFunc(st.Hazards(), func(h session.Hazard) bool { return h.Token == tok })
		if i < 0 {
			var known []string
			for _, h := range st.Hazards() {
				known = append(known, h.Token)
			}
			return fmt.Errorf("review token %q does not name an interrupted tool call of session %s (open tokens: %s)", tok, a.SessionID(), strings.Join(known, ", "))
		}
		ack.Tokens = append(ack.Tokens, tok)
		ack.CallIDs = append(ack.CallIDs, st.Hazards()[i].CallID)
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
}

// SessionInfo reads a session's log and returns its saved state,
// checkpoints and recovery hazards. It writes nothing.
func (a *Agent) SessionInfo(ctx context.Context, id string) (*Info, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	st, err := a.load(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Info{Summary: st.Summary, Checkpoints: st.Checkpoints(), Hazards: st.Hazards(), Usage: st.Usage}, nil
}

// DeleteSession removes a session's log and what is private to it. The
// current session cannot be deleted while a turn runs; deleting it makes the
// next Send start a new session.
func (a *Agent) DeleteSession(ctx context.Context, id string) error {
	if err := a.requirePersistent(); err != nil {
		return err
	}
	unlock, err := a.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := a.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if a.SessionID() == id {
		a.NewSession()
	}
	return nil
}

// readFile reads a path (as tool.Root.Rel returns it) through the confined
// root and returns its content and permission bits.
func readFile(root *tool.Root, rel string) ([]byte, uint32, error) {
	loc, err := root.Locate(rel)
	if err != nil {
		return nil, 0, err
	}
	fi, err := loc.FS.Stat(loc.Name)
	if err != nil {
		return nil, 0, err
	}
	if fi.IsDir() {
		return nil, 0, &fs.PathError{Op: "read", Path: rel, Err: errors.New("is a directory")}
	}
	data, err := loc.FS.ReadFile(loc.Name)
	return data, uint32(fi.Mode().Perm()), err
}
