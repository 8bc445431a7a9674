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

func providerName(a *Agent) string {
	if a.opts.Provider == nil {
		return ""
	}
	return a.opts.Provider.Name()
}

// current returns the agent's current session; with create, a new one is
// made when there is none.
func (a *Agent) current(create bool) (*Session, error) {
	a.mu.Lock()
	s := a.cur
	a.mu.Unlock()
	if s != nil || !create {
		return s, nil
	}
	s, err := a.NewSession(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cur != nil { // another goroutine got there first
		go s.Close()
		return a.cur, nil
	}
	a.cur = s
	return s, nil
}

// Use makes s the agent's current session, the one Send, SessionID,
// Hazards and Acknowledge work on; nil makes the next Send start a new
// one. The session current before is let go: its jobs run on and their
// ends are recorded, but no completion turn starts in it any more.
func (a *Agent) Use(s *Session) {
	a.mu.Lock()
	old := a.cur
	a.cur = s
	a.mu.Unlock()
	if old != nil && old != s {
		old.mu.Lock()
		old.detached = true
		old.mu.Unlock()
		old.watch.close() // its jobs' ends are scanned whole
		a.forget(old)
	}
}

// forget drops s from the agent's open sessions.
func (a *Agent) forget(s *Session) {
	a.mu.Lock()
	delete(a.sessions, s)
	a.mu.Unlock()
}

// openSessions returns the agent's open sessions with id.
func (a *Agent) openSessions(id string) []*Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*Session
	for s := range a.sessions {
		if s.id == id {
			out = append(out, s)
		}
	}
	return out
}

// lockSessions takes the turn of every open session with id, so that none
// runs while its log is rewritten.
func (a *Agent) lockSessions(ctx context.Context, id string) ([]*Session, func(), error) {
	ss := a.openSessions(id)
	var unlocks []func()
	release := func() {
		for _, u := range unlocks {
			u()
		}
	}
	for _, s := range ss {
		u, err := s.lockTurn(ctx)
		if err != nil {
			release()
			return nil, nil, err
		}
		unlocks = append(unlocks, u)
	}
	return ss, release, nil
}

// SessionID returns the current session's id, "" before the first Send or
// Resume.
func (a *Agent) SessionID() string {
	s, _ := a.current(false)
	if s == nil || s.Head() == 0 {
		return ""
	}
	return s.id
}

// Head returns the current session's head (its last seq), 0 without one.
func (a *Agent) Head() int64 {
	s, _ := a.current(false)
	if s == nil {
		return 0
	}
	return s.Head()
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
// conversation. A session of another workdir than the agent's is refused
// with a *WorkdirError (see Retarget), one a restore claimed with a
// *RestoringError. A session with recovery hazards loads, but Send refuses
// to go on until they are acknowledged (see Acknowledge).
func (a *Agent) Resume(ctx context.Context, id string) error {
	s, err := a.OpenSession(ctx, id, &SessionOptions{Workdir: a.root.Dir()})
	if err != nil {
		return err
	}
	a.Use(s)
	return nil
}

// load replays a session's log: from its saved fold where the store keeps
// one that matches the log (checkpoint.LoadState), else the whole log. It
// returns the seq of the fold the store keeps now. With save, a long replay
// is saved as a new fold (derived, not durable; a failure to save changes
// nothing); inspection loads without it, writing nothing.
func (a *Agent) load(ctx context.Context, id string, save bool) (*session.State, int64, error) {
	st, info, err := checkpoint.LoadState(ctx, a.store, id)
	// A restore or fork of another process may cut the log while it is
	// read; the log it leaves is whole, so reading again sees it.
	for try := 0; errors.Is(err, checkpoint.ErrLogReplaced) && try < 3; try++ {
		st, info, err = checkpoint.LoadState(ctx, a.store, id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("load session %s: %w", id, err)
	}
	kept := info.From
	if save && info.Replayed >= checkpoint.FoldEvery && info.Last.Seq > 0 {
		if checkpoint.SaveState(context.WithoutCancel(ctx), a.store, id, st, info.Last) == nil {
			kept = info.Last.Seq
		}
	}
	return st, kept, nil
}

// Hazards returns the current session's interrupted tool calls, and the
// background jobs a process that died left running.
func (a *Agent) Hazards() []session.Hazard {
	s, _ := a.current(false)
	if s == nil {
		return nil
	}
	return s.Hazards()
}

// Acknowledge acknowledges hazards of the current session (see
// Session.Acknowledge).
func (a *Agent) Acknowledge(ctx context.Context, tokens ...string) error {
	s, _ := a.current(false)
	if s == nil || s.Head() == 0 {
		return ErrNoSession
	}
	return s.Acknowledge(ctx, tokens...)
}

// Info is a session's saved state, as inspection shows it.
type Info struct {
	session.Summary
	Checkpoints []session.Checkpoint `json:"checkpoints"`
	Hazards     []session.Hazard     `json:"hazards"`
	Usage       session.Usage        `json:"usage"`
	// Spend is the usage with the context share and estimated cost.
	Spend Spend `json:"spend"`
	// InstructionFiles are the instruction files the recorded project
	// context was read from, in the order the model was given them.
	InstructionFiles []session.ContextFile `json:"instruction_files"`
	// Running is the process running a turn in the session right now (a
	// live lease, see checkpoint.Leaser), nil if none or the store cannot
	// tell. The open calls of a running session are in Live, not Hazards:
	// they are running, not cut off.
	Running *checkpoint.Holder `json:"running,omitempty"`
	Live    []session.Hazard   `json:"live,omitempty"`
	// BlobBytes is the size of the blobs (content kept to undo shell
	// commands, and their manifests) the session's log names.
	BlobBytes int64 `json:"blob_bytes"`
}

// SessionInfo reads a session's log and returns its saved state,
// checkpoints and recovery hazards. It writes nothing.
func (a *Agent) SessionInfo(ctx context.Context, id string) (*Info, error) {
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	st, _, err := a.load(ctx, id, false)
	if err != nil {
		return nil, err
	}
	hz := a.withoutLive(id, st.Hazards())
	hz = a.shellHazardPaths(ctx, id, st.Summary.Workdir, hz) // restore_hazard.go
	running := a.liveHolder(ctx, id)
	hz, live := splitLive(running, hz)
	info := &Info{Summary: st.Summary, Checkpoints: st.Checkpoints(), Hazards: hz, Usage: st.Usage, Running: running, Live: live}
	info.Spend = a.Spend(st.Summary.Model, st.Usage, st.LastUsage())
	info.BlobBytes = a.sessionBlobBytes(ctx, id) // blobgc.go
	if pc := st.ProjectContext(); pc != nil {
		info.InstructionFiles = pc.Files
	}
	return info, nil
}

// DeleteSession removes a session's log and what is private to it: its
// private task list, its background jobs (stopped), and the blobs (the
// content kept to undo its shell commands) no other log names. Shared task lists
// remain. The current session cannot be deleted while a turn runs; deleting
// it makes the next Send start a new session. The private list goes first,
// so a delete cut short is finished by repeating it.
func (a *Agent) DeleteSession(ctx context.Context, id string) error {
	if err := a.requirePersistent(); err != nil {
		return err
	}
	open, unlock, err := a.lockSessions(ctx, id)
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
	a.jobs.Drop(id, "its session was deleted")
	if err := a.deleteTaskList(ctx, PrivateTaskListID(id)); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	blobs := a.sessionBlobs(ctx, id)
	if err := a.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if blobs != nil {
		// The blobs only it named go too (blobgc.go); what this misses,
		// --prune collects.
		a.collectBlobs(ctx, &checkpoint.CollectOptions{Only: blobs})
	}
	a.mu.Lock()
	cur := a.cur
	a.mu.Unlock()
	if slices.Contains(open, cur) {
		a.Use(nil)
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
