package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
)

// The task list panel: the session's task list (the todo tool's, private
// to the session or shared by name) drawn between the transcript and the
// activity line. It is read with Agent.Tasks in a command, after each todo
// call finishes and whenever the screen changes session, so drawing never
// waits on storage.

// maxTaskRows bounds the tasks the panel shows; a longer list is folded.
const maxTaskRows = 6

// tasksMsg carries a task list read for session (as the screen knew it
// when it asked; "" before the first prompt). req orders the reads, so
// a late answer to an older one never replaces a newer list.
type tasksMsg struct {
	session string
	req     int
	list    *session.TaskList
	err     error
}

// refreshTasks reads the task list of the screen's session off the UI
// goroutine.
func (m *model) refreshTasks() tea.Cmd {
	m.taskReq++
	a, id, req, ctx := m.agent, m.sessionID, m.taskReq, m.base
	return func() tea.Msg {
		l, err := a.Tasks(ctx, id)
		return tasksMsg{session: id, req: req, list: l, err: err}
	}
}

// gotTasks applies a task list read, unless the screen moved to another
// session or a newer read was applied meanwhile.
func (m *model) gotTasks(msg tasksMsg) {
	if msg.session != m.sessionID || msg.req <= m.taskSeen {
		return
	}
	m.taskSeen = msg.req
	switch {
	case msg.err == nil:
		m.tasks = msg.list
	case errors.Is(msg.err, liteagent.ErrNoSession):
		m.tasks = nil // no session yet, and no shared list: nothing to show
	case errors.Is(msg.err, liteagent.ErrClosed), errors.Is(msg.err, context.Canceled):
		// Quitting.
	default:
		m.tr.fail("read the task list: " + oneLine(msg.err.Error()))
	}
}

// forgetTasks drops the shown list and every read still on its way (the
// screen changed session).
func (m *model) forgetTasks() {
	m.tasks = nil
	m.taskSeen = m.taskReq
}

// countJobs counts the background jobs of the screen's session that run.
// Agent.Jobs takes no lock that a turn holds, so it is called on the UI
// goroutine, when a job starts or ends and when the session changes.
func (m *model) countJobs() {
	n := 0
	for _, j := range m.agent.Jobs() {
		if j.Running && j.Session == m.sessionID {
			n++
		}
	}
	m.jobs = n
}

// hasTasks reports whether there is a non-empty task list.
func (m *model) hasTasks() bool { return m.tasks != nil && len(m.tasks.Tasks) > 0 }

// taskLimit is how many rows the task panel may take: a few, less on short
// screens, and never the rows the input or a question needs.
func (m *model) taskLimit() int {
	bottom := 1 + m.input.Height() // the rule and the input
	if p := m.panel(); p != nil && !m.asking() {
		bottom = len(p)
	} else if p != nil {
		bottom += len(p)
	}
	return max(0, min(1+maxTaskRows, m.height/4, m.height-3-bottom))
}

// taskPanel returns the rows of the task list: a rule with the counts, then
// a row per task, nil when there is no list, it is hidden (ctrl+t) or there
// is no room. A list longer than the room folds its done tasks into one
// row, then cuts the rest.
func (m *model) taskPanel() []string {
	limit := m.taskLimit()
	if !m.hasTasks() || m.hideTasks || m.mode == modePicker || limit < 2 {
		return nil
	}
	th := &m.theme
	l := m.tasks
	_, _, done := l.Counts()
	title := fmt.Sprintf("tasks %d/%d done", done, len(l.Tasks))
	if l.Shared() {
		title = fmt.Sprintf("tasks “%s” · %d/%d done", short(l.Name, max(8, m.width/3)), done, len(l.Tasks))
	}
	rows := []string{m.rule(title)}
	room := limit - 1
	if len(l.Tasks) <= room {
		for _, t := range l.Tasks {
			rows = append(rows, m.taskRow(t))
		}
		return rows
	}
	var open []session.Task
	for _, t := range l.Tasks {
		if t.Status != session.TaskDone {
			open = append(open, t)
		}
	}
	foldDone := done > 0 && room >= 3
	if foldDone {
		rows = append(rows, th.ok.Render("✓ ")+th.dim.Render(fmt.Sprintf("%d done", done)))
		room--
	}
	shown, more := open, 0
	if len(open) > room {
		n := room
		if room >= 2 {
			n = room - 1 // and a row that says how many more
		}
		shown, more = open[:n], len(open)-n
	}
	for _, t := range shown {
		rows = append(rows, m.taskRow(t))
	}
	if more > 0 && len(shown) < room {
		rows = append(rows, th.dim.Render(fmt.Sprintf("  … %d more", more)))
	}
	return rows
}

// taskRow draws one task on one row: its mark (✓ done, ▸ in progress,
// ○ pending), its id and its text, cut to the width. The marks carry the
// status without colour.
func (m *model) taskRow(t session.Task) string {
	th := &m.theme
	var row string
	head := t.ID + ". "
	text := oneLine(t.Text)
	switch t.Status {
	case session.TaskDone:
		row = th.ok.Render("✓") + " " + th.dim.Render(head+text)
	case session.TaskInProgress:
		row = th.mark.Render("▸") + " " + th.user.Render(head+text)
	default:
		row = th.dim.Render("○") + " " + head + text
	}
	if ansi.StringWidth(row) > m.width {
		row = ansi.Truncate(row, m.width, "…")
	}
	return row
}

// taskStatus is the status line's short form of the task list, shown when
// the panel is hidden or has no room: "tasks 2/5".
func (m *model) taskStatus() string {
	if !m.hasTasks() {
		return ""
	}
	_, _, done := m.tasks.Counts()
	return fmt.Sprintf("tasks %d/%d", done, len(m.tasks.Tasks))
}

// jobStatus is the status line's count of running background jobs.
func (m *model) jobStatus(long bool) string {
	switch {
	case m.jobs == 0:
		return ""
	case !long:
		return fmt.Sprintf("%d job%s", m.jobs, plural(m.jobs))
	}
	return fmt.Sprintf("%d job%s running", m.jobs, plural(m.jobs))
}

// isTodo reports whether e is the end of a todo call: the task list may
// have changed.
func isTodo(e *session.Event) bool {
	if e == nil || e.Type != session.TypeToolFinished {
		return false
	}
	var p session.ToolFinished
	return e.Decode(&p) == nil && strings.EqualFold(p.Tool, "todo")
}

// todoSummary is a todo call's arguments in short: "set 3 tasks",
// "update 1 task, remove 2", "read".
func todoSummary(in map[string]any) string {
	tasks, _ := in["tasks"].([]any)
	remove, _ := in["remove"].([]any)
	action, _ := in["action"].(string)
	if action == "" {
		action = "read"
		if len(tasks) > 0 {
			action = "set"
		}
	}
	s := action
	if len(tasks) > 0 {
		s += fmt.Sprintf(" %d task%s", len(tasks), plural(len(tasks)))
	}
	if len(remove) > 0 {
		if len(tasks) > 0 {
			s += ","
		}
		s += fmt.Sprintf(" remove %d", len(remove))
	}
	return s
}
