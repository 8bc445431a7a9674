package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/config"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

func TestTranscriptFold(t *testing.T) {
	type want struct {
		kinds  []kind
		states map[string]toolState
	}
	tests := []struct {
		name    string
		updates func(l *logBuilder) []liteagent.Update
		settle  bool
		want    want
	}{
		{"streamed answer replaced by the message", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("hi"), l.delta("Hel"), l.delta("lo"), l.message(text("Hello")), l.completed()}
		}, false, want{kinds: []kind{kindUser, kindAssistant}}},
		{"tool calls through their outcomes", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("go"),
				l.message(toolUse("a", "bash", `{"command":"ls"}`), toolUse("b", "write", `{"path":"x","content":"y"}`), toolUse("c", "edit", `{}`)),
				l.started("a", "bash", `{"command":"ls"}`), l.finished("a", "bash", "x", false, false),
				l.finished("b", "write", "denied", true, true),
				l.started("c", "edit", `{}`), l.finished("c", "edit", "no match", true, false), l.completed()}
		}, false, want{kinds: []kind{kindUser, kindTool, kindTool, kindTool}, states: map[string]toolState{"a": toolDone, "b": toolDenied, "c": toolFailed}}},
		{"interrupted turn closes calls that never started", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("go"), l.message(toolUse("a", "bash", `{}`)),
				l.event(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: "cancelled"})}
		}, false, want{kinds: []kind{kindUser, kindTool, kindNotice}, states: map[string]toolState{"a": toolNotRun}}},
		{"a crash leaves a started call unknown", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("go"), l.message(toolUse("a", "bash", `{}`)), l.started("a", "bash", `{}`)}
		}, true, want{kinds: []kind{kindUser, kindTool}, states: map[string]toolState{"a": toolUnknown}}},
		{"acknowledged calls are unknown", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("go"), l.message(toolUse("a", "bash", `{}`)), l.started("a", "bash", `{}`),
				l.event(session.TypeRecoveryAcknowledged, session.RecoveryAcknowledged{Tokens: []string{"rv-1"}, CallIDs: []string{"a"}})}
		}, false, want{kinds: []kind{kindUser, kindTool, kindNotice}, states: map[string]toolState{"a": toolUnknown}}},
		{"cancelled stream keeps its text, cut off", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("go"), l.delta("partial"),
				l.event(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: "cancelled"})}
		}, false, want{kinds: []kind{kindUser, kindAssistant, kindNotice}}},
		{"background jobs are noted", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.start(), l.prompt("build"),
				l.event(session.TypeJobStarted, session.JobStarted{Job: "j1", CallID: "a", Command: "make"}),
				l.event(session.TypeJobFinished, session.JobFinished{Job: "j1", ExitCode: 2})}
		}, false, want{kinds: []kind{kindUser, kindNotice, kindNotice}}},
		{"a fork says where it came from", func(l *logBuilder) []liteagent.Update {
			return []liteagent.Update{l.event(session.TypeSessionStarted, session.SessionStarted{ID: "f", Parent: &session.ForkRef{Session: "p", Seq: 3}})}
		}, false, want{kinds: []kind{kindNotice}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTranscript()
			for _, u := range tt.updates(&logBuilder{session: sid}) {
				if u.Delta != nil {
					tr.delta(*u.Delta)
				} else {
					tr.apply(*u.Event)
				}
			}
			if tt.settle {
				tr.settle()
			}
			var kinds []kind
			for _, e := range tr.entries {
				kinds = append(kinds, e.kind)
			}
			if fmt.Sprint(kinds) != fmt.Sprint(tt.want.kinds) {
				t.Errorf("kinds %v, want %v", kinds, tt.want.kinds)
			}
			for id, st := range tt.want.states {
				if got := tr.byCall[id].tool.state; got != st {
					t.Errorf("call %s: state %d, want %d", id, got, st)
				}
			}
			if tr.live != nil {
				t.Errorf("a streamed answer is still live after its turn ended")
			}
		})
	}
}

func TestBackgroundTurn(t *testing.T) {
	m := newViewModel(t, 80, 24)
	l := &logBuilder{session: sid}
	feed(m, l.start(), l.prompt("build it"), l.message(text("Started.")), l.completed())
	if strings.Contains(screen(m), "background job's result") {
		t.Fatal("a turn shows as a background turn")
	}
	feed(m, l.event(session.TypeJobFinished, session.JobFinished{Job: "j1", ExitCode: 0}),
		l.event(session.TypeUserPrompt, session.UserPrompt{Text: "Job j1 ended", Background: true}))
	s := screen(m)
	for _, w := range []string{"background job j1 exited with 0", "background: Job j1 ended", "working on a background job's result"} {
		if !strings.Contains(s, w) {
			t.Fatalf("the screen does not show %q:\n%s", w, s)
		}
	}
	feed(m, l.message(text("The build passed.")), l.completed())
	if s := screen(m); strings.Contains(s, "background job's result") || !strings.Contains(s, "The build passed.") {
		t.Fatalf("after the background turn:\n%s", s)
	}
}

func TestHistory(t *testing.T) {
	m := newViewModel(t, 80, 24)
	for _, p := range []string{"/help", "second\nprompt", "/new"} {
		m.input.SetValue(p)
		m.Update(keyEnter)
	}
	typeText(m, "draft")
	steps := []struct {
		key  tea.KeyPressMsg
		want string
	}{
		{keyUp, "/new"},
		{keyUp, "second\nprompt"},   // the cursor goes to the first line, so up goes on
		{keyDown, "second\nprompt"}, // moved from the first line to the last one
		{keyDown, "/new"},
		{keyUp, "second\nprompt"},
		{keyUp, "/help"},
		{keyUp, "/help"}, // the oldest
		{keyDown, "second\nprompt"},
		{keyDown, "/new"},
		{keyDown, "draft"},
	}
	for i, s := range steps {
		m.Update(s.key)
		if got := m.input.Value(); got != s.want {
			t.Fatalf("step %d (%s): input %q, want %q", i+1, s.key, got, s.want)
		}
	}
	// A long line wraps: up and down move between its rows first.
	m = newViewModel(t, 40, 24)
	m.remember("old")
	long := strings.Repeat("word ", 20)
	typeText(m, long)
	m.Update(keyUp)
	if got := m.input.Value(); got != long {
		t.Fatalf("up on the last row of a wrapped line recalled %q", got)
	}
	m.input.SetValue("draft")
	m.Update(keyAltEnt)
	typeText(m, "x")
	if got := m.input.Value(); got != "draft\nx" {
		t.Fatalf("alt+enter: input %q, want a new line", got)
	}
}

func TestCtrlCAndEsc(t *testing.T) {
	t.Run("idle: twice quits", func(t *testing.T) {
		m := newViewModel(t, 80, 24)
		m.Update(keyCtrlC)
		if m.quitting || !strings.Contains(screen(m), "press ctrl+c again to quit") {
			t.Fatalf("first ctrl+c: quitting %v, screen:\n%s", m.quitting, screen(m))
		}
		_, cmd := m.Update(keyCtrlC)
		if !m.quitting || cmd == nil {
			t.Fatal("second ctrl+c did not quit")
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Fatal("second ctrl+c did not return tea.Quit")
		}
	})
	t.Run("another key disarms", func(t *testing.T) {
		m := newViewModel(t, 80, 24)
		m.Update(keyCtrlC)
		m.Update(runeKey('x'))
		m.Update(keyCtrlC)
		if m.quitting {
			t.Fatal("ctrl+c, x, ctrl+c quit")
		}
	})
	for _, k := range []tea.KeyPressMsg{keyCtrlC, keyEsc} {
		t.Run(k.String()+" cancels the turn", func(t *testing.T) {
			m := newViewModel(t, 80, 24)
			ctx, cancel := context.WithCancel(t.Context())
			m.busy, m.cancel = true, cancel
			m.Update(k)
			if ctx.Err() == nil {
				t.Fatal("the turn's context was not cancelled")
			}
			if m.quitting {
				t.Fatal("cancelling quit")
			}
		})
	}
	t.Run("outside interrupt is ctrl+c", func(t *testing.T) {
		m := newViewModel(t, 80, 24)
		m.Update(interruptMsg{})
		m.Update(interruptMsg{})
		if !m.quitting {
			t.Fatal("two interrupts did not quit")
		}
	})
}

// openApproval shows an approval for req on a fresh screen and returns
// the screen and where the decision arrives.
func openApproval(t *testing.T, req liteagent.ApprovalRequest, opts Options) (*model, chan error, chan liteagent.Decision) {
	t.Helper()
	p := NewApprovals()
	got, errs := make(chan liteagent.Decision, 1), make(chan error, 1)
	go func() {
		d, err := p.Approve(t.Context(), req)
		got <- d
		errs <- err
	}()
	m := newViewModel(t, 100, 30)
	m.opts.Rules, m.opts.ProjectConfig = opts.Rules, opts.ProjectConfig
	m.Update(askMsg{<-p.asks})
	return m, errs, got
}

func TestApprovals(t *testing.T) {
	req := liteagent.ApprovalRequest{CallID: "c1", Tool: "write", Input: []byte(`{"path":"a"}`)}
	tests := []struct {
		key  rune
		want liteagent.Decision
	}{{'y', liteagent.AllowOnce}, {'a', liteagent.AllowSession}, {'n', liteagent.Deny}}
	for _, tt := range tests {
		t.Run(string(tt.key), func(t *testing.T) {
			m, _, got := openApproval(t, req, Options{})
			// A key pressed as the question appears was typed before it:
			// it goes to the input, and answers nothing.
			m.Update(runeKey(tt.key))
			if len(m.asks) != 1 || m.input.Value() != string(tt.key) {
				t.Fatalf("an early %c answered (input %q); screen:\n%s", tt.key, m.input.Value(), screen(m))
			}
			m.input.Reset()
			m.now = func() time.Time { return clock.Add(approvalSettle) }
			m.Update(runeKey('q')) // not an answer: it lands in the input
			if len(m.asks) != 1 || m.input.Value() != "q" {
				t.Fatalf("q answered the question or was lost; screen:\n%s", screen(m))
			}
			m.Update(runeKey(tt.key)) // the input is not empty: still text
			if len(m.asks) != 1 || m.input.Value() != "q"+string(tt.key) {
				t.Fatalf("a key typed after text answered; screen:\n%s", screen(m))
			}
			m.input.Reset()
			m.Update(runeKey(tt.key))
			if d := <-got; d != tt.want {
				t.Fatalf("decision %v, want %v", d, tt.want)
			}
			if len(m.asks) != 0 || strings.Contains(screen(m), "approval ─") {
				t.Fatalf("the question is still shown:\n%s", screen(m))
			}
		})
	}
}

// Typing text while an approval is open takes no decision, whatever the
// letters; the text stays in the input and enter sends it as a prompt.
// Arrows and enter answer at once, settled or not.
func TestApprovalTypeAheadAndArrows(t *testing.T) {
	m, _, got := openApproval(t, liteagent.ApprovalRequest{CallID: "c1", Tool: "bash", Kind: "exec", Input: []byte(`{"command":"rm -f hello.txt"}`)}, Options{})
	m.now = func() time.Time { return clock.Add(time.Hour) }
	for _, text := range []string{"what about tests", "/sessions"} {
		typeText(m, text)
		if len(m.asks) != 1 || m.input.Value() != text {
			t.Fatalf("typing %q: input %q, %d questions; screen:\n%s", text, m.input.Value(), len(m.asks), screen(m))
		}
		if !strings.Contains(screen(m), text) || !strings.Contains(screen(m), "Allow bash") {
			t.Fatalf("the input or the question is not on screen:\n%s", screen(m))
		}
		m.input.Reset()
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter}) // nothing chosen, empty input
	if len(m.asks) != 1 {
		t.Fatal("enter with nothing chosen answered")
	}
	m.Update(keyDown)
	m.Update(keyDown)
	if !strings.Contains(screen(m), "› a allow bash for this session") {
		t.Fatalf("the choice is not marked:\n%s", screen(m))
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	if d := <-got; d != liteagent.AllowSession {
		t.Fatalf("decision %v", d)
	}
}

// A deny carries the input's text to the model; "allow this pattern"
// adds a rule and "save" writes it to the project's config file.
func TestApprovalDenyReasonAndRules(t *testing.T) {
	bashReq := liteagent.ApprovalRequest{CallID: "c1", Tool: "bash", Kind: "exec", Input: []byte(`{"command":"go test ./... && go vet ./..."}`)}
	m, errs, got := openApproval(t, bashReq, Options{})
	typeText(m, "use make test instead")
	for range 3 { // y, a, n
		m.Update(keyDown)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter})
	var de *liteagent.DeniedError
	if d, err := <-got, <-errs; d != liteagent.Deny || !errors.As(err, &de) || de.Reason != "use make test instead" {
		t.Fatalf("got %v %v, want a deny with the reason", d, err)
	}

	rules, _ := permission.New(nil)
	cfg := filepath.Join(t.TempDir(), ".lite-agent", "config.toml")
	m, _, got = openApproval(t, bashReq, Options{Rules: rules, ProjectConfig: cfg})
	m.now = func() time.Time { return clock.Add(time.Second) }
	if s := screen(m); !strings.Contains(s, "p allow bash(go test *) bash(go vet *) this session") || !strings.Contains(s, "e allow exactly bash(go test ./...) bash(go vet ./...)") {
		t.Fatalf("the rule choices are not offered:\n%s", s)
	}
	m.Update(runeKey('s'))
	if d := <-got; d != liteagent.AllowOnce {
		t.Fatalf("decision %v", d)
	}
	if d := rules.Decide(permission.Request{Tool: "bash", Kind: "exec", Command: "go test -run X ./tui"}); d.Effect != permission.Allow {
		t.Fatalf("the pattern was not added: %+v", d)
	}
	f, err := config.Read(cfg)
	if err != nil || f == nil || len(f.Permissions.Allow) != 2 || f.Permissions.Allow[0].Pattern+f.Permissions.Allow[1].Pattern != "bash(go vet *)bash(go test *)" {
		t.Fatalf("saved %+v, %v", f, err)
	}
}

// waitFor runs cmd (and the commands of batches it returns) until one
// yields a T.
func waitFor[T tea.Msg](t testing.TB, cmd tea.Cmd) T {
	t.Helper()
	found := make(chan T, 1)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			switch msg := c().(type) {
			case tea.BatchMsg:
				for _, c := range msg {
					run(c)
				}
			case T:
				select {
				case found <- msg:
				default:
				}
			}
		}()
	}
	run(cmd)
	select {
	case msg := <-found:
		return msg
	case <-time.After(5 * time.Second):
		var zero T
		t.Fatalf("no %T came", zero)
		return zero
	}
}

func TestCommandsNeedADatabase(t *testing.T) {
	for _, cmd := range []string{"/sessions", "/checkpoints", "/fork", "/rewind 1"} {
		t.Run(cmd, func(t *testing.T) {
			m := newViewModel(t, 80, 24)
			m.opts.SessionDB = ""
			typeText(m, cmd)
			m.Update(keyEnter)
			name := strings.Fields(cmd)[0]
			if s := screen(m); !strings.Contains(s, name+" needs --session-db PATH") {
				t.Fatalf("screen does not say %s needs --session-db:\n%s", name, s)
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		m := newViewModel(t, 80, 24)
		typeText(m, "/frobnicate")
		m.Update(keyEnter)
		if s := screen(m); !strings.Contains(s, "unknown command /frobnicate; /help lists them") {
			t.Fatalf("screen:\n%s", s)
		}
	})
	t.Run("busy", func(t *testing.T) {
		m := newViewModel(t, 80, 24)
		m.busy = true
		typeText(m, "/sessions")
		m.Update(keyEnter)
		if s := screen(m); !strings.Contains(s, "wait for the turn to end") || m.mode != modeInput {
			t.Fatalf("screen:\n%s", s)
		}
	})
}

func TestScrolling(t *testing.T) {
	m := newViewModel(t, 80, 24)
	l := &logBuilder{session: sid}
	feed(m, l.start())
	for i := range 2000 {
		feed(m, l.prompt(fmt.Sprintf("prompt %d", i)), l.message(text(fmt.Sprintf("answer %d", i))))
	}
	if s := screen(m); !strings.Contains(s, "answer 1999") {
		t.Fatalf("the end is not shown:\n%s", s)
	}
	for range 5000 {
		m.Update(keyPgUp)
	}
	if s := screen(m); !strings.Contains(s, "prompt 0") || !strings.Contains(s, "↓ more below") {
		t.Fatalf("page up to the top does not show the start:\n%s", s)
	}
	if len(m.cached) > cacheCap+1 {
		t.Fatalf("%d entries keep renderings, more than the cap %d", len(m.cached), cacheCap)
	}
	m.Update(keyPgDown)
	if s := screen(m); strings.Contains(s, "prompt 0\n") {
		t.Fatalf("page down did not move:\n%s", s)
	}
	// New entries while scrolled up do not move the view.
	transcript := func() string { s := screen(m); return s[:strings.LastIndex(strings.TrimSuffix(s, "\n"), "\n")] }
	before := transcript()
	feed(m, l.prompt("new"), l.message(text("newest")))
	if after := transcript(); after != before {
		t.Fatalf("the view moved when an entry was added:\n%s", after)
	}
	for range 5000 {
		m.Update(keyPgDown)
	}
	if !m.view.follow || !strings.Contains(screen(m), "newest") {
		t.Fatalf("page down to the end does not follow it:\n%s", screen(m))
	}
	// Sending a prompt returns to the end.
	m.Update(keyPgUp)
	typeText(m, "/help")
	m.Update(keyEnter)
	if !m.view.follow {
		t.Fatal("entering a prompt did not follow the end")
	}
}

func TestStreamedMarkdown(t *testing.T) {
	m := newViewModel(t, 80, 24)
	now := clock
	m.now = func() time.Time { return now }
	l := &logBuilder{session: sid}
	feed(m, l.start(), l.prompt("go"))
	_, cmd := m.Update(updatesMsg{l.delta("Some **bold**")})
	e := m.tr.live
	if e == nil || !e.md.inflight {
		t.Fatalf("the first delta did not start a render")
	}
	if s := screen(m); !strings.Contains(s, "Some **bold**") {
		t.Fatalf("before the render the text is shown plain:\n%s", s)
	}
	m.Update(waitFor[mdMsg](t, cmd))
	if s := screen(m); !strings.Contains(s, "Some bold") {
		t.Fatalf("after the render the text is Markdown:\n%s", s)
	}
	// Within the interval another delta waits for a tick, not a render.
	now = now.Add(10 * time.Millisecond)
	_, cmd = m.Update(updatesMsg{l.delta(" and *more*")})
	if e.md.inflight || !e.md.ticking {
		t.Fatalf("a delta 10ms after a render started another one (inflight %v, ticking %v)", e.md.inflight, e.md.ticking)
	}
	if s := screen(m); !strings.Contains(s, "Some bold") {
		t.Fatalf("the last render is shown meanwhile:\n%s", s)
	}
	now = now.Add(mdInterval)
	_, cmd = m.Update(waitFor[mdTickMsg](t, cmd))
	m.Update(waitFor[mdMsg](t, cmd))
	if s := screen(m); !strings.Contains(s, "Some bold and more") {
		t.Fatalf("the next render shows the new text:\n%s", s)
	}
	// The complete message keeps the rendering when its text is the same.
	feed(m, l.message(text("Some **bold** and *more*")), l.completed())
	if s := screen(m); !strings.Contains(s, "Some bold and more") || m.tr.live != nil {
		t.Fatalf("the complete message:\n%s", s)
	}
}

func TestQueuedPrompt(t *testing.T) {
	m := newViewModel(t, 80, 24)
	m.busy = true
	typeText(m, "next one")
	m.Update(keyEnter)
	if len(m.queued) != 1 || m.input.Value() != "" {
		t.Fatalf("queued %q, input %q", m.queued, m.input.Value())
	}
	if !strings.Contains(screen(m), "queued") {
		t.Fatalf("the screen does not say it was queued:\n%s", screen(m))
	}
}

// The whole client over a real agent (with a scripted model in process):
// a streamed answer, an approval, sessions, checkpoints and hazards.
func TestWithAgent(t *testing.T) {
	t.Run("approve a write, then rewind it", func(t *testing.T) {
		p := &fakeProvider{replies: []provider.Response{
			reply(text("I'll write it."), toolUse("c1", "write", `{"path":"a.txt","content":"hello\n"}`)),
			reply(text("Wrote **a.txt**.")),
		}}
		approvals := NewApprovals()
		a, _ := newTestAgent(t, p, approvals.Approve)
		d := drive(t, a, Options{Approvals: approvals, SessionDB: "mem", Model: "test-model"})
		d.typeText("write a.txt")
		d.key(keyEnter)
		d.until("the approval", func() bool { return len(d.m.asks) > 0 })
		if s := screen(d.m); !strings.Contains(s, "Allow write a.txt (1 line)?") || !strings.Contains(s, "+ hello") {
			t.Fatalf("approval screen:\n%s", s)
		}
		d.key(keyDown, keyEnter) // a deliberate choice: "allow once"
		d.until("the turn to end", func() bool { return !d.m.busy })
		d.shows("Wrote a.txt.")
		d.shows("✓ write a.txt")
		path := filepath.Join(a.Workdir(), "a.txt")
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
		d.typeText("/checkpoints")
		d.key(keyEnter)
		d.until("the checkpoints", func() bool { return d.m.mode == modePicker })
		d.key(keyEnter)
		d.shows("remove a.txt")
		d.key(runeKey('y'))
		d.shows("To undo: lite-agent --session-db mem")
		d.shows("--restore " + a.SessionID() + "-r")
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a.txt after the rewind: %v", err)
		}
		if strings.Contains(screen(d.m), "Wrote a.txt") {
			t.Fatalf("the rewound transcript still shows the answer:\n%s", screen(d.m))
		}
	})
	t.Run("cancel while asking", func(t *testing.T) {
		p := &fakeProvider{replies: []provider.Response{reply(toolUse("c1", "bash", `{"command":"rm -rf build"}`))}}
		approvals := NewApprovals()
		a, _ := newTestAgent(t, p, approvals.Approve)
		d := drive(t, a, Options{Approvals: approvals, SessionDB: "mem"})
		d.typeText("clean")
		d.key(keyEnter)
		d.until("the approval", func() bool { return len(d.m.asks) > 0 })
		d.key(keyEsc)
		d.until("the turn to end", func() bool { return !d.m.busy && len(d.m.asks) == 0 })
		d.shows("turn cancelled")
		d.shows("turn interrupted: cancelled")
	})
	t.Run("esc stops a stream", func(t *testing.T) {
		p := &fakeProvider{delay: 20 * time.Millisecond, replies: []provider.Response{reply(text(strings.Repeat("word ", 400)))}}
		a, _ := newTestAgent(t, p, nil)
		d := drive(t, a, Options{})
		d.typeText("talk")
		d.key(keyEnter)
		d.shows("word word")
		d.key(keyEsc)
		d.until("the turn to end", func() bool { return !d.m.busy })
		d.shows("turn cancelled")
	})
	t.Run("switch sessions", func(t *testing.T) {
		p := &fakeProvider{replies: []provider.Response{reply(text("first answer")), reply(text("second answer"))}}
		a, _ := newTestAgent(t, p, nil)
		d := drive(t, a, Options{SessionDB: "mem"})
		d.typeText("first session")
		d.key(keyEnter)
		d.until("the first turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "first answer") })
		first := a.SessionID()
		d.typeText("/new")
		d.key(keyEnter)
		time.Sleep(2 * time.Millisecond) // the sessions' times differ
		d.typeText("second session")
		d.key(keyEnter)
		d.until("the second turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "second answer") })
		d.typeText("/sessions")
		d.key(keyEnter)
		d.until("the picker", func() bool { return d.m.mode == modePicker })
		d.key(keyDown, keyEnter)
		d.shows("loaded session " + first)
		s := screen(d.m)
		if !strings.Contains(s, "first session") || !strings.Contains(s, "first answer") || strings.Contains(s, "second answer") {
			t.Fatalf("the loaded session's transcript:\n%s", s)
		}
		if a.SessionID() != first {
			t.Fatalf("agent is in %s, want %s", a.SessionID(), first)
		}
		// Up recalls the loaded session's prompts.
		d.key(keyUp)
		if d.m.input.Value() != "first session" {
			t.Fatalf("history after loading: %q", d.m.input.Value())
		}
	})
	t.Run("the picker searches content", func(t *testing.T) {
		p := &fakeProvider{replies: []provider.Response{reply(text("the quokka is refactored")), reply(text("plain answer"))}}
		a, _ := newTestAgent(t, p, nil)
		d := drive(t, a, Options{SessionDB: "mem"})
		d.typeText("first session")
		d.key(keyEnter)
		d.until("the first turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "quokka") })
		first := a.SessionID()
		d.typeText("/new")
		d.key(keyEnter)
		d.typeText("second session")
		d.key(keyEnter)
		d.until("the second turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "plain answer") })
		d.typeText("/sessions")
		d.key(keyEnter)
		d.until("the picker", func() bool { return d.m.mode == modePicker })
		d.typeText("quok")
		d.until("the content match", func() bool { return strings.Contains(screen(d.m), "“the quokka is refactored”") })
		if s := screen(d.m); strings.Contains(s, "second session") {
			t.Fatalf("a session without the word is shown:\n%s", s)
		}
		d.key(keyEnter)
		d.shows("loaded session " + first)
	})
	t.Run("review hazards on load", func(t *testing.T) {
		a, store := newTestAgent(t, &fakeProvider{replies: []provider.Response{reply(text("carrying on"))}}, nil)
		id := "01crashed00000000000000000"
		l := &logBuilder{session: id}
		var events []session.Event
		for _, u := range []liteagent.Update{l.event(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: a.Namespace()}),
			l.prompt("deploy"), l.message(toolUse("c1", "bash", `{"command":"make deploy"}`)), l.started("c1", "bash", `{"command":"make deploy"}`)} {
			events = append(events, *u.Event)
		}
		if _, err := store.Append(t.Context(), id, 0, events); err != nil {
			t.Fatal(err)
		}
		d := drive(t, a, Options{SessionDB: "mem"})
		d.typeText("/sessions")
		d.key(keyEnter)
		d.until("the picker", func() bool { return d.m.mode == modePicker })
		if s := screen(d.m); !strings.Contains(s, "! deploy") {
			t.Fatalf("the session with hazards is not marked:\n%s", s)
		}
		d.key(keyEnter)
		d.until("the review", func() bool { return d.m.mode == modeConfirm })
		s := screen(d.m)
		for _, w := range []string{"bash · call c1 · token " + session.ReviewToken("c1", 4), "! bash make deploy", "Have you checked"} {
			if !strings.Contains(s, w) {
				t.Fatalf("the review does not show %q:\n%s", w, s)
			}
		}
		d.key(runeKey('y'))
		d.shows("acknowledged 1 interrupted tool call(s)")
		if len(a.Hazards()) != 0 {
			t.Fatalf("hazards left: %v", a.Hazards())
		}
		d.typeText("go on")
		d.key(keyEnter)
		d.until("the turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "carrying on") })
	})
	t.Run("a refused prompt comes back after the review", func(t *testing.T) {
		a, store := newTestAgent(t, &fakeProvider{}, nil)
		id := "01crashed00000000000000001"
		l := &logBuilder{session: id}
		var events []session.Event
		for _, u := range []liteagent.Update{l.event(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: a.Namespace()}),
			l.prompt("deploy"), l.message(toolUse("c1", "bash", `{}`)), l.started("c1", "bash", `{}`)} {
			events = append(events, *u.Event)
		}
		if _, err := store.Append(t.Context(), id, 0, events); err != nil {
			t.Fatal(err)
		}
		if err := a.Resume(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		d := drive(t, a, Options{SessionDB: "mem"})
		d.until("the review on start", func() bool { return d.m.mode == modeConfirm })
		d.key(runeKey('n'))
		d.shows("not acknowledged")
		d.typeText("go on anyway")
		d.key(keyEnter)
		d.until("the refusal", func() bool { return !d.m.busy && d.m.mode == modeConfirm })
		if d.m.input.Value() != "go on anyway" {
			t.Fatalf("the refused prompt is not back in the input: %q", d.m.input.Value())
		}
	})
	t.Run("an approval a crash cut off is asked again", func(t *testing.T) {
		approvals := NewApprovals()
		a, store := newTestAgent(t, &fakeProvider{replies: []provider.Response{reply(text("went on"))}}, approvals.Approve)
		id := "01crashed00000000000000002"
		l := &logBuilder{session: id}
		var events []session.Event
		for _, u := range []liteagent.Update{l.event(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: a.Namespace()}),
			l.prompt("write it"), l.message(toolUse("c1", "write", `{"path":"b.txt","content":"b\n"}`))} {
			events = append(events, *u.Event)
		}
		if _, err := store.Append(t.Context(), id, 0, events); err != nil {
			t.Fatal(err)
		}
		if err := a.Resume(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		d := drive(t, a, Options{Approvals: approvals, SessionDB: "mem"})
		d.shows("… write b.txt (1 line)")
		d.typeText("go on")
		d.key(keyEnter)
		d.until("the approval", func() bool { return len(d.m.asks) > 0 })
		d.shows("Allow write b.txt (1 line)?")
		d.key(keyDown, keyEnter)
		d.until("the turn", func() bool { return !d.m.busy && strings.Contains(screen(d.m), "went on") })
		d.shows("✓ write b.txt")
		if _, err := os.Stat(filepath.Join(a.Workdir(), "b.txt")); err != nil {
			t.Fatal(err)
		}
	})
}
