package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/permission"
)

// approvalSettle is how long an approval must have been on screen before
// a choice's key answers it: keys pressed sooner were typed before it
// appeared, and go to the input.
const approvalSettle = 800 * time.Millisecond

// choice is one answer to an approval.
type choice struct {
	key   string // its key, pressed on an empty input
	label string
	pick  func(m *model, a *approvalAsk) (liteagent.Decision, string)
}

// choices are the answers offered for a: the rules ones only when the
// client was given the rule engine.
func (m *model) choices(a *approvalAsk) []choice {
	once := func(*model, *approvalAsk) (liteagent.Decision, string) { return liteagent.AllowOnce, "" }
	cs := []choice{
		{"y", "allow once", once},
		{"a", "allow " + a.req.Tool + " for this session", func(*model, *approvalAsk) (liteagent.Decision, string) {
			return liteagent.AllowSession, ""
		}},
	}
	if rules := m.opts.Rules; rules != nil {
		sug := permission.Suggest(a.req.PermissionRequest())
		cs = append(cs,
			choice{"e", "allow exactly " + strings.Join(sug.Exact, " ") + " this session", func(m *model, a *approvalAsk) (liteagent.Decision, string) {
				m.addRules(sug.Exact, "session")
				return liteagent.AllowOnce, ""
			}},
			choice{"p", "allow " + strings.Join(sug.Pattern, " ") + " this session", func(m *model, a *approvalAsk) (liteagent.Decision, string) {
				m.addRules(sug.Pattern, "session")
				return liteagent.AllowOnce, ""
			}})
		if path := m.opts.ProjectConfig; path != "" {
			cs = append(cs, choice{"s", "allow " + strings.Join(sug.Pattern, " ") + ", saved to " + m.shortPath(path), func(m *model, a *approvalAsk) (liteagent.Decision, string) {
				for _, p := range sug.Pattern {
					if err := config.SaveRule(path, "allow", p); err != nil {
						m.hint = oneLine(err.Error()) + " (allowed for this session only)"
					}
				}
				m.addRules(sug.Pattern, "project "+path)
				return liteagent.AllowOnce, ""
			}})
		}
	}
	cs = append(cs, choice{"n", "deny (text in the input: the reason told to the model)", func(m *model, a *approvalAsk) (liteagent.Decision, string) {
		reason := strings.TrimSpace(m.input.Value())
		m.input.Reset()
		return liteagent.Deny, reason
	}})
	return cs
}

func (m *model) addRules(patterns []string, source string) {
	for _, p := range patterns {
		if err := m.opts.Rules.Add(permission.Rule{Effect: permission.Allow, Pattern: p, Source: source}); err != nil {
			m.hint = oneLine(err.Error())
		}
	}
}

// approvalKey handles a key while an approval is open: ↑↓ choose, enter
// confirms the choice, a choice's key answers on an empty input once the
// question has been shown for approvalSettle. It reports false for keys
// the input takes (text typed meanwhile lands there, never in the answer).
func (m *model) approvalKey(k tea.KeyPressMsg) (tea.Cmd, bool) {
	a := m.asks[0]
	cs := m.choices(a)
	switch k.String() {
	case "esc":
		if m.cancel != nil {
			m.cancel()
			m.hint = "cancelling the turn…"
		}
		return nil, true
	case "pgup":
		m.scrollUp(max(1, m.transcriptRows()-2))
		return nil, true
	case "pgdown":
		m.scrollDown(max(1, m.transcriptRows()-2))
		return nil, true
	case "up":
		if a.selected <= 0 {
			a.selected = len(cs)
		}
		a.selected--
		return nil, true
	case "down":
		a.selected = (a.selected + 1) % len(cs)
		return nil, true
	case "enter":
		if a.selected >= 0 {
			m.choose(a, cs[a.selected])
			return nil, true
		}
		if strings.TrimSpace(m.input.Value()) == "" {
			m.hint = "choose an answer with ↑↓ and enter"
			return nil, true
		}
		return nil, false // the input's prompt is sent (or queued)
	}
	if m.input.Value() == "" && m.now().Sub(a.shown) >= approvalSettle {
		for _, c := range cs {
			if k.Text == c.key {
				m.choose(a, c)
				return nil, true
			}
		}
	}
	return nil, false
}

func (m *model) choose(a *approvalAsk, c choice) {
	d, reason := c.pick(m, a)
	a.answer(d, reason)
	m.dropAsk(a)
}

// approvalRows are the question's rows: what is asked, the choices (the
// one ↑↓ point at marked) and the keys.
func (m *model) approvalRows(a *approvalAsk) []string {
	th := &m.theme
	w := m.width
	what := a.req.Tool
	if s := summary(a.req.Tool, decodeInput(a.req.Input), a.req.Input); s != "" {
		what += " " + s
	}
	if a.req.Server != "" {
		what = "MCP server " + a.req.Server + ": " + what
	}
	rows := []string{m.rule("approval")}
	rows = append(rows, prefixed(wrap("Allow "+short(what, 200)+"?", w-2), th.warn.Render("? "), "  ", th.user)...)
	for i, c := range m.choices(a) {
		mark := "  "
		if i == a.selected {
			mark = "› "
		}
		rows = append(rows, prefixed(wrap(fmt.Sprintf("%s %s", c.key, c.label), w-4), "  "+mark, "      ", th.key)...)
	}
	keys := "↑↓ enter choose · keys answer on an empty input · typing goes to the input · esc cancel"
	return append(rows, prefixed(wrap(keys, w-2), "  ", "  ", th.dim)...)
}

// shortPath is path relative to the workdir when it is inside it.
func (m *model) shortPath(path string) string {
	if rel, err := filepath.Rel(m.agent.Workdir(), path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
