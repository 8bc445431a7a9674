package liteagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// SessionOptions adjusts NewSession and OpenSession. Nil means defaults.
type SessionOptions struct {
	// Workdir is where the session's tools run. NewSession: default the
	// agent's Options.Workdir. OpenSession: the workdir recorded in the
	// session's log is used; a Workdir given here must name the same
	// directory (else a *WorkdirError, nothing written), unless Retarget.
	Workdir string
	// Retarget makes OpenSession move the session to Workdir when its log
	// records another one, on purpose: the move is appended to the log as
	// workdir_changed (see Agent.Retarget).
	Retarget bool
	// OnBackground receives the updates of the work the session does by
	// itself, outside any Send: background completion turns and the ends of
	// background jobs recorded between turns. It is called in order, from
	// the agent's goroutine that does that work; it must not call back into
	// the Session.
	OnBackground func(Update)
}

// SendOptions adjusts one Send. Nil means defaults.
type SendOptions struct {
	// OnUpdate receives the turn's updates (streaming deltas, events as
	// they are appended, approvals asked), in order, from the goroutine
	// that runs the turn; every call returns before Send does. It must not
	// call back into the Session. Agent.Subscribe receives them too.
	OnUpdate func(Update)
}

// Session is one conversation: its log, its workdir, the tools approved for
// it, the user's goal, its background jobs and its task list. Its methods
// are safe for concurrent use; Sends on one Session run one at a time, and
// Sends on different Sessions of one Agent run in parallel.
//
// A new Session writes nothing until its first Send creates its log.
type Session struct {
	a         *Agent
	root      *tool.Root
	ownRoot   bool
	namespace string
	tools     map[string]tool.Tool // changed only while holding the turn (MCP tools are synced before each model call)
	specs     []provider.ToolSpec
	baseTools []tool.Tool // the tools that are not MCP servers'
	mcp       *mcpServers // the session's own MCP servers (mcp.ServerConfig.PerSession)

	turn     chan struct{}   // one turn at a time
	held     []session.Event // events the next durable append carries (see hold); only the turn's goroutine uses it
	closing  context.Context
	stop     context.CancelFunc
	inflight sync.WaitGroup

	mu           sync.Mutex // guards the fields below
	id           string
	head         int64
	state        *session.State
	foldSeq      int64           // the seq of the fold the store keeps of state (see saveFold)
	allowed      map[string]bool // tools approved for the session
	pendingModel string          // SetModel's model before the log exists
	goal         string          // the prompt that started the current work
	inBackground bool            // the running turn is a background completion turn
	onUpdate     func(Update)    // the running Send's OnUpdate
	onBackground func(Update)    // SessionOptions.OnBackground
	closed       bool
	detached     bool // the agent let go of it: no completion turns
	rootOnce     sync.Once

	watch shellWatch // the workdir's latest manifest (shellwatch.go)
}

// NewSession returns a new conversation. Its id is allocated now; its log
// is created by its first Send, so an unused Session leaves nothing behind.
func (a *Agent) NewSession(ctx context.Context, opts *SessionOptions) (*Session, error) {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	if err := a.open(); err != nil {
		return nil, err
	}
	s, err := a.newSession(NewSessionID(), o.Workdir, true)
	if err != nil {
		return nil, err
	}
	s.state, s.onBackground = &session.State{}, o.OnBackground
	return s, nil
}

// OpenSession opens stored session id to go on with it. Its workdir comes
// from its log (falling back to the agent's when the recorded directory no
// longer exists); see SessionOptions for naming another. A session with
// recovery hazards opens, but Send refuses to go on until they are
// acknowledged.
func (a *Agent) OpenSession(ctx context.Context, id string, opts *SessionOptions) (*Session, error) {
	var o SessionOptions
	if opts != nil {
		o = *opts
	}
	if err := a.requirePersistent(); err != nil {
		return nil, err
	}
	if err := a.open(); err != nil {
		return nil, err
	}
	st, foldSeq, err := a.load(ctx, id, true)
	if err != nil {
		return nil, err
	}
	if st.Summary.Kind != "" {
		return nil, fmt.Errorf("open session %s: it is a %s log, not a conversation", id, st.Summary.Kind)
	}
	if err := a.checkRestoring(ctx, id, st); err != nil {
		return nil, err
	}
	dir, err := sessionWorkdir(id, st.Summary.Workdir, o)
	if err != nil {
		return nil, err
	}
	if recorded := st.Summary.Workdir; o.Retarget && dir != "" && recorded != "" && dir != recorded {
		ev, err := a.recordRetarget(ctx, id, st.Summary.Head, recorded, dir)
		if err != nil {
			return nil, err
		}
		st.Apply(ev)
	}
	s, err := a.newSession(id, dir, false)
	if err != nil {
		return nil, err
	}
	if ns := st.Summary.Namespace; ns != "" {
		s.namespace = ns
	}
	s.head, s.state, s.foldSeq = st.Summary.Head, st, foldSeq
	s.onBackground = o.OnBackground
	return s, nil
}

// sessionWorkdir decides where an opened session runs: where its log says,
// unless the caller names another directory. Naming another is refused
// with a *WorkdirError unless o.Retarget. "" means the agent's workdir
// (the log names none, or its directory is gone).
func sessionWorkdir(id, recorded string, o SessionOptions) (string, error) {
	if o.Workdir != "" {
		want, err := tool.Canonical(o.Workdir)
		if err != nil {
			return "", fmt.Errorf("workdir %s: %w", o.Workdir, err)
		}
		if o.Retarget || recorded == "" || want == recorded {
			return want, nil
		}
		return "", &WorkdirError{Session: id, Recorded: recorded, Workdir: want}
	}
	if recorded == "" {
		return "", nil
	}
	if fi, err := os.Stat(recorded); err != nil || !fi.IsDir() {
		return "", nil
	}
	return recorded, nil
}

// newSession builds a Session of the agent in dir ("" or the agent's
// workdir share the agent's root) and registers it.
func (a *Agent) newSession(id, dir string, fresh bool) (*Session, error) {
	s := &Session{a: a, id: id, root: a.root, namespace: a.namespace, turn: make(chan struct{}, 1), allowed: map[string]bool{}}
	if dir != "" {
		canon, err := tool.Canonical(dir)
		if err != nil {
			return nil, fmt.Errorf("workdir %s: %w", dir, err)
		}
		if canon != a.root.Dir() {
			root, err := tool.OpenRoot(canon, a.opts.AllowPaths...)
			if err != nil {
				return nil, err
			}
			s.root, s.ownRoot = root, true
			if fresh && a.opts.Namespace == "" {
				s.namespace = root.Dir()
			}
		}
	}
	if err := s.assembleTools(); err != nil {
		s.releaseRoot()
		return nil, err
	}
	s.closing, s.stop = context.WithCancel(context.Background())
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isClosed {
		s.releaseRoot()
		return nil, ErrClosed
	}
	a.sessions[s] = struct{}{}
	s.mcp = startServers(s.closing, a.opts.MCPServers, a.opts.MCPOptions, true)
	return s, nil
}

// assembleTools builds the session's tool set: the agent's tools with the
// session's own bound to it (see withSessionTools). This is the one place
// a session's tools are put together.
func (s *Session) assembleTools() error {
	tools := s.a.opts.Tools
	if tools == nil {
		tools = defaultTools()
	}
	s.tools = map[string]tool.Tool{}
	for _, t := range s.withSessionTools(tools) {
		sp := t.Spec()
		if _, dup := s.tools[sp.Name]; dup {
			return fmt.Errorf("two tools are named %q", sp.Name)
		}
		s.tools[sp.Name] = t
		s.specs = append(s.specs, specOf(t))
		s.baseTools = append(s.baseTools, t)
	}
	return nil
}

// releaseRoot closes the session's own root, once.
func (s *Session) releaseRoot() {
	if s.ownRoot {
		s.rootOnce.Do(func() { s.root.Close() })
	}
}

// ID returns the session's id. A new Session's log does not exist until
// its first Send.
func (s *Session) ID() string { return s.id }

// Workdir returns the canonical directory the session's tools run in.
func (s *Session) Workdir() string { return s.root.Dir() }

// Head returns the session's head (its last seq); 0 before its log exists.
func (s *Session) Head() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head
}

// Send appends prompt to the session and runs the turn: model calls and
// tool calls until the model stops. Every step is appended to the log
// before the next one starts. Cancelling ctx stops the model stream and
// running tools; the log then ends the turn with turn_interrupted and Send
// returns ctx's error. Updates go to opts.OnUpdate before Send returns.
func (s *Session) Send(ctx context.Context, prompt string, opts *SendOptions) (*Result, error) {
	if s.a.opts.Provider == nil {
		return nil, ErrNoProvider
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, errors.New("empty prompt")
	}
	ctx, release, err := s.beginTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if opts != nil && opts.OnUpdate != nil {
		s.mu.Lock()
		s.onUpdate = opts.OnUpdate
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.onUpdate = nil
			s.mu.Unlock()
		}()
	}
	return s.turnLocked(ctx, prompt, false)
}

// enter registers a call that must finish before Close returns, and
// returns a context cancelled when ctx is, or when the session or the
// agent starts closing.
func (s *Session) enter(ctx context.Context) (context.Context, func(), error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, ErrSessionClosed
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	ctx, leaveAgent, err := s.a.enter(ctx)
	if err != nil {
		s.inflight.Done()
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.closing, cancel)
	return ctx, func() { stop(); cancel(); leaveAgent(); s.inflight.Done() }, nil
}

// lockTurn waits until no turn of the session runs; the returned function
// releases it.
func (s *Session) lockTurn(ctx context.Context) (func(), error) {
	select {
	case s.turn <- struct{}{}:
		return func() { <-s.turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// publish hands an update to the running Send's OnUpdate (outside a Send,
// to OnBackground) and to the agent's subscribers. Only the goroutine
// holding the turn calls it.
func (s *Session) publish(u Update) {
	s.mu.Lock()
	f := s.onUpdate
	if f == nil {
		f = s.onBackground
	}
	s.mu.Unlock()
	if f != nil {
		f(u)
	}
	s.a.hub.publish(u)
}

// Hazards returns the session's interrupted tool calls, and the background
// jobs a process that died left running.
func (s *Session) Hazards() []session.Hazard {
	s.mu.Lock()
	hz := s.state.Hazards()
	s.mu.Unlock()
	return s.a.withoutLive(s.id, hz)
}

// Acknowledge records that the user reviewed the interrupted tool calls
// with these review tokens. The model is then told their outcome is
// unknown and that they were not re-run. An unknown token is an error and
// nothing is recorded. Temporary files the interrupted writes left beside
// their files (".NAME.lite-agent-*.tmp") are removed.
func (s *Session) Acknowledge(ctx context.Context, tokens ...string) error {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.a.refuseLive(ctx, s.id); err != nil {
		return err // its calls are running, not cut off
	}
	var ack session.RecoveryAcknowledged
	var acked []session.Hazard
	hazards := s.Hazards()
	for _, tok := range tokens {
		i := slices.IndexFunc(hazards, func(h session.Hazard) bool { return h.Token == tok })
		if i < 0 {
			var known []string
			for _, h := range hazards {
				known = append(known, h.Token)
			}
			return fmt.Errorf("review token %q does not name an interrupted tool call of session %s (open tokens: %s)", tok, s.id, strings.Join(known, ", "))
		}
		ack.Tokens = append(ack.Tokens, tok)
		acked = append(acked, hazards[i])
		// A background job's call already has its result: only the token
		// closes the job.
		if hazards[i].Job == "" {
			ack.CallIDs = append(ack.CallIDs, hazards[i].CallID)
		}
	}
	if len(ack.Tokens) == 0 {
		return errors.New("no review token given")
	}
	if err := s.append(ctx, mustEvent(session.TypeRecoveryAcknowledged, ack)); err != nil {
		return err
	}
	s.clearStrays(acked)
	return nil
}

// Tasks returns the task list the session works with: the shared list
// Options.TaskList names, or else the session's private list.
func (s *Session) Tasks(ctx context.Context) (*session.TaskList, error) {
	return s.a.Tasks(ctx, s.id)
}

// UpdateTasks applies u to the session's task list (see Tasks) and
// returns the list after it.
func (s *Session) UpdateTasks(ctx context.Context, u session.TasksUpdated) (*session.TaskList, error) {
	return s.a.UpdateTasks(ctx, s.id, u)
}

// Jobs lists the session's background jobs, running and recently ended,
// oldest first.
func (s *Session) Jobs() []JobInfo {
	return jobInfos(s.a.jobs.OfSession(s.id))
}

// WaitJobs waits until no background job of the session runs and every
// completion turn their ends started has finished, and returns the results
// of those turns since the previous call (see Agent.WaitJobs).
func (s *Session) WaitJobs(ctx context.Context) ([]*Result, error) {
	return s.a.waitJobs(ctx, s.id)
}

// Close ends the session: a running turn is cancelled (its end recorded),
// its background jobs are stopped and their ends recorded. The log stays;
// OpenSession goes on with it. Close is safe to call more than once; the
// Session's other methods then return ErrSessionClosed.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.inflight.Wait()
	err := errors.Join(s.a.stopSessionJobs(s), s.mcp.close())
	s.watch.close()
	s.a.forget(s)
	s.releaseRoot()
	return err
}

// live reports whether completion turns may run in the session.
func (s *Session) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && !s.detached
}

// append writes the held events (see hold) and events at the session's
// head, in one durable append, and folds them into its state. Only the
// goroutine holding the turn calls it.
func (s *Session) append(ctx context.Context, events ...session.Event) error {
	held := s.held
	if len(held) > 0 {
		events = append(held[:len(held):len(held)], events...)
		s.held = nil
	}
	s.mu.Lock()
	id, head := s.id, s.head
	var first []session.Event
	if head == 0 {
		first = s.firstEvents(id)
	}
	s.mu.Unlock()
	if head == 0 {
		events = append(first, events...)
	}
	newHead, err := s.a.store.Append(ctx, id, head, events)
	if err != nil {
		s.held = held // still to be written: turn_interrupted carries them
		if head == 0 {
			return fmt.Errorf("create session: %w", err)
		}
		return &AppendError{Session: id, Err: err, Holder: s.a.liveHolder(ctx, id)}
	}
	s.mu.Lock()
	for i := range events {
		events[i].Seq = head + int64(i) + 1
		s.state.Apply(events[i])
	}
	s.head = newHead
	s.pendingModel = "" // in the log now, if it was set
	s.mu.Unlock()
	for i := range events {
		s.publish(Update{Session: id, Event: &events[i]})
	}
	s.saveFold(ctx, events[len(events)-1])
	return nil
}

// saveFold saves the session's state as the store's fold of its log
// (checkpoint.FoldKeeper) when last, the event just appended, ends a turn
// and checkpoint.FoldEvery events or more came after the fold kept, so
// that a resume replays only what follows. The fold is derived and not
// durable: a store without folds, or one that fails to save, changes
// nothing (the next resume replays more). Only the goroutine holding the
// turn calls it.
func (s *Session) saveFold(ctx context.Context, last session.Event) {
	if last.Type != session.TypeTurnCompleted && last.Type != session.TypeTurnInterrupted {
		return
	}
	fk, ok := s.a.store.(checkpoint.FoldKeeper)
	if !ok {
		return
	}
	s.mu.Lock()
	if s.head-s.foldSeq < checkpoint.FoldEvery || last.Seq != s.head {
		s.mu.Unlock()
		return
	}
	f, err := checkpoint.NewFold(s.state, last)
	id := s.id
	s.mu.Unlock()
	if err != nil || fk.SaveFold(context.WithoutCancel(ctx), id, f) != nil {
		return
	}
	s.mu.Lock()
	s.foldSeq = max(s.foldSeq, f.Seq)
	s.mu.Unlock()
}

// reload replays the session's log again, after a restore rewrote it. The
// caller holds the turn.
func (s *Session) reload(ctx context.Context) error {
	st, foldSeq, err := s.a.load(ctx, s.id, true)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.head, s.state, s.foldSeq = st.Summary.Head, st, foldSeq
	s.mu.Unlock()
	return nil
}

// beginTurn enters the session (ctx ends when it closes) and takes its
// turn lock; release undoes both.
func (s *Session) beginTurn(ctx context.Context) (context.Context, func(), error) {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := s.lockTurn(ctx)
	if err != nil {
		leave()
		return nil, nil, err
	}
	return ctx, func() { unlock(); leave() }, nil
}
