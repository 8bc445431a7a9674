package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
)

// Messages of the program.
type (
	updatesMsg  []liteagent.Update // updates taken from the queue, in order
	askMsg      struct{ ask *approvalAsk }
	askGoneMsg  struct{ ask *approvalAsk } // the turn ended while asking
	turnDoneMsg struct {
		prompt string
		sess   *liteagent.Session // the session the turn ran in
		res    *liteagent.Result
		err    error
	}
	interruptMsg struct{} // SIGINT from outside (the terminal is raw: ctrl+c is a key)
	mdMsg        struct {
		e              *entry
		lines          []string
		width, version int
	}
	mdTickMsg struct{ e *entry }
)

// mode is what the keyboard talks to.
type mode int

const (
	modeInput   mode = iota // the prompt input (approvals are asked over it)
	modePicker              // a /sessions or /checkpoints list
	modeConfirm             // a yes/no question (hazard review, rewind)
)

// Layout and timing.
const (
	mdInterval   = 50 * time.Millisecond // at most one Markdown render of the streamed answer per interval
	maxLiveMD    = 32 << 10              // longer streamed answers are plain text until complete
	cacheCap     = 96                    // rendered entries kept
	cacheKeep    = 24                    // entries around the view kept when evicting
	maxInputRows = 8
	drainMax     = 512 // updates taken from the queue per message
)

// model is the program's state. It is used through a pointer and only on
// the Bubble Tea goroutine; everything that blocks runs in commands.
type model struct {
	agent     *liteagent.Agent
	opts      Options
	approvals *Approvals
	updates   *updateQueue       // the updates of the screen's sessions
	sess      *liteagent.Session // the screen's session; nil until the first prompt or load
	done      <-chan struct{}    // closed when the program ends
	// base is the program's context: turns and session operations derive
	// from it, so quitting cancels them.
	base context.Context
	now  func() time.Time
	loc  *time.Location

	width, height int
	theme         theme
	glam          *glamour.TermRenderer
	glamWidth     int

	tr        *transcript
	view      anchor
	cached    map[*entry]int // entries holding rendered lines → their index then
	lastRange [2]int         // entries of the last window drawn
	wantMD    []*entry       // entries drawn as plain text waiting for Markdown

	sessionID string
	ws        string // the workspace as shown

	input   textarea.Model
	history []string
	histIdx int
	draft   string

	busy      bool
	cancel    context.CancelFunc
	started   time.Time
	spin      spinner.Model
	spinning  bool      // a spinner tick is on its way
	bgStarted time.Time // when a turn the agent started itself began
	queued    []string

	asks    []*approvalAsk
	mode    mode
	picker  *picker
	confirm *confirm

	tasks     *session.TaskList // the session's task list, nil before it is read
	hideTasks bool              // the task panel is hidden (ctrl+t)
	taskReq   int               // task list reads asked for
	taskSeen  int               // the newest read applied
	jobs      int               // background jobs of the session that run

	op       string // the session operation running, if any
	hint     string // a transient line (cleared by the next key)
	armed    bool   // ctrl+c was pressed once
	quitting bool
}

func newModel(ctx context.Context, a *liteagent.Agent, opts Options, done <-chan struct{}) *model {
	updates := newUpdateQueue()
	m := &model{
		agent: a, opts: opts, approvals: opts.Approvals, updates: updates, done: done,
		base: ctx, now: time.Now, loc: time.Local,
		width: 80, height: 24,
		theme:  newTheme(!noColor(opts.Env)),
		tr:     newTranscript(),
		view:   anchor{follow: true},
		cached: map[*entry]int{},
	}
	m.sessionID = a.SessionID()
	m.ws = workspaceName(a.Workdir())
	m.spin = spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(m.theme.mark))
	m.input = newInput(m.theme)
	m.resize(m.width, m.height)
	return m
}

func newInput(th theme) textarea.Model {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Placeholder = "Ask lite-agent to do something; /help for commands"
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = maxInputRows
	ta.SetVirtualCursor(false)
	ta.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "alt+enter", "ctrl+j"))
	ta.KeyMap.LinePrevious = key.NewBinding(key.WithKeys("up"))
	ta.KeyMap.LineNext = key.NewBinding(key.WithKeys("down"))
	ta.KeyMap.PageUp = key.NewBinding(key.WithDisabled())
	ta.KeyMap.PageDown = key.NewBinding(key.WithDisabled())
	plain := lipgloss.NewStyle()
	st := textarea.StyleState{Base: plain, Text: plain, CursorLine: plain, Prompt: th.mark, Placeholder: th.dim, EndOfBuffer: plain, LineNumber: plain, CursorLineNumber: plain, Selection: plain.Reverse(true)}
	ta.SetStyles(textarea.Styles{Focused: st, Blurred: st, Cursor: textarea.CursorStyle{Shape: tea.CursorBar, Blink: false}})
	ta.Focus()
	return ta
}

// Init starts reading updates and approval requests, and shows the
// current session's transcript when the agent resumed one.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.readUpdates(), m.readAsks()}
	if m.sessionID != "" {
		// Opened again for the screen, so that the updates of its
		// background work come here.
		cmds = append(cmds, m.loadCmd(m.sessionID, true, ""))
	} else {
		m.tr.notice("lite-agent in " + m.workspace() + ": type a prompt, /help for commands")
		cmds = append(cmds, m.refreshTasks()) // a shared list (--task-list) shows before the first prompt
	}
	return tea.Batch(cmds...)
}

// readUpdates waits for the next updates and takes those already queued.
func (m *model) readUpdates() tea.Cmd {
	q, done := m.updates, m.done
	return func() tea.Msg {
		if batch := q.take(done, drainMax); batch != nil {
			return updatesMsg(batch)
		}
		return nil
	}
}

func (m *model) readAsks() tea.Cmd {
	if m.approvals == nil {
		return nil
	}
	asks, done := m.approvals.asks, m.done
	return func() tea.Msg {
		select {
		case a := <-asks:
			return askMsg{a}
		case <-done:
			return nil
		}
	}
}

// Update applies a message and returns what to do next.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	if m.quitting {
		return m, tea.Quit
	}
	return m, tea.Batch(cmd, m.prepare())
}

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
	case tea.KeyPressMsg:
		return m.key(msg)
	case tea.PasteMsg:
		if m.mode == modeInput {
			var cmd tea.Cmd
			m.input, cmd = m.input.Update(msg)
			return cmd
		}
	case interruptMsg:
		return m.ctrlC()
	case updatesMsg:
		return tea.Batch(m.applyUpdates(msg), m.readUpdates())
	case askMsg:
		return tea.Batch(m.asked(msg.ask), m.readAsks())
	case askGoneMsg:
		m.dropAsk(msg.ask)
	case turnDoneMsg:
		return m.turnDone(msg)
	case spinner.TickMsg:
		if !m.working() {
			m.spinning = false
			return nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return cmd
	case mdMsg:
		e := msg.e
		e.md.inflight = false
		if msg.width == m.width {
			e.md.lines, e.md.width, e.md.version = msg.lines, msg.width, msg.version
			e.linesWidth = 0 // draw it again
		}
		return m.scheduleMD(e)
	case mdTickMsg:
		msg.e.md.ticking = false
		return m.scheduleMD(msg.e)
	case resultMsg:
		return m.result(msg)
	case tasksMsg:
		m.gotTasks(msg)
	}
	return nil
}

func (m *model) resize(w, h int) {
	m.width, m.height = max(w, 20), max(h, 8)
	m.input.SetWidth(m.width)
	m.input.MaxHeight = max(1, min(maxInputRows, m.height/4))
}

// applyUpdates folds updates of the current session into the transcript.
func (m *model) applyUpdates(us updatesMsg) tea.Cmd {
	var cmds []tea.Cmd
	tasks, jobs := false, false
	for _, u := range us {
		if u.Session != m.sessionID {
			if u.Event == nil || u.Event.Type != session.TypeSessionStarted {
				continue // a session this screen has left
			}
			m.sessionID = u.Session
		}
		if u.Event != nil {
			tasks = tasks || isTodo(u.Event)
			jobs = jobs || u.Event.Type == session.TypeJobStarted || u.Event.Type == session.TypeJobFinished
		}
		var e *entry
		switch {
		case u.Delta != nil:
			e = m.tr.delta(*u.Delta)
		case u.Event != nil:
			was := m.tr.running
			e = m.tr.apply(*u.Event)
			if !was && m.tr.running && m.tr.bgTurn && !m.busy {
				// A turn the agent started itself: a background
				// completion turn.
				m.bgStarted = m.now()
				cmds = append(cmds, m.spinTick())
			}
		}
		if e != nil {
			cmds = append(cmds, m.scheduleMD(e))
		}
	}
	if tasks {
		cmds = append(cmds, m.refreshTasks())
	}
	if jobs {
		m.countJobs()
	}
	return tea.Batch(cmds...)
}

// scheduleMD renders e's Markdown off the UI goroutine: one render at a
// time, at most one per mdInterval.
func (m *model) scheduleMD(e *entry) tea.Cmd {
	if e.kind != kindAssistant || e.md.inflight || e.md.ticking || !e.async && len(e.text) <= syncMDLimit {
		return nil // short answers that were not streamed are rendered as they are drawn
	}
	w := m.width
	if e.md.lines != nil && e.md.width == w && e.md.version == e.version {
		return nil
	}
	if e.live && len(e.text) > maxLiveMD {
		return nil
	}
	if wait := mdInterval - m.now().Sub(e.md.started); wait > 0 {
		e.md.ticking = true
		return tea.Tick(wait, func(time.Time) tea.Msg { return mdTickMsg{e} })
	}
	e.md.inflight, e.md.started = true, m.now()
	text, version, th := e.text, e.version, m.theme
	return func() tea.Msg {
		r, err := newGlamour(&th, w)
		var lines []string
		if err != nil {
			lines = prefixed(wrap(text, w-2), "  ", "  ", lipgloss.NewStyle())
		} else {
			lines = renderMarkdown(r, text, w)
		}
		return mdMsg{e: e, lines: lines, width: w, version: version}
	}
}

// prepare runs after every update: it draws the window once so that
// entries in view that wait for Markdown get it rendered off the UI
// goroutine, and keeps the spinner going.
func (m *model) prepare() tea.Cmd {
	if m.mode == modePicker {
		return nil
	}
	m.wantMD = m.wantMD[:0]
	m.window(m.transcriptRows())
	var cmds []tea.Cmd
	for _, e := range m.wantMD {
		cmds = append(cmds, m.scheduleMD(e))
	}
	return tea.Batch(cmds...)
}

// key handles a key press.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c":
		return m.ctrlC()
	case "ctrl+z":
		return tea.Suspend
	case "ctrl+t":
		m.armed = false
		if !m.hasTasks() {
			m.hint = "no task list yet: the agent keeps one (the todo tool) for longer work"
			return nil
		}
		m.hideTasks = !m.hideTasks
		m.hint = ""
		if m.hideTasks {
			m.hint = "tasks hidden: ctrl+t shows them"
		}
		return nil
	}
	m.armed, m.hint = false, ""
	if len(m.asks) > 0 && m.mode == modeInput {
		if cmd, done := m.approvalKey(k); done {
			return cmd
		}
	}
	switch m.mode {
	case modePicker:
		return m.pickerKey(k)
	case modeConfirm:
		return m.confirmKey(k)
	}
	switch k.String() {
	case "esc":
		if m.busy && m.cancel != nil {
			m.cancel()
			m.hint = "cancelling the turn…"
		}
		return nil
	case "enter":
		return m.submit()
	case "tab":
		if m.complete() {
			return nil
		}
	case "pgup":
		m.scrollUp(max(1, m.transcriptRows()-2))
		return nil
	case "pgdown":
		m.scrollDown(max(1, m.transcriptRows()-2))
		return nil
	case "up":
		if m.input.Line() == 0 && m.input.LineInfo().RowOffset == 0 && m.historyBack() {
			return nil
		}
	case "down":
		li := m.input.LineInfo()
		if m.input.Line() == m.input.LineCount()-1 && li.RowOffset >= li.Height-1 && m.historyForward() {
			return nil
		}
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// ctrlC cancels the running turn (or clears the input) the first time and
// quits the second.
func (m *model) ctrlC() tea.Cmd {
	if m.armed {
		if m.cancel != nil {
			m.cancel()
		}
		m.quitting = true
		return nil
	}
	m.armed = true
	switch {
	case m.busy && m.cancel != nil:
		m.cancel()
		m.hint = "cancelling the turn… press ctrl+c again to quit"
	default:
		m.hint = "press ctrl+c again to quit"
	}
	return nil
}

// submit sends the input as a prompt or runs it as a command.
func (m *model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	if text == "" {
		return nil
	}
	m.remember(m.input.Value())
	m.input.Reset()
	m.view = anchor{follow: true}
	if strings.HasPrefix(text, "/") {
		return m.command(text)
	}
	if m.busy {
		m.queued = append(m.queued, text)
		m.hint = "queued: it is sent when this turn ends (esc cancels the turn)"
		return nil
	}
	return m.startTurn(text)
}

// startTurn runs Send in a command goroutine.
func (m *model) startTurn(prompt string) tea.Cmd {
	ctx, cancel := context.WithCancel(m.base)
	m.busy, m.cancel, m.started = true, cancel, m.now()
	m.bgStarted = time.Time{}
	a := m.agent
	expanded, notes := a.ExpandMentions(ctx, prompt) // @path mentions attach files
	for _, n := range notes {
		m.tr.notice(n)
	}
	sess, q := m.sess, m.updates
	send := func() tea.Msg {
		if sess == nil {
			var err error
			if sess, err = openSession(ctx, a, q, ""); err != nil {
				return turnDoneMsg{prompt: prompt, err: err}
			}
		}
		res, err := sess.Send(ctx, expanded, &liteagent.SendOptions{OnUpdate: q.push})
		return turnDoneMsg{prompt: prompt, sess: sess, res: res, err: err}
	}
	return tea.Batch(send, m.spinTick())
}

// working reports whether something runs that the spinner shows.
func (m *model) working() bool {
	return m.busy || m.op != "" || m.background()
}

// background reports whether a turn the agent started itself (a
// background completion turn) runs.
func (m *model) background() bool {
	return !m.busy && m.tr.running && m.tr.bgTurn && !m.bgStarted.IsZero()
}

// spinTick starts the spinner unless it runs.
func (m *model) spinTick() tea.Cmd {
	if m.spinning {
		return nil
	}
	m.spinning = true
	return m.spin.Tick
}

func (m *model) turnDone(msg turnDoneMsg) tea.Cmd {
	m.busy = false
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	if m.sess == nil {
		m.sess = msg.sess // the session the first prompt started
	}
	if msg.res != nil && msg.res.Session != "" && m.sessionID == "" {
		m.sessionID = msg.res.Session
	}
	var he *liteagent.HazardError
	switch {
	case msg.err == nil:
	case errors.As(msg.err, &he):
		m.queued = nil
		if m.input.Value() == "" {
			m.input.SetValue(msg.prompt) // send it again once the review is done
		}
		return m.reviewHazards(he.Hazards)
	case errors.Is(msg.err, context.Canceled):
		m.queued = nil
		m.tr.notice("turn cancelled")
		return nil
	default:
		m.queued = nil
		m.tr.fail("error: " + oneLine(msg.err.Error()))
		return nil
	}
	if len(m.queued) > 0 {
		next := m.queued[0]
		m.queued = m.queued[1:]
		return m.startTurn(next)
	}
	return nil
}

// asked shows an approval request over the input.
func (m *model) asked(a *approvalAsk) tea.Cmd {
	a.shown = m.now()
	m.asks = append(m.asks, a)
	if c := m.tr.call(a.req.CallID, a.req.Tool, a.req.Input); c.tool.state == toolRequested {
		c.tool.state = toolAsking
		c.tool.diff = a.req.Diff
		c.touch()
	}
	m.view = anchor{follow: true}
	return func() tea.Msg {
		select {
		case <-a.ctx.Done():
			return askGoneMsg{a}
		case <-a.answered:
			return nil
		}
	}
}

func (m *model) dropAsk(a *approvalAsk) {
	for i, x := range m.asks {
		if x == a {
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			break
		}
	}
	if c, ok := m.tr.byCall[a.req.CallID]; ok && c.tool.state == toolAsking {
		c.tool.state = toolRequested
		c.touch()
	}
}

// remember adds a prompt to the input history.
func (m *model) remember(s string) {
	if n := len(m.history); n == 0 || m.history[n-1] != s {
		m.history = append(m.history, s)
	}
	m.histIdx, m.draft = len(m.history), ""
}

func (m *model) historyBack() bool {
	if m.histIdx == 0 || len(m.history) == 0 {
		return false
	}
	if m.histIdx == len(m.history) {
		m.draft = m.input.Value()
	}
	m.histIdx--
	m.input.SetValue(m.history[m.histIdx])
	m.input.MoveToBegin()
	return true
}

func (m *model) historyForward() bool {
	if m.histIdx >= len(m.history) {
		return false
	}
	m.histIdx++
	if m.histIdx == len(m.history) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.history[m.histIdx])
	}
	m.input.MoveToEnd()
	return true
}
