package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/charmbracelet/x/term"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/permission"
)

// FullScreen is a full-screen interactive client (package tui). It lives
// in its own command, lite-agent-tui, so that one-shot runs and inspection
// do not load the terminal UI's libraries: lite-agent hands interactive
// terminal sessions to lite-agent-tui when it is installed beside it.
type FullScreen interface {
	// Approve is the approval handler the agent is created with.
	Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error)
	// Run shows the client on the agent until the user quits.
	Run(ctx context.Context, a *liteagent.Agent, opts ScreenOptions) error
}

// ScreenOptions tells a FullScreen client about the run.
type ScreenOptions struct {
	SessionDB string // --session-db, "" when sessions are not persisted
	Model     string // the model name, for the status line
	Input     io.Reader
	Output    io.Writer
	Interrupt <-chan struct{}
	// Rules is the run's permission engine; an approval can add to it
	// (allow the exact call, or a pattern) and save patterns to
	// ProjectConfig, the project's config file.
	Rules         *permission.Engine
	ProjectConfig string
}

// TUICommand is the name of the command holding the full-screen client.
const TUICommand = "lite-agent-tui"

// useTUI reports whether the interactive mode is the full-screen client:
// not --plain, and both stdin and stdout are terminals.
func useTUI(c *config, std IO) bool {
	if c.plain || !std.Interactive {
		return false
	}
	f, ok := std.Stdout.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// execTUI replaces this process with lite-agent-tui (found beside this
// executable) with the same arguments. It returns only when that command is
// not installed or cannot start, and the line mode takes over.
func execTUI() error {
	err := execBeside(TUICommand, "./cmd/lite-agent-tui", os.Args[1:])
	return fmt.Errorf("%w; using the line mode", err)
}

// execBeside replaces this process with the command name installed beside
// this executable, run with args. It returns only when that command is not
// there or cannot start; pkg is where it is built from, for the error.
func execBeside(name, pkg string, args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(self)
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s is not installed beside %s (build it with: go build -o %s %s)", name, self, dir, pkg)
	}
	return syscall.Exec(path, append([]string{path}, args...), os.Environ())
}

// runTUI is the full-screen interactive client. With --resume it opens on
// that session; interrupted tool calls are reviewed on screen rather than
// refused.
func runTUI(ctx context.Context, c *config, std IO, fs FullScreen) error {
	c.approve = fs.Approve
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
		if err := retargetIfAsked(ctx, c, e, id, std.Stderr); err != nil {
			e.close()
			return err
		}
		if err := e.agent.Resume(ctx, id); err != nil {
			e.close()
			return workdirHint(err)
		}
		if len(c.acknowledge) > 0 {
			if err := e.agent.Acknowledge(ctx, c.acknowledge...); err != nil {
				e.close()
				return err
			}
		}
	}
	defer func() { e.close() }()
	err = fs.Run(ctx, e.agent, ScreenOptions{
		SessionDB: c.sessionDB, Model: e.agent.SessionModel(),
		Input: std.Stdin, Output: std.Stdout, Interrupt: std.Interrupt,
		Rules: c.rules, ProjectConfig: c.projectFile(),
	})
	if id := e.agent.SessionID(); id != "" && c.sessionDB != "" {
		fmt.Fprintf(std.Stderr, "session %s; continue it with: lite-agent --session-db %s --resume %s\n", id, c.sessionDB, id)
	}
	return err
}

// fullScreen decides how an interactive run goes: the linked-in client,
// or lite-agent-tui in place of this process; ok is false for the line mode.
func fullScreen(ctx context.Context, c *config, std IO) (ok bool, err error) {
	if !useTUI(c, std) {
		return false, nil
	}
	if std.FullScreen != nil {
		return true, runTUI(ctx, c, std, std.FullScreen())
	}
	if err := execTUI(); err != nil {
		fmt.Fprintln(std.Stderr, "lite-agent:", oneLine(err.Error()))
	}
	return false, nil
}

// projectFile is the project's config file, "" when none was looked for.
func (c *config) projectFile() string {
	if c.settings == nil {
		return ""
	}
	return c.settings.ProjectFile
}
