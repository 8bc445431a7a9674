package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	liteagent "github.com/lite-agent/lite-agent"
)

// View draws the screen: the transcript window, the task list, the
// activity line, the input (or the question being asked) and the status
// line. It joins only the rows on screen.
func (m *model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "lite-agent"
	if m.quitting {
		return v
	}
	rows := make([]string, 0, m.height)
	if m.mode == modePicker && m.picker != nil {
		rows = append(rows, m.picker.view(m, m.height-1)...)
	} else {
		panel := m.panel()
		tasks := m.taskPanel()
		tr, below := m.window(m.transcriptRows())
		rows = append(rows, tr...)
		rows = append(rows, tasks...)
		rows = append(rows, m.activity(below))
		if panel != nil {
			rows = append(rows, panel...)
		}
		if panel == nil || m.asking() {
			rows = append(rows, m.rule(""))
			inputTop := len(rows)
			rows = append(rows, strings.Split(m.input.View(), "\n")...)
			if c := m.input.Cursor(); c != nil {
				c.Position.Y += inputTop
				v.Cursor = c
			}
		}
	}
	for len(rows) < m.height-1 {
		rows = append(rows, "")
	}
	rows = append(rows[:m.height-1], m.status())
	for i, r := range rows {
		if ansi.StringWidth(r) > m.width {
			rows[i] = ansi.Truncate(r, m.width, "…")
		}
	}
	v.SetContent(strings.Join(rows, "\n"))
	return v
}

// transcriptRows is the height of the transcript window.
func (m *model) transcriptRows() int {
	bottom := 2 + len(m.taskPanel()) // activity and status lines, and the task list
	if p := m.panel(); p != nil {
		bottom += len(p)
	}
	if m.panel() == nil || m.asking() {
		bottom += 1 + m.input.Height()
	}
	return max(1, m.height-bottom)
}

// asking reports whether an approval is shown: the input stays under it,
// and what is typed lands there.
func (m *model) asking() bool { return len(m.asks) > 0 && m.mode == modeInput }

// panel returns the rows of the question shown in place of the input, nil
// when the input is shown.
func (m *model) panel() []string {
	th := &m.theme
	w := m.width
	var rows []string
	switch {
	case m.mode == modeConfirm && m.confirm != nil:
		c := m.confirm
		rows = append(rows, m.rule(c.title))
		for _, l := range c.body {
			rows = append(rows, prefixed(wrap(l, w-2), "  ", "    ", th.dim)...)
		}
		rows = append(rows, prefixed(wrap(c.question, w-2), th.warn.Render("? "), "  ", th.user)...)
		rows = append(rows, prefixed(wrap(c.keys, w-2), "  ", "  ", th.key)...)
	case len(m.asks) > 0:
		rows = m.approvalRows(m.asks[0])
	default:
		return nil
	}
	limit := m.height - 4
	if m.asking() {
		limit -= 1 + m.input.Height()
	}
	if limit = max(limit, 2); len(rows) > limit {
		rows = append(rows[:limit-1], th.dim.Render("  …"))
	}
	return rows
}

// rule is a horizontal line, with a title when given.
func (m *model) rule(title string) string {
	if title == "" {
		return m.theme.rule.Render(strings.Repeat("─", m.width))
	}
	head := "── " + title + " "
	return m.theme.rule.Render(head + strings.Repeat("─", max(0, m.width-ansi.StringWidth(head))))
}

// activity is the line above the input: what the agent is doing, or a hint.
func (m *model) activity(below bool) string {
	th := &m.theme
	var s string
	switch {
	case m.hint != "":
		s = th.warn.Render(m.hint)
	case m.op != "":
		s = m.spin.View() + " " + th.dim.Render(m.op+"…")
	case m.busy:
		what := "working"
		if len(m.asks) > 0 {
			what = "waiting for your approval"
		}
		s = m.spin.View() + " " + what + " · " + elapsed(m.now().Sub(m.started))
		if n := len(m.queued); n > 0 {
			s += fmt.Sprintf(" · %d queued", n)
		}
		s += th.dim.Render(" · esc to cancel")
	case m.background():
		what := "working on a background job's result"
		if len(m.asks) > 0 {
			what = "waiting for your approval"
		}
		s = m.spin.View() + " " + what + " · " + elapsed(m.now().Sub(m.bgStarted))
	case m.mode == modeConfirm || len(m.asks) > 0:
		s = th.dim.Render("pgup/pgdn scroll")
	default:
		s = th.dim.Render("enter send · alt+enter newline · ↑↓ history · pgup/pgdn scroll · /help")
	}
	if below {
		more := th.warn.Render(" ↓ more below (pgdn)")
		s = ansi.Truncate(s, max(0, m.width-ansi.StringWidth(more)), "…") + more
	}
	return s
}

func elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// The parts of the status line, in order.
const (
	partID = iota
	partRev
	partModel
	partTokens
	partJobs
	partTasks
	partWorkspace
)

// status is the bottom line: session, revision, model, tokens, running
// background jobs, the task list's count when its panel is not shown, and
// the workspace.
func (m *model) status() string {
	id := m.sessionID
	if id == "" {
		id = "new session"
	}
	model := m.opts.Model
	if model == "" {
		model = m.tr.model
	}
	spend := m.agent.Spend(model, m.tr.usage, m.tr.last)
	taskCount := ""
	if len(m.taskPanel()) == 0 {
		taskCount = m.taskStatus()
	}
	parts := []string{id, "rev " + itoa(m.tr.head), model, spendStatus(spend), m.jobStatus(true), taskCount, m.workspace()}
	line := func() string {
		var kept []string
		for _, p := range parts {
			if p != "" {
				kept = append(kept, p)
			}
		}
		return " " + strings.Join(kept, " · ") + " "
	}
	// Narrow screens: shorten the workspace from the left (down to its
	// base name), then the id, drop the model, then abbreviate, and at
	// last drop the workspace and the tokens.
	if over := ansi.StringWidth(line()) - m.width; over > 0 {
		ws := m.workspace()
		keep := ansi.StringWidth(ws) - over - 1
		if base := filepath.Base(ws); keep > ansi.StringWidth(base) {
			parts[partWorkspace] = "…" + ansi.TruncateLeft(ws, ansi.StringWidth(ws)-keep, "")
		} else {
			parts[partWorkspace] = base
		}
	}
	steps := []func(){
		func() { parts[partID] = cut(id, 13) },
		func() { parts[partModel] = "" },
		func() { parts[partJobs] = m.jobStatus(false) },
		func() { parts[partID], parts[partRev] = cut(id, 9), "r"+itoa(m.tr.head) },
		func() { parts[partTokens] = shortSpend(spend, false) },
		func() { parts[partWorkspace] = "" }, // the welcome line names it
		func() { parts[partTokens] = shortSpend(spend, true) },
		func() { parts[partTokens] = "" },
	}
	for _, step := range steps {
		if ansi.StringWidth(line()) <= m.width {
			break
		}
		step()
	}
	s := ansi.Truncate(line(), m.width, "…")
	if m.theme.color {
		s += strings.Repeat(" ", max(0, m.width-ansi.StringWidth(s)))
	}
	return m.theme.status.Render(s)
}

// cut shortens s to n columns, ending with … when cut.
func cut(s string, n int) string { return ansi.Truncate(s, n, "…") }

// spendStatus is the status line's figures: tokens, and the context share
// and estimated cost when the model table knows the model (see
// liteagent.Spend).
func spendStatus(s liteagent.Spend) string {
	t := tokens(s.Usage.InputTokens + s.Usage.OutputTokens)
	if s.Window == 0 && !s.Priced {
		return t
	}
	return t + " · " + s.String()
}

// shortSpend is spendStatus for a narrow screen: the context share and
// cost alone when known (tiny: without the window and the cache's share),
// else the tokens abbreviated.
func shortSpend(s liteagent.Spend, tiny bool) string {
	if s.Window == 0 && !s.Priced {
		return strings.Replace(tokens(s.Usage.InputTokens+s.Usage.OutputTokens), "tokens", "tok", 1)
	}
	if !tiny {
		return s.String()
	}
	var parts []string
	if s.Window > 0 {
		parts = append(parts, fmt.Sprintf("ctx %.0f%%", 100*s.ContextShare))
	}
	if s.Priced {
		parts = append(parts, fmt.Sprintf("$%.4f", s.CostUSD))
	}
	return strings.Join(parts, " ")
}

func tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM tokens", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk tokens", float64(n)/1e3)
	}
	return fmt.Sprintf("%d tokens", n)
}

func (m *model) workspace() string { return m.ws }

// workspaceName is a workdir as the status line shows it, with the home
// directory as ~.
func workspaceName(wd string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if rel, err := filepath.Rel(home, wd); err == nil && !strings.HasPrefix(rel, "..") {
			if rel == "." {
				return "~"
			}
			return "~" + string(filepath.Separator) + rel
		}
	}
	return wd
}
