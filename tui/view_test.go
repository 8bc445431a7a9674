package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cmp"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool/diff"
)

const sid = "01jx0000000000000000000abc"

const greeter = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"helo, world\")\n}\n"

// A finished turn with an answer in Markdown and tool calls of every kind
// of outcome.
func toolTurn(l *logBuilder) []liteagent.Update {
	return []liteagent.Update{
		l.start(),
		l.prompt("Fix the greeting in main.go and run the tests"),
		l.message(text("I'll fix the **greeting** first."),
			toolUse("c1", "edit", `{"path":"main.go","old_string":"fmt.Println(\"helo\")","new_string":"fmt.Println(\"hello\")"}`),
			toolUse("c2", "write", `{"path":"notes.md","content":"# Notes\n\n- fixed the greeting\n"}`)),
		l.started("c1", "edit", `{"path":"main.go","old_string":"fmt.Println(\"helo\")","new_string":"fmt.Println(\"hello\")"}`),
		l.finished("c1", "edit", "edited main.go: 1 replacement", false, false),
		l.finished("c2", "write", "The user denied this tool call; it was not run.", true, true),
		l.message(toolUse("c3", "bash", `{"command":"go test ./..."}`), toolUse("c4", "read", `{"path":"missing.go"}`)),
		l.started("c3", "bash", `{"command":"go test ./..."}`),
		l.finished("c3", "bash", "ok  \texample/a\t0.01s\nok  \texample/b\t0.02s\nok  \texample/c\t0.01s\nok  \texample/d\t0.03s\nok  \texample/e\t0.01s\nok  \texample/f\t0.01s", false, false),
		l.started("c4", "read", `{"path":"missing.go"}`),
		l.finished("c4", "read", "missing.go does not exist; list the directory with ls to find the file", true, false),
		l.message(text("Done:\n\n1. fixed the greeting\n2. the tests pass")),
		l.completed(),
	}
}

func TestScreens(t *testing.T) {
	tests := []struct {
		name  string
		rows  int // default 24
		setup func(t *testing.T, m *model)
	}{
		{"welcome", 0, func(t *testing.T, m *model) { m.Init() }},
		{"streaming", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			feed(m, l.start(), l.prompt("Explain what this repository does"))
			m.busy, m.started = true, clock.Add(-12*time.Second)
			feed(m, l.delta("This repository is a **coding agent** with"), l.delta(" durable sessions.\n\nIt has"))
		}},
		{"tools", 44, func(t *testing.T, m *model) {
			feed(m, toolTurn(&logBuilder{session: sid})...)
		}},
		{"approval", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			feed(m, l.start(), l.prompt("Write the notes"),
				l.message(text("Writing them."), toolUse("c1", "write", `{"path":"notes.md","content":"one\ntwo\n"}`)))
			m.busy, m.started = true, clock.Add(-3*time.Second)
			m.Update(askMsg{&approvalAsk{ctx: t.Context(), req: liteagent.ApprovalRequest{Session: sid, CallID: "c1", Tool: "write", Input: []byte(`{"path":"notes.md","content":"one\ntwo\n"}`)}, reply: make(chan verdict, 1), answered: make(chan struct{}), selected: -1}})
		}},
		{"approval_diff", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			in := `{"path":"main.go","old_string":"helo","new_string":"hello"}`
			feed(m, l.start(), l.prompt("Fix the greeting in main.go"),
				l.message(text("I'll correct the typo."), toolUse("c1", "edit", in)))
			m.busy, m.started = true, clock.Add(-time.Second)
			req := liteagent.ApprovalRequest{Session: sid, CallID: "c1", Tool: "edit", Input: []byte(in), Paths: []string{"main.go"},
				Diff: diff.Unified("main.go", greeter, strings.Replace(greeter, "helo", "hello", 1))}
			m.Update(askMsg{&approvalAsk{ctx: t.Context(), req: req, reply: make(chan verdict, 1), answered: make(chan struct{}), selected: -1}})
		}},
		{"edit_done", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			in := `{"path":"main.go","old_string":"helo","new_string":"hello"}`
			out := "edited main.go: replaced 1 occurrence\n" + diff.Unified("main.go", greeter, strings.Replace(greeter, "helo", "hello", 1))
			feed(m, l.start(), l.prompt("Fix the greeting in main.go"),
				l.message(toolUse("c1", "edit", in)), l.started("c1", "edit", in), l.finished("c1", "edit", out, false, false),
				l.message(text("Fixed:\n\n```go\nfunc main() {\n\tif true {\n\t\tfmt.Println(\"hello, world\")\n\t}\n}\n```")), l.completed())
		}},
		{"sessions", 0, func(t *testing.T, m *model) {
			m.sessionID = sid
			m.showSessions([]session.Summary{
				{ID: sid, Title: "Fix the greeting in main.go and run the tests", Messages: 6, Updated: clock},
				{ID: "01jw0000000000000000000def", Title: "Add a --verbose flag to the command line and document it in the README", Messages: 12, Updated: clock.Add(-26 * time.Hour), Open: []string{"c9"}},
				{ID: "01jv0000000000000000000123", Messages: 0, Updated: clock.Add(-72 * time.Hour)},
			})
			m.Update(keyDown)
		}},
		{"sessions_filtered", 0, func(t *testing.T, m *model) {
			m.showSessions([]session.Summary{
				{ID: sid, Title: "Fix the greeting", Messages: 6, Updated: clock},
				{ID: "01jw0000000000000000000def", Title: "Add a --verbose flag", Messages: 12, Updated: clock.Add(-26 * time.Hour)},
			})
			typeText(m, "verb")
		}},
		{"checkpoints", 0, func(t *testing.T, m *model) {
			m.sessionID = sid
			m.showCheckpoints([]session.Checkpoint{
				{Seq: 1, Prompt: "Fix the greeting in main.go", Time: clock},
				{Seq: 9, Prompt: "Now run the tests\nand fix what fails", Time: clock.Add(time.Minute)},
			})
		}},
		{"rewind", 0, func(t *testing.T, m *model) {
			feed(m, toolTurn(&logBuilder{session: sid})...)
			m.showPlan(2, "Fix the greeting in main.go and run the tests", &liteagent.RestoreResult{
				Session: sid, ToSeq: 2,
				Files:     []liteagent.FileChange{{Path: "main.go", Action: "restore"}, {Path: "notes.md", Action: "remove"}},
				Drift:     []string{"main.go"},
				NotUndone: []string{"bash c3"},
			})
		}},
		{"hazards", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			feed(m, l.start(), l.prompt("Deploy it"), l.message(toolUse("c1", "bash", `{"command":"make deploy"}`)), l.started("c1", "bash", `{"command":"make deploy"}`))
			m.tr.settle()
			m.reviewHazards([]session.Hazard{{Token: "rv-0123456789ab", CallID: "c1", Tool: "bash", Seq: 4, Started: clock.Add(4 * time.Second)}})
		}},
		{"help", 0, func(t *testing.T, m *model) {
			typeText(m, "/help")
			m.Update(keyEnter)
		}},
		{"scrolled", 0, func(t *testing.T, m *model) {
			l := &logBuilder{session: sid}
			feed(m, l.start())
			for i := range 30 {
				feed(m, l.prompt(fmt.Sprintf("prompt %d", i)), l.message(text(fmt.Sprintf("answer %d", i))), l.completed())
			}
			m.Update(keyPgUp)
			m.Update(keyPgUp)
			m.Update(keyPgDown)
		}},
	}
	for _, tt := range tests {
		for _, w := range []int{80, 40} {
			t.Run(fmt.Sprintf("%s_%d", tt.name, w), func(t *testing.T) {
				m := newViewModel(t, w, cmp.Or(tt.rows, 24))
				tt.setup(t, m)
				checkScreen(t, m, fmt.Sprintf("%s_%d", tt.name, w))
			})
		}
	}
}

// Every screen fits any width, down to the smallest the client draws.
func TestNarrowAndResize(t *testing.T) {
	m := newViewModel(t, 80, 24)
	feed(m, toolTurn(&logBuilder{session: sid})...)
	for _, w := range []int{120, 80, 57, 40, 33, 20, 100} {
		for _, h := range []int{24, 10, 40} {
			m.Update(teaSize(w, h))
			s := screen(m)
			lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
			if len(lines) != h {
				t.Fatalf("%dx%d: %d lines", w, h, len(lines))
			}
			for i, l := range lines {
				if n := widthOf(l); n > w {
					t.Fatalf("%dx%d: line %d is %d wide: %q", w, h, i+1, n, l)
				}
			}
			if !strings.Contains(s, "rev 13") && !strings.Contains(s, "r13") {
				t.Fatalf("%dx%d: the status line lost the revision:\n%s", w, h, s)
			}
		}
	}
}

func TestColorsUnlessNoColor(t *testing.T) {
	for _, env := range [][]string{{"NO_COLOR=1"}, {"NO_COLOR="}, {}} {
		a, _ := newTestAgent(t, nil, nil)
		m := newModel(context.Background(), a, Options{Env: env}, nil)
		m.Update(teaSize(80, 24))
		feed(m, toolTurn(&logBuilder{session: sid})...)
		colored := hasColor(m.View().Content)
		if want := !noColor(env); colored != want {
			t.Errorf("env %q: escape sequences %v, want %v", env, colored, want)
		}
	}
}
