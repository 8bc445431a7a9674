// Command lite-agent-tui is lite-agent with the full-screen interactive
// client linked in: the same flags and modes, and with no PROMPT on a
// terminal, the full-screen client. lite-agent hands interactive terminal
// runs to it when it is installed beside lite-agent.
package main

import (
	"context"
	"os"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/cli"
	"github.com/lite-agent/lite-agent/internal/gcstart"
	"github.com/lite-agent/lite-agent/tui"
)

// client adapts package tui to the command line's FullScreen.
type client struct{ approvals *tui.Approvals }

func (c client) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	return c.approvals.Approve(ctx, req)
}

func (c client) Run(ctx context.Context, a *liteagent.Agent, o cli.ScreenOptions) error {
	return tui.Run(ctx, a, &tui.Options{
		Approvals: c.approvals, SessionDB: o.SessionDB, Model: o.Model,
		Input: o.Input, Output: o.Output, Interrupt: o.Interrupt,
		Rules: o.Rules, ProjectConfig: o.ProjectConfig,
	})
}

func main() {
	gcstart.Raise(gcstart.CommandGoal)
	os.Exit(cli.Command(&cli.Linked{FullScreen: func() cli.FullScreen { return client{approvals: tui.NewApprovals()} }}))
}
