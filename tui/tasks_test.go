package tui

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// todoTurn is a turn in which the model sets the task list.
func todoTurn(l *logBuilder) []liteagent.Update {
	in := `{"action":"set","tasks":[{"text":"Read the parser"},{"text":"Fix the off-by-one in the tokenizer"},{"text":"Run the tests"}]}`
	return []liteagent.Update{
		l.start(),
		l.prompt("Fix the parser bug and make the tests pass"),
		l.message(text("I'll plan it first."), toolUse("t1", "todo", in)),
		l.started("t1", "todo", in),
		l.finished("t1", "todo", "Task list: 0 done, 0 in progress, 3 pending\n[ ] 1. Read the parser\n[ ] 2. Fix the off-by-one in the tokenizer\n[ ] 3. Run the tests", false, false),
		l.message(text("Reading the parser now.")),
	}
}

// taskList makes a list of n tasks, the first done done, the next one in
// progress, the rest pending.
func taskList(name string, n, done int, texts ...string) *session.TaskList {
	l := &session.TaskList{ID: "tasks-" + sid, Name: name, Head: 3}
	for i := range n {
		t := session.Task{ID: fmt.Sprint(i + 1), Status: session.TaskPending, Text: fmt.Sprintf("task number %d", i+1)}
		if i < len(texts) {
			t.Text = texts[i]
		}
		switch {
		case i < done:
			t.Status = session.TaskDone
		case i == done:
			t.Status = session.TaskInProgress
		}
		l.Tasks = append(l.Tasks, t)
	}
	return l
}

// gotList asks for a read of the task list and delivers l as its answer.
func gotList(m *model, l *session.TaskList) {
	m.refreshTasks()
	m.Update(tasksMsg{session: m.sessionID, req: m.taskReq, list: l})
}

func TestTaskScreens(t *testing.T) {
	texts := []string{"Read the parser", "Fix the off-by-one in the tokenizer", "Run the tests"}
	tests := []struct {
		name  string
		rows  int
		setup func(t *testing.T, m *model)
	}{
		{"tasks", 24, func(t *testing.T, m *model) {
			feed(m, todoTurn(&logBuilder{session: sid})...)
			gotList(m, taskList("", 3, 1, texts...))
			m.jobs = 1
		}},
		{"tasks_shared", 24, func(t *testing.T, m *model) {
			feed(m, todoTurn(&logBuilder{session: sid})...)
			gotList(m, taskList("release 2.0", 3, 3, texts...))
		}},
		{"tasks_folded", 24, func(t *testing.T, m *model) {
			feed(m, todoTurn(&logBuilder{session: sid})...)
			gotList(m, taskList("", 12, 4))
		}},
		{"tasks_hidden", 24, func(t *testing.T, m *model) {
			feed(m, todoTurn(&logBuilder{session: sid})...)
			gotList(m, taskList("", 5, 2))
			m.jobs = 2
			m.Update(keyCtrlT)
		}},
		{"tasks_approval", 16, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			feed(m, todoTurn(l)...)
			gotList(m, taskList("", 5, 1, texts...))
			feed(m, l.message(toolUse("c1", "bash", `{"command":"go test ./parser"}`)))
			m.busy, m.started = true, clock.Add(-2*time.Second)
			m.Update(askMsg{&approvalAsk{ctx: t.Context(), req: liteagent.ApprovalRequest{Session: sid, CallID: "c1", Tool: "bash", Input: []byte(`{"command":"go test ./parser"}`)}, reply: make(chan verdict, 1), answered: make(chan struct{}), selected: -1}})
		}},
	}
	for _, tt := range tests {
		for _, w := range []int{80, 40} {
			t.Run(fmt.Sprintf("%s_%d", tt.name, w), func(t *testing.T) {
				m := newViewModel(t, w, tt.rows)
				m.sessionID = sid
				tt.setup(t, m)
				checkScreen(t, m, fmt.Sprintf("%s_%d", tt.name, w))
			})
		}
	}
}

// The panel's rows for lists of every length and screens of every height:
// never more rows than the limit, every in-progress task shown when there
// is room, and a count of what is folded away.
func TestTaskPanelFolds(t *testing.T) {
	tests := []struct {
		n, done, height int
		want            []string // the rows after the rule, in order
	}{
		{n: 3, done: 1, height: 24, want: []string{"✓ 1. task number 1", "▸ 2. task number 2", "○ 3. task number 3"}},
		{n: 5, done: 0, height: 24, want: []string{"▸ 1.", "○ 2.", "○ 3.", "○ 4.", "○ 5."}},
		{n: 8, done: 3, height: 24, want: []string{"✓ 3 done", "▸ 4.", "○ 5.", "○ 6.", "… 2 more"}},
		{n: 12, done: 3, height: 24, want: []string{"✓ 3 done", "▸ 4.", "○ 5.", "○ 6.", "… 6 more"}},
		{n: 12, done: 0, height: 24, want: []string{"▸ 1.", "○ 2.", "○ 3.", "○ 4.", "… 8 more"}},
		{n: 12, done: 12, height: 24, want: []string{"✓ 12 done"}},
		{n: 12, done: 3, height: 12, want: []string{"▸ 4.", "… 8 more"}},
		{n: 4, done: 1, height: 16, want: []string{"✓ 1 done", "▸ 2.", "… 2 more"}},
		{n: 4, done: 1, height: 8, want: []string{"▸ 2."}}, // the rule counts the rest
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%d_%d", tt.n, tt.done, tt.height), func(t *testing.T) {
			m := newViewModel(t, 40, tt.height)
			m.sessionID = sid
			gotList(m, taskList("", tt.n, tt.done))
			rows := m.taskPanel()
			if len(rows) > m.taskLimit() {
				t.Fatalf("%d rows, limit %d", len(rows), m.taskLimit())
			}
			if !strings.Contains(rows[0], fmt.Sprintf("tasks %d/%d done", tt.done, tt.n)) {
				t.Errorf("rule %q", rows[0])
			}
			got := rows[1:]
			if len(got) != len(tt.want) {
				t.Fatalf("rows %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(strings.TrimSpace(got[i]), w) {
					t.Errorf("row %d is %q, want it to start with %q", i, got[i], w)
				}
			}
		})
	}
}

// Reads of the task list: a read for a session the screen left, or older
// than one applied, changes nothing; no session means no list; errors are
// shown.
func TestTaskReads(t *testing.T) {
	m := newViewModel(t, 80, 24)
	m.sessionID = sid
	feed(m, todoTurn(&logBuilder{session: sid})...)
	if m.taskReq != 1 {
		t.Fatalf("the todo call asked for %d reads, want 1", m.taskReq)
	}
	first := m.taskReq
	m.refreshTasks()
	m.Update(tasksMsg{session: sid, req: m.taskReq, list: taskList("", 2, 0)})
	m.Update(tasksMsg{session: sid, req: first, list: taskList("", 7, 0)}) // late answer to the older read
	if len(m.tasks.Tasks) != 2 {
		t.Fatalf("a late read replaced a newer one: %d tasks", len(m.tasks.Tasks))
	}
	m.refreshTasks()
	m.Update(tasksMsg{session: "01other", req: m.taskReq, list: taskList("", 9, 0)})
	if len(m.tasks.Tasks) != 2 {
		t.Fatalf("another session's list was applied: %d tasks", len(m.tasks.Tasks))
	}
	m.refreshTasks()
	m.Update(tasksMsg{session: sid, req: m.taskReq, err: errors.New("disk on fire")})
	if s := screen(m); !strings.Contains(s, "read the task list: disk on fire") || len(m.tasks.Tasks) != 2 {
		t.Fatalf("a failed read:\n%s", s)
	}
	m.refreshTasks()
	m.Update(tasksMsg{session: sid, req: m.taskReq, err: liteagent.ErrNoSession})
	if m.tasks != nil || m.taskPanel() != nil {
		t.Fatalf("no session, yet a list: %+v", m.tasks)
	}
	// Leaving the session drops its list and the reads on their way.
	gotList(m, taskList("", 2, 0))
	pending := m.taskReq
	m.refreshTasks()
	m.setTranscript(newTranscript(), "01other")
	m.Update(tasksMsg{session: "01other", req: pending + 1, list: taskList("", 4, 0)})
	if m.tasks != nil {
		t.Fatalf("a read from before the switch was applied: %+v", m.tasks)
	}
	// Tool calls other than todo read nothing.
	before := m.taskReq
	l := &logBuilder{session: "01other"}
	feed(m, l.start(), l.prompt("x"), l.message(toolUse("b", "bash", `{}`)), l.started("b", "bash", `{}`), l.finished("b", "bash", "", false, false))
	if m.taskReq != before {
		t.Fatalf("a bash call read the task list")
	}
}

func TestCtrlTTogglesTasks(t *testing.T) {
	m := newViewModel(t, 80, 24)
	m.sessionID = sid
	m.Update(keyCtrlT)
	if m.hideTasks || !strings.Contains(screen(m), "no task list yet") {
		t.Fatalf("ctrl+t without a list: hidden %v\n%s", m.hideTasks, screen(m))
	}
	gotList(m, taskList("", 3, 1))
	typeText(m, "draft")
	for i, want := range []bool{true, false} {
		m.Update(keyCtrlT)
		s := screen(m)
		panel := strings.Contains(s, "── tasks 1/3 done")
		status := strings.Contains(s, "· tasks 1/3 ·")
		if m.hideTasks != want || panel == want || status != want {
			t.Fatalf("press %d: hidden %v, panel %v, status count %v:\n%s", i+1, m.hideTasks, panel, status, s)
		}
	}
	if m.input.Value() != "draft" {
		t.Fatalf("ctrl+t changed the input: %q", m.input.Value())
	}
}

// Over a real agent: the model's todo calls show in the panel, and loading
// a session shows its list.
func TestTasksWithAgent(t *testing.T) {
	set := `{"action":"set","tasks":[{"text":"write code","status":"in_progress"},{"text":"test it"}]}`
	update := `{"action":"update","tasks":[{"id":"1","status":"done"},{"id":"2","status":"in_progress"}]}`
	p := &fakeProvider{replies: []provider.Response{
		reply(toolUse("t1", "todo", set)),
		reply(text("Planned.")),
		reply(toolUse("t2", "todo", update)),
		reply(text("Coding done.")),
		reply(text("another session")),
	}}
	a, _ := newTestAgent(t, p, nil)
	d := drive(t, a, Options{SessionDB: "mem"})
	d.typeText("plan it")
	d.key(keyEnter)
	d.shows("── tasks 0/2 done")
	d.shows("▸ 1. write code")
	d.shows("○ 2. test it")
	d.until("the turn", func() bool { return !d.m.busy })
	first := a.SessionID()

	d.typeText("code it")
	d.key(keyEnter)
	d.shows("── tasks 1/2 done")
	d.shows("✓ 1. write code")
	d.shows("▸ 2. test it")
	d.until("the turn", func() bool { return !d.m.busy })

	d.typeText("/new")
	d.key(keyEnter)
	d.until("the list to go", func() bool { return d.m.tasks == nil && !strings.Contains(screen(d.m), "── tasks") })
	d.typeText("hello")
	time.Sleep(2 * time.Millisecond) // the sessions' times differ
	d.key(keyEnter)
	d.until("the second session's turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "another session") })
	if strings.Contains(screen(d.m), "── tasks") {
		t.Fatalf("the new session shows the first one's tasks:\n%s", screen(d.m))
	}

	d.typeText("/sessions")
	d.key(keyEnter)
	d.until("the picker", func() bool { return d.m.mode == modePicker })
	d.key(keyDown, keyEnter)
	d.shows("loaded session " + first)
	d.shows("── tasks 1/2 done")
}

var keyCtrlT = tea.KeyPressMsg{Code: 't', Mod: tea.ModCtrl}

// Over a real agent: a background job is counted in the status line while
// it runs.
func TestJobCountWithAgent(t *testing.T) {
	// The job runs until the test creates the file "go".
	p := &fakeProvider{replies: []provider.Response{
		reply(toolUse("b1", "bash", `{"command":"while [ ! -e go ]; do sleep 0.02; done","background":true}`)),
		reply(text("Started.")),
		reply(text("The job ended.")),
	}}
	approvals := NewApprovals()
	a, _ := newTestAgent(t, p, approvals.Approve)
	d := drive(t, a, Options{Approvals: approvals, SessionDB: "mem"})
	d.typeText("start it")
	d.key(keyEnter)
	d.until("the approval", func() bool { return len(d.m.asks) > 0 })
	d.key(keyDown, keyEnter)
	d.shows("1 job running")
	if err := os.WriteFile(filepath.Join(a.Workdir(), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.shows("The job ended.")
	d.until("the count to go", func() bool { return !strings.Contains(screen(d.m), "job running") })
	if d.m.jobs != 0 {
		t.Fatalf("%d jobs counted after the job ended", d.m.jobs)
	}
}
