package liteagent

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/projectctx"
	"github.com/lite-agent/lite-agent/session"
)

// ContextFunc builds the project context of a session: the text added to
// the system prompt after Options.System, and the instruction files it was
// read from. It is called once per session, before its first prompt; the
// result is recorded in the log and replayed from there on. It must return
// when ctx is done.
type ContextFunc func(ctx context.Context, workdir string) (*session.ProjectContext, error)

// DefaultContext builds the project context with package projectctx: the
// environment (workdir, platform, date, git branch and status) and the
// instruction files (the user-level AGENTS.md, then AGENTS.md, or CLAUDE.md
// where there is none, from the repository root down to the workdir).
func DefaultContext(ctx context.Context, workdir string) (*session.ProjectContext, error) {
	c, err := projectctx.Build(ctx, workdir, nil)
	if err != nil {
		return nil, err
	}
	return &session.ProjectContext{Text: c.Text, Files: c.Files}, nil
}

// contextEvents returns the project_context event to write with the next
// prompt of st, when the log records none yet (a new session, an old log,
// or one restored to before its first prompt); nil otherwise or when
// project context is off.
func (a *Agent) contextEvents(ctx context.Context, st *session.State, workdir string) ([]session.Event, error) {
	if a.opts.NoProjectContext || st.ProjectContext() != nil {
		return nil, nil
	}
	build := a.opts.ProjectContext
	if build == nil {
		build = DefaultContext
	}
	pc, err := build(ctx, workdir)
	if err != nil {
		return nil, fmt.Errorf("project context: %w", err)
	}
	if pc == nil {
		pc = &session.ProjectContext{}
	}
	return []session.Event{mustEvent(session.TypeProjectContext, pc)}, nil
}

// systemPrompt is the system prompt of st's next request: Options.System,
// then the project context the log recorded. It is the same bytes every
// turn, so the provider's prompt cache keeps it.
func (a *Agent) systemPrompt(st *session.State) string {
	return a.systemText(st.ProjectContext())
}

// systemText is the system prompt with project context pc (nil: none).
func (a *Agent) systemText(pc *session.ProjectContext) string {
	if a.opts.NoProjectContext || pc == nil || pc.Text == "" {
		return a.opts.System
	}
	return a.opts.System + "\n\n" + pc.Text
}
