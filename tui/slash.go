package tui

import (
	"context"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/usercmd"
)

// userCommands reads the user's slash commands: the workdir's
// .lite-agent/commands, then the user's config directory.
func (m *model) userCommands() ([]usercmd.Command, []string) {
	return usercmd.Load(usercmd.Dirs(m.agent.Workdir(), config.UserFile()), builtinCommands())
}

// userHelp lists the user's commands and the notes on files not used.
func userHelp(cmds []usercmd.Command, notes []string) string {
	var b strings.Builder
	if len(cmds) > 0 {
		b.WriteString("Your commands:")
	}
	for _, c := range cmds {
		name := "/" + c.Name
		if c.ArgumentHint != "" {
			name += " " + c.ArgumentHint
		}
		b.WriteString("\n  " + name + "  " + c.Description + " (" + c.Scope + ")")
	}
	for _, n := range notes {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("note: " + n)
	}
	return b.String()
}

// switchModel is /model: with a name, the screen's session's model from
// the next prompt on (recorded in its log; a session not started yet is
// opened for it, and writes the switch with its first prompt); alone, the
// current one.
func (m *model) switchModel(name string) tea.Cmd {
	a, sess, q := m.agent, m.sess, m.updates
	if name == "" {
		current := a.SessionModel()
		if sess != nil {
			current = sess.Model()
		}
		m.tr.notice("model: " + current + " (switch with /model NAME)")
		return nil
	}
	return m.do("switching the model", func(ctx context.Context) func(*model) tea.Cmd {
		if sess == nil {
			var err error
			if sess, err = openSession(ctx, a, q, ""); err != nil {
				return failed("/model", err)
			}
		}
		if err := sess.SetModel(ctx, name); err != nil {
			return failed("/model", err)
		}
		return func(m *model) tea.Cmd {
			if m.sess == nil {
				m.sess = sess
			}
			m.opts.Model = name
			m.tr.notice("model: " + name + " from the next prompt on")
			return nil
		}
	})
}
