package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/charmbracelet/x/term"
	"github.com/lite-agent/lite-agent/tui"
)

// useTUI reports whether the interactive mode is the full-screen client:
// not --plain, and both stdin and stdout are terminals.
func useTUI(c *config, std IO) bool {
	if c.plain || !std.Interactive {
		return false
	}
	f, ok := std.Stdout.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// runTUI is the full-screen interactive client (package tui). With
// --resume it opens on that session; interrupted tool calls are reviewed
// on screen rather than refused.
func runTUI(ctx context.Context, c *config, std IO) error {
	approvals := tui.NewApprovals()
	c.approve = approvals.Approve
	e, err := newAgent(ctx, c, "", false, true)
	if err != nil {
		return err
	}
	if c.resume != "" {
		id, err := e.agent.FindSession(ctx, c.resume)
		if err != nil {
			e.close()
			return err
		}
		if e, err = switchWorkdir(ctx, c, e, id); err != nil {
			return err
		}
		if err := e.agent.Resume(ctx, id); err != nil {
			e.close()
			return err
		}
		if len(c.acknowledge) > 0 {
			if err := e.agent.Acknowledge(ctx, c.acknowledge...); err != nil {
				e.close()
				return err
			}
		}
	}
	defer func() { e.close() }()
	_, model, _ := newProvider(c) // the name the agent was given, for the status line
	err = tui.Run(ctx, e.agent, &tui.Options{
		Approvals: approvals,
		SessionDB: c.sessionDB,
		Model:     model,
		Input:     std.Stdin,
		Output:    std.Stdout,
		Interrupt: std.Interrupt,
	})
	if id := e.agent.SessionID(); id != "" && c.sessionDB != "" {
		fmt.Fprintf(std.Stderr, "session %s; continue it with: lite-agent --session-db %s --resume %s\n", id, c.sessionDB, id)
	}
	return err
}
