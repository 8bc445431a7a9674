package tui

import (
	"context"
	"errors"
	"github.com/lite-agent/lite-agent/permission"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	liteagent "github.com/lite-agent/lite-agent"
)

// Options configures Run. The zero value runs on the process's terminal.
type Options struct {
	// Approvals is the bridge whose Approve method the agent was created
	// with (liteagent.Options.Approve); nil when the agent asks nothing.
	Approvals *Approvals
	// Rules is the permission engine the agent was created with
	// (liteagent.Options.Permissions); with it an approval also offers to
	// allow the exact call or a pattern for the session. ProjectConfig,
	// when set, is the project's config file such a pattern can be saved
	// to.
	Rules         *permission.Engine
	ProjectConfig string
	// SessionDB names where sessions are stored (--session-db), for
	// messages; "" means sessions are not persisted, and /sessions,
	// /checkpoints and /fork say they need one.
	SessionDB string
	// Model is the model name shown in the status line.
	Model string
	// Input and Output are the terminal; nil means os.Stdin and os.Stdout.
	Input  io.Reader
	Output io.Writer
	// Env is the environment, read for NO_COLOR and the terminal type;
	// nil means os.Environ().
	Env []string
	// Interrupt delivers interrupts (SIGINT) sent from outside; the
	// terminal is in raw mode, so a typed ctrl+c arrives as a key. Each
	// acts like ctrl+c. May be nil.
	Interrupt <-chan struct{}
}

// Run shows the full-screen client until the user quits or ctx ends. The
// agent's current session, if any (resumed before), is shown first. Run
// does not close the agent; a turn still running when it returns has been
// cancelled and ends when the agent is closed.
func Run(ctx context.Context, a *liteagent.Agent, opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	done := make(chan struct{})
	defer close(done)

	m := newModel(ctx, a, o, done)
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithEnvironment(o.Env), tea.WithoutSignalHandler()}
	if o.Input != nil {
		popts = append(popts, tea.WithInput(o.Input))
	}
	if o.Output != nil {
		popts = append(popts, tea.WithOutput(o.Output))
	}
	p := tea.NewProgram(m, popts...)
	if o.Interrupt != nil {
		go func() {
			for {
				select {
				case <-o.Interrupt:
					p.Send(interruptMsg{})
				case <-done:
					return
				}
			}
		}()
	}
	_, err := p.Run()
	if m.cancel != nil {
		m.cancel()
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled) {
		return ctx.Err()
	}
	return err
}
