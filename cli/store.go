package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/postgres"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
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
			return nil, fmt.Errorf("the directory of --session-db %s does not exist; create it first (mkdir -p %s)", db, dir)
		}
	}
	return sqlite.Open(db, &sqlite.Options{ReadOnly: readOnly})
}

// env is an agent with the store it was opened on (nil without --session-db).
type env struct {
	agent *liteagent.Agent
	store checkpoint.Checkpointer
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
	opts := &liteagent.Options{Workdir: workdir, MaxModelCalls: c.maxModelCalls, Approve: c.approve, Input: c.input, TaskList: c.taskList}
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
		opts.Provider, opts.Model = p, model
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
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.As(err, &nc):
		return ExitUsage
	case errors.As(err, &re):
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
