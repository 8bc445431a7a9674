package tui

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/")

// clock is the fixed time of view tests.
var clock = time.Date(2025, 6, 1, 14, 30, 0, 0, time.UTC)

// fakeProvider answers with scripted responses, streaming their text in
// small pieces (waiting delay between pieces, stopping when ctx ends).
type fakeProvider struct {
	mu      sync.Mutex
	replies []provider.Response
	delay   time.Duration
	calls   int
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	p.mu.Lock()
	if p.calls >= len(p.replies) {
		p.mu.Unlock()
		return provider.Response{}, errors.New("fake provider: the script ran out")
	}
	r := p.replies[p.calls]
	p.calls++
	p.mu.Unlock()
	for i, b := range r.Blocks {
		if b.Type != session.BlockText {
			continue
		}
		runes := []rune(b.Text)
		for len(runes) > 0 {
			n := min(len(runes), 4)
			if onDelta != nil {
				onDelta(provider.Delta{Index: i, Kind: provider.DeltaText, Text: string(runes[:n])})
			}
			runes = runes[n:]
			if p.delay > 0 {
				select {
				case <-time.After(p.delay):
				case <-ctx.Done():
					return provider.Response{}, ctx.Err()
				}
			}
		}
	}
	if r.StopReason == "" {
		r.StopReason = provider.StopEndTurn
	}
	return r, nil
}

func text(s string) session.Block { return session.Block{Type: session.BlockText, Text: s} }

func toolUse(id, name, input string) session.Block {
	return session.Block{Type: session.BlockToolUse, ID: id, Name: name, Input: []byte(input)}
}

func reply(blocks ...session.Block) provider.Response {
	r := provider.Response{Blocks: blocks, Usage: session.Usage{InputTokens: 100, OutputTokens: 20}}
	for _, b := range blocks {
		if b.Type == session.BlockToolUse {
			r.StopReason = provider.StopToolUse
		}
	}
	return r
}

// newTestAgent returns an agent over an in-memory store in a fresh workdir.
func newTestAgent(t testing.TB, p provider.Provider, approve liteagent.ApprovalFunc) (*liteagent.Agent, *memory.Store) {
	t.Helper()
	store := memory.New()
	opts := &liteagent.Options{Workdir: t.TempDir(), Checkpointer: store, Model: "test-model", Approve: approve}
	if p != nil {
		opts.Provider = p
	}
	a, err := liteagent.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		store.Close()
	})
	return a, store
}

// newViewModel returns a model for view tests: no colour, a fixed clock,
// UTC, a fixed workspace name, sized w×h. Updates are fed by hand.
func newViewModel(t testing.TB, w, h int) *model {
	t.Helper()
	a, _ := newTestAgent(t, nil, nil)
	m := newModel(context.Background(), a, Options{SessionDB: "sessions.db", Model: "test-model", Env: []string{"NO_COLOR=1"}}, nil)
	m.now = func() time.Time { return clock }
	m.loc = time.UTC
	m.ws = "~/proj"
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m
}

// screen is the text of the model's view, without styles or trailing
// spaces.
func screen(m *model) string {
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

// checkScreen checks a screen's size and compares it with
// testdata/name.golden (rewritten with -update).
func checkScreen(t *testing.T, m *model, name string) {
	t.Helper()
	got := screen(m)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != m.height {
		t.Errorf("screen has %d lines, want %d", len(lines), m.height)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Errorf("line %d is %d columns wide, more than %d: %q", i+1, w, m.width, l)
		}
	}
	if hasColor(m.View().Content) {
		t.Errorf("NO_COLOR screen has colours: %q", m.View().Content)
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("screen %s differs from the golden file (-want +got):\n%s\ngot:\n%s", name, diff, got)
	}
}

// logBuilder makes the updates of a session log by hand.
type logBuilder struct {
	session string
	seq     int64
}

func (l *logBuilder) event(typ session.Type, p any) liteagent.Update {
	l.seq++
	e := session.MustNew(typ, p)
	e.Seq, e.Time = l.seq, clock.Add(time.Duration(l.seq)*time.Second)
	return liteagent.Update{Session: l.session, Event: &e}
}

func (l *logBuilder) delta(s string) liteagent.Update {
	return liteagent.Update{Session: l.session, Delta: &provider.Delta{Kind: provider.DeltaText, Text: s}}
}

func (l *logBuilder) start() liteagent.Update {
	return l.event(session.TypeSessionStarted, session.SessionStarted{ID: l.session, Namespace: "/proj", Model: "test-model"})
}

func (l *logBuilder) prompt(s string) liteagent.Update {
	return l.event(session.TypeUserPrompt, session.UserPrompt{Text: s})
}

func (l *logBuilder) message(blocks ...session.Block) liteagent.Update {
	return l.event(session.TypeAssistantMessage, session.AssistantMessage{Blocks: blocks, Usage: session.Usage{InputTokens: 1200, OutputTokens: 300}, Model: "test-model"})
}

func (l *logBuilder) started(id, tool, input string) liteagent.Update {
	return l.event(session.TypeToolStarted, session.ToolStarted{CallID: id, Tool: tool, Input: []byte(input), Approval: "once"})
}

func (l *logBuilder) finished(id, tool, out string, isErr, denied bool) liteagent.Update {
	return l.event(session.TypeToolFinished, session.ToolFinished{CallID: id, Tool: tool, Output: out, IsError: isErr, Denied: denied})
}

func (l *logBuilder) completed() liteagent.Update {
	return l.event(session.TypeTurnCompleted, session.TurnCompleted{StopReason: "end_turn"})
}

// feed applies updates as the subscription would deliver them.
func feed(m *model, us ...liteagent.Update) {
	m.Update(updatesMsg(us))
}

// Keys.
var (
	keyEnter  = tea.KeyPressMsg{Code: tea.KeyEnter}
	keyEsc    = tea.KeyPressMsg{Code: tea.KeyEscape}
	keyUp     = tea.KeyPressMsg{Code: tea.KeyUp}
	keyDown   = tea.KeyPressMsg{Code: tea.KeyDown}
	keyPgUp   = tea.KeyPressMsg{Code: tea.KeyPgUp}
	keyPgDown = tea.KeyPressMsg{Code: tea.KeyPgDown}
	keyCtrlC  = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	keyAltEnt = tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
)

func runeKey(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Text: string(r)} }

// typeText types s key by key.
func typeText(m *model, s string) {
	for _, r := range s {
		m.Update(runeKey(r))
	}
}

// driver runs a model as Bubble Tea would, in the test's goroutine:
// commands run in goroutines and their messages are applied in order.
type driver struct {
	t    testing.TB
	m    *model
	msgs chan tea.Msg
	done chan struct{}
}

// drive starts the model of a real agent, as Run does.
func drive(t testing.TB, a *liteagent.Agent, opts Options) *driver {
	t.Helper()
	d := &driver{t: t, msgs: make(chan tea.Msg, 64), done: make(chan struct{})}
	opts.Env = []string{"NO_COLOR=1"}
	d.m = newModel(t.Context(), a, opts, d.done)
	d.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	t.Cleanup(func() {
		close(d.done)
		if d.m.cancel != nil {
			d.m.cancel()
		}
	})
	d.exec(d.m.Init())
	return d
}

func (d *driver) exec(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		if msg == nil {
			return
		}
		select {
		case d.msgs <- msg:
		case <-d.done:
		}
	}()
}

func (d *driver) handle(msg tea.Msg) {
	switch msg := msg.(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			d.exec(c)
		}
		return
	case tea.QuitMsg:
		return
	}
	_, cmd := d.m.Update(msg)
	d.exec(cmd)
}

// key presses keys, applying what they lead to at once.
func (d *driver) key(ks ...tea.KeyPressMsg) {
	for _, k := range ks {
		d.handle(k)
	}
}

func (d *driver) typeText(s string) {
	for _, r := range s {
		d.handle(runeKey(r))
	}
}

// until applies messages until cond holds, failing after a deadline.
func (d *driver) until(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case msg := <-d.msgs:
			d.handle(msg)
		case <-deadline:
			d.t.Fatalf("timed out waiting for %s; screen:\n%s", what, screen(d.m))
		}
	}
}

// shows waits until the screen contains s.
func (d *driver) shows(s string) {
	d.t.Helper()
	d.until("the screen to show "+s, func() bool { return strings.Contains(screen(d.m), s) })
}

func teaSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

func widthOf(s string) int { return ansi.StringWidth(s) }

// hasColor reports whether s sets a foreground or background colour (SGR
// parameters 30–49 or 90–107); bold, italics and the like are allowed.
func hasColor(s string) bool {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return false
		}
		s = s[i+2:]
		j := strings.IndexFunc(s, func(r rune) bool { return r >= 0x40 && r <= 0x7e })
		if j < 0 {
			return false
		}
		if s[j] == 'm' {
			for _, p := range strings.Split(s[:j], ";") {
				n, err := strconv.Atoi(p)
				if err == nil && (n >= 30 && n <= 49 || n >= 90 && n <= 107) {
					return true
				}
			}
		}
		s = s[j+1:]
	}
}
