package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
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
		if panel == nil {
			rows = append(rows, m.rule(""))
			inputTop := len(rows)
			rows = append(rows, strings.Split(m.input.View(), "\n")...)
			if c := m.input.Cursor(); c != nil {
				c.Position.Y += inputTop
				v.Cursor = c
			}
		} else {
			rows = append(rows, panel...)
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
	} else {
		bottom += 1 + m.input.Height()
	}
	return max(1, m.height-bottom)
}

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
		a := m.asks[0]
		what := a.req.Tool
		if s := summary(a.req.Tool, decodeInput(a.req.Input), a.req.Input); s != "" {
			what += " " + s
		}
		if a.req.Server != "" {
			what = "MCP server " + a.req.Server + ": " + what
		}
		rows = append(rows, m.rule("approval"))
		rows = append(rows, prefixed(wrap("Allow "+short(what, 200)+"?", w-2), th.warn.Render("? "), "  ", th.user)...)
		keys := fmt.Sprintf("y allow once · a allow %s for this session · n deny · esc cancel the turn", a.req.Tool)
		rows = append(rows, prefixed(wrap(keys, w-2), "  ", "  ", th.key)...)
	default:
		return nil
	}
	if limit := m.height - 4; len(rows) > limit {
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
	u := m.tr.usage
	taskCount := ""
	if len(m.taskPanel()) == 0 {
		taskCount = m.taskStatus()
	}
	parts := []string{id, "rev " + itoa(m.tr.head), model, tokens(u.InputTokens + u.OutputTokens), m.jobStatus(true), taskCount, m.workspace()}
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
		func() { parts[partTokens] = strings.Replace(parts[partTokens], "tokens", "tok", 1) },
		func() { parts[partWorkspace] = "" }, // the welcome line names it
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
