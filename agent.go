package liteagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/jobs"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/models"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// Options configures an Agent. The zero value (or nil) gives an agent in
// the current directory, with the built-in tools and sessions persisted by
// the file checkpointer under StateDir(); it needs a Provider to Send.
type Options struct {
	// Provider is the model API. Without one the agent can list, inspect,
	// fork and restore sessions but not Send.
	Provider provider.Provider
	// Model is the model name sent to the provider.
	Model string
	// System is the system prompt; empty gives DefaultSystemPrompt.
	System string
	// Workdir is where tools run; default the current directory. Tools
	// cannot reach outside it, except into AllowPaths.
	Workdir    string
	AllowPaths []string
	// Checkpointer stores sessions. Nil: a file checkpointer under
	// StateDir(), created by the first write (New writes nothing) and
	// closed by Close. A checkpointer passed here is the caller's to close,
	// after the agent.
	Checkpointer checkpoint.Checkpointer
	// DisableSessions keeps the conversation in memory only: nothing is
	// written anywhere, and ListSessions, Resume, ListCheckpoints, Restore,
	// Fork and DeleteSession return ErrSessionsDisabled. A Checkpointer
	// given explicitly overrides it.
	DisableSessions bool
	// Namespace groups sessions for listing; default the canonical workdir.
	Namespace string
	// TaskList names a task list shared by every session (of any agent or
	// process) of the namespace that names it; "" gives each session a
	// private list, deleted with it. See CheckTaskListName for the names
	// allowed.
	TaskList string
	// Tools the model may call; nil means builtin.All(). The agent adds its
	// own: the todo tool (unless a tool is named todo), and, when a
	// builtin.Bash is given without Jobs, job_output and job_stop, with the
	// agent running that bash's background jobs.
	Tools []tool.Tool
	// Approve decides on tool calls that change files or run commands.
	// Nil approves everything: set it for untrusted models.
	Approve ApprovalFunc
	// Permissions, when set, decides first, on every call (reads too): a
	// rule's allow runs the call without asking, its deny refuses it and
	// tells the model why, its ask sends the call to Approve even when
	// the tool was allowed for the session (with Approve nil, an ask
	// denies). Calls no rule covers go to Approve as before. Each
	// decision a rule takes is recorded as a permission_decided event.
	// The engine is the caller's; rules may be added to it while the
	// agent runs.
	Permissions *permission.Engine
	// Input answers questions the model asks the user (the ask_user tool,
	// offered only when Input is set).
	Input InputFunc
	// MaxModelCalls caps model calls per Send (default 50).
	MaxModelCalls int
	// MaxTokens caps each model response (0: the provider's default).
	MaxTokens int
	// ProjectContext replaces how the project context (environment and
	// instruction files) is built; nil means DefaultContext. It is built
	// once per session and recorded in its log.
	ProjectContext ContextFunc
	// NoProjectContext leaves the project context out: the system prompt
	// is System alone.
	NoProjectContext bool
	// ModelTitles asks the model for a short title of each new session, in
	// one small request (provider.TitleSystem) sent alongside the first
	// model call, and records it as a session_titled event when the first
	// turn ends. Until then, and without it, a session's title is its first
	// prompt. The command line turns it on.
	ModelTitles bool
	// MCPServers are Model Context Protocol servers whose tools the model
	// may call, as mcp__<server>__<tool>; they always ask Approve. New
	// starts them all at once in the background; a turn waits for their
	// start (each bounded by its Timeout); one that fails is left out and
	// reported by Agent.MCP. Close stops them. Their env and headers are
	// never written to a session log.
	MCPServers []mcp.ServerConfig
	// MCPOptions tunes the servers' start and stop; nil gives the defaults.
	MCPOptions *mcp.Options
	// Models adds to or overrides the built-in table of context windows
	// and prices (see package models).
	Models models.Table
	// ContextWindow overrides the model's context window, in tokens; 0
	// takes it from the model table (a model it does not know is then
	// compacted only when the provider says the context is too long).
	ContextWindow int
	// CompactAt is the share of the context window a request may fill
	// before the session is compacted first; 0 means DefaultCompactAt,
	// negative means never automatically.
	CompactAt float64
	// ThinkingBudget, when positive, turns on extended thinking with this
	// many tokens (Anthropic; at least 1024). The thinking is kept in the
	// log with its signature and sent back during tool use.
	ThinkingBudget int
	// ReasoningEffort ("low", "medium", "high") is sent to OpenAI-compatible
	// servers that take it.
	ReasoningEffort string
}

// DefaultSystemPrompt is the system prompt used when Options.System is empty.
const DefaultSystemPrompt = "You are lite-agent, a careful coding agent working in the user's workdir. Use the tools to read, search and change files and to run commands. Keep changes minimal and explain what you did."

// Decision is an approval handler's answer.
type Decision int

// Decisions.
const (
	Deny         Decision = iota // do not run the call; the model is told it was denied
	AllowOnce                    // run this call
	AllowSession                 // run this call and every later call of the same tool in this agent
)

// ApprovalRequest describes a tool call waiting for approval.
type ApprovalRequest struct {
	Session string
	CallID  string
	Tool    string
	Kind    tool.Kind
	Input   json.RawMessage
	Paths   []string // files the call will change, where known
	// Diff is the change the call would make, as a unified diff, for tools
	// that can tell before they run (write, edit; see tool.Previewer).
	Diff string
	// Background is set when the call comes from a background completion
	// turn (a job ended while no prompt ran): no user is waiting on it, so
	// an interactive client may want to ask differently, or deny.
	Background bool
	// Server names the MCP server of an MCP tool (Kind tool.KindMCP);
	// Input then holds the arguments sent to it.
	Server string
	// ReadOnly is set when the tool says it only reads (an MCP
	// annotation): the server's claim, which a rule may trust.
	ReadOnly bool
}

// ApprovalFunc decides on a tool call. It must return when ctx is done
// (the turn was cancelled or the agent closed), dismissing any prompt.
type ApprovalFunc func(ctx context.Context, req ApprovalRequest) (Decision, error)

// Agent holds the configuration (provider, tools, store) and manages
// stored sessions: list, info, find, fork, restore, delete, events,
// checkpoints. Conversations are Sessions (NewSession, OpenSession); many
// run at once on one Agent. For the simple case the agent keeps a current
// session: Send, Resume and SessionID work on it. Its methods are safe for
// concurrent use.
type Agent struct {
	opts      Options
	store     checkpoint.Checkpointer
	ownStore  bool
	persist   bool
	namespace string
	root      *tool.Root
	mcp       *mcpServers // the MCP servers, shared by the agent's sessions
	hub       hub
	models    models.Table

	closing   context.Context // done when Close starts
	stopAll   context.CancelFunc
	inflight  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex // guards the fields below
	cur      *Session   // the current session, nil before the first Send or Resume
	sessions map[*Session]struct{}
	isClosed bool

	jobs       *jobs.Table // background jobs; has its own lock
	jobResults jobResults  // completion turns' results for WaitJobs
}

// New creates an agent. It writes nothing until the first Send.
func New(opts *Options) (*Agent, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Workdir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workdir: %w", err)
		}
		o.Workdir = wd
	}
	if o.MaxModelCalls <= 0 {
		o.MaxModelCalls = 50
	}
	if o.System == "" {
		o.System = DefaultSystemPrompt
	}
	if o.CompactAt == 0 {
		o.CompactAt = DefaultCompactAt
	}
	if o.CompactAt >= 1 {
		return nil, fmt.Errorf("CompactAt %.2f is not a share of the context window: use a value between 0 and 1 (0 for the default %.2f, negative for never)", o.CompactAt, DefaultCompactAt)
	}
	if o.ThinkingBudget < 0 || o.ContextWindow < 0 {
		return nil, errors.New("ThinkingBudget and ContextWindow must not be negative (0 means off / from the model table)")
	}
	if o.TaskList != "" {
		if err := CheckTaskListName(o.TaskList); err != nil {
			return nil, fmt.Errorf("task list: %w", err)
		}
	}
	if err := checkTools(o.Tools); err != nil {
		return nil, err
	}
	root, err := tool.OpenRoot(o.Workdir, o.AllowPaths...)
	if err != nil {
		return nil, err
	}
	a := &Agent{opts: o, models: models.Builtin().With(o.Models), root: root, sessions: map[*Session]struct{}{}, jobs: jobs.New(nil)}
	a.namespace = o.Namespace
	if a.namespace == "" {
		a.namespace = root.Dir()
	}
	switch {
	case o.Checkpointer != nil:
		a.store, a.persist = o.Checkpointer, true
	case o.DisableSessions:
		a.store, a.ownStore = memory.New(), true
	default:
		dir, err := StateDir()
		if err != nil {
			root.Close()
			return nil, err
		}
		// Opened on first use: New writes nothing.
		a.store, a.ownStore, a.persist = &lazyStore{dir: filepath.Join(dir, "sessions")}, true, true
	}
	if err := (&Session{a: a}).assembleTools(); err != nil {
		a.Close()
		return nil, err
	}
	a.closing, a.stopAll = context.WithCancel(context.Background())
	a.startMCP(a.closing)
	return a, nil
}

// StateDir returns the directory lite-agent keeps state in:
// $XDG_STATE_HOME/lite-agent, else ~/.local/state/lite-agent.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lite-agent"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state directory: %w (set XDG_STATE_HOME)", err)
	}
	return filepath.Join(home, ".local", "state", "lite-agent"), nil
}

// defaultTools is the tool set when Options.Tools is nil.
func defaultTools() []tool.Tool { return builtin.All() }

// Model returns the model name the agent sends to its provider.
func (a *Agent) Model() string { return a.opts.Model }

// Workdir returns the canonical workdir tools run in.
func (a *Agent) Workdir() string { return a.root.Dir() }

// Namespace returns the namespace the agent lists and creates sessions in.
func (a *Agent) Namespace() string { return a.namespace }

// Close aborts a running turn (its model stream and tools) and any
// background completion turn, and stops every background job (its whole
// process group: SIGTERM, then SIGKILL after the bash tool's grace period);
// it waits for them to record how they ended, then ends subscriptions and
// releases what the agent owns (the default checkpointer). It returns once
// nothing the agent started runs any more. It is safe to call more than
// once.
func (a *Agent) Close() error {
	a.closeOnce.Do(func() {
		a.mu.Lock()
		a.isClosed = true
		a.mu.Unlock()
		// From here on no job is adopted; the running ones are stopped
		// while the turns end.
		running := a.jobs.Shut("the agent was closed")
		if a.stopAll != nil {
			a.stopAll()
		}
		a.inflight.Wait()
		a.jobs.Close()
		var errs []error
		if len(running) > 0 {
			errs = append(errs, a.recordAllEnds(running))
		}
		errs = append(errs, a.closeMCP())
		a.hub.close()
		a.mu.Lock()
		for s := range a.sessions {
			errs = append(errs, s.mcp.close()) // their turns have ended: stopAll
			s.watch.close()
			s.releaseRoot()
		}
		clear(a.sessions)
		a.mu.Unlock()
		if a.ownStore && a.store != nil {
			errs = append(errs, a.store.Close())
		}
		errs = append(errs, a.root.Close())
		a.closeErr = errors.Join(errs...)
	})
	return a.closeErr
}

// enter registers a call that must finish before Close returns, and
// returns a context cancelled when ctx is or when Close starts.
func (a *Agent) enter(ctx context.Context) (context.Context, func(), error) {
	a.mu.Lock()
	if a.isClosed {
		a.mu.Unlock()
		return nil, nil, ErrClosed
	}
	a.inflight.Add(1)
	a.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(a.closing, cancel)
	return ctx, func() { stop(); cancel(); a.inflight.Done() }, nil
}

func (a *Agent) requirePersistent() error {
	if !a.persist {
		return ErrSessionsDisabled
	}
	return nil
}
