package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/models"
)

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// openStore opens the --session-db store; readOnly opens it so that nothing
// is created or changed (inspection).
func openStore(ctx context.Context, db string, readOnly bool) (checkpoint.Checkpointer, error) {
	if isPostgresURL(db) {
		return postgres.Open(ctx, db, &postgres.Options{ReadOnly: readOnly})
	}
	if strings.HasPrefix(db, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			db = filepath.Join(home, db[2:])
		}
	}
	if readOnly {
		if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no session database at %s: nothing has been recorded there yet (run lite-agent --session-db %s PROMPT first)", db, db)
		}
	} else if dir := filepath.Dir(db); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, usagef("the directory of --session-db %s does not exist; create it first (mkdir -p %s)", db, dir)
		}
	}
	return sqlite.Open(db, &sqlite.Options{ReadOnly: readOnly})
}

// env is an agent with the store it was opened on (nil without
// --session-db) and the run's session.
type env struct {
	agent *liteagent.Agent
	store checkpoint.Checkpointer
	sess  *liteagent.Session // the run's session; nil until use

	mu sync.Mutex
	bg func(liteagent.Update) // where updates of background work go
}

// use makes session id ("" a new one) the run's session and the agent's
// current one. Updates of the work it does by itself (background
// completion turns, job ends) go to the function given to onBackground.
func (e *env) use(ctx context.Context, id string) error {
	opts := &liteagent.SessionOptions{OnBackground: e.background}
	var s *liteagent.Session
	var err error
	if id == "" {
		s, err = e.agent.NewSession(ctx, opts)
	} else {
		// Only a session of this run's workdir (see --retarget).
		opts.Workdir = e.agent.Workdir()
		s, err = e.agent.OpenSession(ctx, id, opts)
	}
	if err != nil {
		return err
	}
	e.sess = s
	e.agent.Use(s)
	return nil
}

// send sends prompt in the run's session (a new one on first use); show
// gets the turn's updates, all of them before send returns.
func (e *env) send(ctx context.Context, prompt string, show func(liteagent.Update)) (*liteagent.Result, error) {
	if e.sess == nil {
		if err := e.use(ctx, ""); err != nil {
			return nil, err
		}
	}
	return e.sess.Send(ctx, prompt, &liteagent.SendOptions{OnUpdate: show})
}

// onBackground routes the updates of background work to f.
func (e *env) onBackground(f func(liteagent.Update)) {
	e.mu.Lock()
	e.bg = f
	e.mu.Unlock()
}

func (e *env) background(u liteagent.Update) {
	e.mu.Lock()
	f := e.bg
	e.mu.Unlock()
	if f != nil {
		f(u)
	}
}

func (e *env) close() {
	e.agent.Close()
	if e.store != nil {
		e.store.Close()
	}
}

// newAgent builds an agent for c in workdir (default c.workdir); with
// withModel it also sets up the provider.
func newAgent(ctx context.Context, c *config, workdir string, readOnly, withModel bool) (*env, error) {
	if workdir == "" {
		workdir = c.workdir
	}
	opts := &liteagent.Options{Workdir: workdir, MaxModelCalls: c.maxModelCalls, Approve: c.approve, Input: c.input, TaskList: c.taskList, Permissions: c.rules}
	if withModel {
		t, err := tools(c, workdir, os.Stderr)
		if err != nil {
			return nil, err
		}
		opts.Tools = t
	}
	if !readOnly {
		opts.MCPServers = c.mcpServers // inspection starts no server
	}
	opts.ThinkingBudget, opts.ReasoningEffort = c.thinking, c.reasoningEffort
	if c.models != "" {
		t, err := models.Load(c.models)
		if err != nil {
			return nil, err
		}
		opts.Models = t
	}
	var store checkpoint.Checkpointer
	if c.sessionDB != "" {
		s, err := openStore(ctx, c.sessionDB, readOnly)
		if err != nil {
			return nil, err
		}
		store = s
		opts.Checkpointer = s
	} else {
		opts.DisableSessions = true
	}
	if withModel {
		p, model, err := newProvider(c)
		if err != nil {
			if store != nil {
				store.Close()
			}
			return nil, err
		}
		opts.Provider, opts.Model, opts.ModelTitles = p, model, true
	}
	a, err := liteagent.New(opts)
	if err != nil {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	return &env{agent: a, store: store}, nil
}

// exitCode maps an error to the documented exit status.
func exitCode(err error) int {
	var ue *UsageError
	var he *liteagent.HazardError
	var nc *liteagent.NotCheckpointError
	var re *liteagent.RestoringError
	var le *checkpoint.LeaseHeldError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.As(err, &nc):
		return ExitUsage
	case errors.As(err, &re), errors.As(err, &le):
		return ExitConflict
	case errors.As(err, &he):
		return ExitHazard
	case checkpoint.IsConflict(err):
		return ExitConflict
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return ExitError
}
