package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/usercmd"
)

// help lists the keys and commands, in two columns when the screen is
// wide enough.
var help = []struct{ key, what string }{
	{"Keys:", ""},
	{"enter", "send the prompt (during a turn: queue it)"},
	{"alt+enter", "new line (also shift+enter, ctrl+j)"},
	{"up / down", "previous / next prompt (on the first / last line)"},
	{"pgup / pgdn", "scroll the transcript"},
	{"esc", "cancel the running turn"},
	{"ctrl+c", "cancel the turn; twice: quit"},
	{"ctrl+z", "suspend (fg to come back)"},
	{"ctrl+t", "show / hide the task list"},
	{"tab", "complete a path after @, a command after /"},
	{"y / a / n", "allow a tool call once / for this session / deny it"},
	{"Commands:", ""},
	{"/sessions", "switch to another session of this workspace"},
	{"/checkpoints", "rewind the session and its files to before a prompt"},
	{"/rewind SEQ", "rewind to checkpoint SEQ"},
	{"/fork [SEQ]", "continue in a copy of this session (up to SEQ)"},
	{"/compact", "send a summary instead of the transcript so far (/compact FOCUS: what to keep)"},
	{"/new", "start a new session"},
	{"/model NAME", "switch the session's model (alone: show it)"},
	{"/mcp", "the MCP servers: state, tools, prompts"},
	{"/mcp__S__P", "send MCP server S's prompt P (ARGS after it)"},
	{"/help", "this help, and your own commands"},
	{"/exit", "quit"},
}

func helpText(w int) string {
	var b strings.Builder
	for i, h := range help {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch {
		case h.what == "":
			b.WriteString(h.key)
		case w >= 60:
			fmt.Fprintf(&b, "  %-13s%s", h.key, h.what)
		default:
			fmt.Fprintf(&b, "  %s\n      %s", h.key, h.what)
		}
	}
	return b.String()
}

// resultMsg carries the outcome of a session operation run in a command
// goroutine; apply runs on the UI goroutine.
type resultMsg struct {
	apply func(*model) tea.Cmd
}

func (m *model) result(r resultMsg) tea.Cmd {
	m.op = ""
	return r.apply(m)
}

// do runs f (which may block) in a command goroutine, showing label as the
// activity meanwhile.
func (m *model) do(label string, f func(ctx context.Context) func(*model) tea.Cmd) tea.Cmd {
	m.op = label
	ctx := m.base
	return tea.Batch(func() tea.Msg { return resultMsg{apply: f(ctx)} }, m.spinTick())
}

// failed reports an operation's error in the transcript.
func failed(what string, err error) func(*model) tea.Cmd {
	return func(m *model) tea.Cmd {
		m.tr.fail(what + ": " + oneLine(err.Error()))
		return nil
	}
}

// confirm is a yes/no question shown in place of the input.
type confirm struct {
	title    string
	body     []string
	question string
	keys     string
	yes, no  func() tea.Cmd
}

func (m *model) ask(c *confirm) {
	m.mode, m.confirm = modeConfirm, c
	m.view = anchor{follow: true}
}

func (m *model) confirmKey(k tea.KeyPressMsg) tea.Cmd {
	c := m.confirm
	var f func() tea.Cmd
	switch k.String() {
	case "y":
		f = c.yes
	case "n", "esc":
		f = c.no
	case "pgup":
		m.scrollUp(max(1, m.transcriptRows()-2))
		return nil
	case "pgdown":
		m.scrollDown(max(1, m.transcriptRows()-2))
		return nil
	default:
		m.hint = "answer y or n"
		return nil
	}
	m.mode, m.confirm = modeInput, nil
	if f == nil {
		return nil
	}
	return f()
}

// command runs a slash command.
func (m *model) command(line string) tea.Cmd {
	fields := strings.Fields(line)
	name, arg := fields[0], ""
	if len(fields) > 1 {
		arg = fields[1]
	}
	switch name {
	case "/exit", "/quit":
		if m.cancel != nil {
			m.cancel()
		}
		m.quitting = true
		return nil
	case "/help":
		m.tr.notice(helpText(m.width))
		if cmds, notes := m.userCommands(); len(cmds)+len(notes) > 0 {
			m.tr.notice(userHelp(cmds, notes))
		}
		return nil
	}
	if m.busy || m.op != "" {
		m.hint = "wait for the turn to end (esc cancels it) before " + name
		return nil
	}
	switch name {
	case "/new":
		m.agent.Use(nil)
		m.sess = nil
		m.setTranscript(newTranscript(), "")
		m.tr.notice("new session: the next prompt starts it")
		return m.refreshTasks() // a shared list stays
	case "/sessions":
		if !m.needDB(name) {
			return nil
		}
		return m.listSessions()
	case "/checkpoints":
		if !m.needDB(name) || !m.needSession(name) {
			return nil
		}
		return m.listCheckpoints()
	case "/rewind":
		if !m.needDB(name) || !m.needSession(name) {
			return nil
		}
		seq, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || seq < 1 {
			m.tr.fail("/rewind takes a checkpoint SEQ as /checkpoints shows it (revision N); or use /checkpoints to pick one")
			return nil
		}
		return m.plan(seq, "")
	case "/mcp":
		return m.mcpStatus()
	case "/model":
		return m.switchModel(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), name)))
	case "/fork":
		if !m.needDB(name) || !m.needSession(name) {
			return nil
		}
		var seq int64
		if arg != "" {
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || n < 1 {
				m.tr.fail("/fork takes an optional SEQ as /checkpoints shows it (revision N)")
				return nil
			}
			seq = n
		}
		return m.fork(seq)
	case "/compact":
		if !m.needSession(name) {
			return nil
		}
		return m.compact(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), name)))
	}
	if strings.HasPrefix(name, "/mcp__") {
		return m.mcpPrompt(line)
	}
	cmds, _ := m.userCommands()
	if uc, ok := usercmd.Find(cmds, strings.TrimPrefix(name, "/")); ok {
		_, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		return m.startTurn(uc.Prompt(args))
	}
	m.tr.fail("unknown command " + name + "; /help lists them")
	return nil
}

func (m *model) needDB(cmd string) bool {
	if m.opts.SessionDB != "" {
		return true
	}
	m.tr.fail(cmd + " needs --session-db PATH: without it nothing is persisted, so there are no sessions to switch to or rewind (start lite-agent with --session-db ~/.lite-agent.db)")
	return false
}

func (m *model) needSession(cmd string) bool {
	if m.sessionID != "" {
		return true
	}
	m.tr.fail(cmd + ": there is no session yet; send a prompt or load one with /sessions first")
	return false
}

// setTranscript replaces the transcript (a session was loaded or left);
// the caller reads the new session's task list.
func (m *model) setTranscript(tr *transcript, id string) {
	m.tr = tr
	m.sessionID = id
	m.bgStarted = time.Time{}
	m.forgetTasks()
	m.countJobs()
	m.resetCache()
	m.view = anchor{follow: true}
	m.history = append([]string(nil), tr.prompts...)
	m.histIdx, m.draft = len(m.history), ""
}

// loadCmd makes id the current session (unless it already is: resume
// false) and shows its transcript, folded from its log; then note, then
// the review of its interrupted tool calls, if any.
func (m *model) loadCmd(id string, resume bool, note string) tea.Cmd {
	a, q := m.agent, m.updates
	return m.do("loading the session", func(ctx context.Context) func(*model) tea.Cmd {
		var sess *liteagent.Session
		if resume {
			var err error
			if sess, err = openSession(ctx, a, q, id); err != nil {
				return failed("load session "+id, err)
			}
		}
		tr := newTranscript()
		for e, err := range a.Events(ctx, id) {
			if err != nil {
				return failed("read session "+id, err)
			}
			tr.apply(e)
		}
		tr.settle()
		hz := a.Hazards()
		return func(m *model) tea.Cmd {
			if sess != nil {
				m.sess = sess
			}
			m.setTranscript(tr, id)
			if note != "" {
				m.tr.notice(note)
			}
			cmd := m.refreshTasks()
			if len(hz) > 0 {
				return tea.Batch(cmd, m.reviewHazards(hz))
			}
			return cmd
		}
	})
}

// reviewHazards shows the tool calls a crash cut off and asks for the
// acknowledgement the session needs to go on.
func (m *model) reviewHazards(hz []session.Hazard) tea.Cmd {
	var body []string
	var tokens []string
	for _, h := range hz {
		files := "none named"
		if len(h.Paths) > 0 {
			files = strings.Join(h.Paths, ", ")
		}
		body = append(body, fmt.Sprintf("%s · call %s · token %s", h.Tool, h.CallID, h.Token),
			fmt.Sprintf("  started %s · files: %s", h.Started.In(m.loc).Format("2006-01-02 15:04:05"), files))
		tokens = append(tokens, h.Token)
	}
	a := m.agent
	m.ask(&confirm{
		title:    "interrupted tool calls",
		body:     body,
		question: "This session stopped while these tools ran: their outcome is unknown and they will not be re-run. Have you checked what they did, and go on?",
		keys:     "y acknowledge and go on · n not now",
		yes: func() tea.Cmd {
			return m.do("acknowledging", func(ctx context.Context) func(*model) tea.Cmd {
				if err := a.Acknowledge(ctx, tokens...); err != nil {
					return failed("acknowledge", err)
				}
				return func(*model) tea.Cmd { return nil } // the event shows it
			})
		},
		no: func() tea.Cmd {
			m.tr.notice("not acknowledged: prompts are refused until you are (load the session again with /sessions to review)")
			return nil
		},
	})
	return nil
}

func (m *model) listSessions() tea.Cmd {
	a := m.agent
	return m.do("listing sessions", func(ctx context.Context) func(*model) tea.Cmd {
		list, err := a.ListSessions(ctx)
		if err != nil {
			return failed("list sessions", err)
		}
		return func(m *model) tea.Cmd { m.showSessions(list); return nil }
	})
}

// showSessions opens the picker of the workspace's sessions.
func (m *model) showSessions(list []session.Summary) {
	if len(list) == 0 {
		m.tr.notice("no sessions in this workspace yet")
		return
	}
	current := m.sessionID
	items := make([]pickItem, len(list))
	for i, s := range list {
		title := s.Title
		if title == "" {
			title = "(no prompt yet)"
		}
		detail := fmt.Sprintf("%s · %d message%s", s.Updated.In(m.loc).Format("2006-01-02 15:04"), s.Messages, plural(s.Messages))
		mark := " "
		if n := s.Hazards(); n > 0 {
			mark = "!"
			detail += fmt.Sprintf(" · %d interrupted tool call%s", n, plural(n))
		}
		if s.ID == current {
			detail += " · current"
		}
		detail += " · " + s.ID
		items[i] = pickItem{id: s.ID, title: title, detail: detail, mark: mark}
	}
	m.openPicker(&picker{
		title: "sessions in " + m.workspace(),
		hint:  "↑↓ move · type to search · enter load · esc close",
		items: items,
		pick: func(it pickItem) tea.Cmd {
			return m.loadCmd(it.id, true, "loaded session "+it.id)
		},
		search: m.searchSessions,
	})
}

// searchSessions searches the workspace's sessions' content for the
// picker's filter; the picker shows the sessions found, with a snippet.
func (m *model) searchSessions(filter string) tea.Cmd {
	a, ctx := m.agent, m.base
	return func() tea.Msg {
		hits, err := a.SearchSessions(ctx, filter, &liteagent.SearchOptions{Limit: 500})
		snippets := map[string]string{}
		if err == nil { // a filter without words matches titles only
			for _, h := range hits {
				if _, ok := snippets[h.Session]; !ok {
					snippets[h.Session] = h.Snippet
				}
			}
		}
		return resultMsg{apply: func(m *model) tea.Cmd {
			if m.picker != nil {
				m.picker.setFound(filter, snippets)
			}
			return nil
		}}
	}
}

func (m *model) listCheckpoints() tea.Cmd {
	a, id := m.agent, m.sessionID
	return m.do("listing checkpoints", func(ctx context.Context) func(*model) tea.Cmd {
		cps, err := a.ListCheckpoints(ctx, id)
		if err != nil {
			return failed("list checkpoints", err)
		}
		return func(m *model) tea.Cmd { m.showCheckpoints(cps); return nil }
	})
}

// showCheckpoints opens the picker of the session's prompts, the latest
// selected.
func (m *model) showCheckpoints(cps []session.Checkpoint) {
	if len(cps) == 0 {
		m.tr.notice("this session has no checkpoints yet: each prompt makes one")
		return
	}
	items := make([]pickItem, len(cps))
	for i, cp := range cps {
		items[i] = pickItem{seq: cp.Seq, title: oneLine(cp.Prompt), mark: " ",
			detail: fmt.Sprintf("revision %d · %s", cp.Seq, cp.Time.In(m.loc).Format("2006-01-02 15:04:05"))}
	}
	p := &picker{
		title: "checkpoints: rewind to before a prompt",
		hint:  "↑↓ move · type to filter · enter preview · esc close",
		items: items,
		pick:  func(it pickItem) tea.Cmd { return m.plan(it.seq, it.title) },
	}
	m.openPicker(p)
	p.cursor = len(p.shown) - 1
}

// plan shows what rewinding to seq would do (a dry run) and asks.
func (m *model) plan(seq int64, prompt string) tea.Cmd {
	a, id := m.agent, m.sessionID
	return m.do("checking files", func(ctx context.Context) func(*model) tea.Cmd {
		plan, err := a.Restore(ctx, id, seq, &liteagent.RestoreOptions{DryRun: true})
		if err != nil {
			return failed("rewind", err)
		}
		return func(m *model) tea.Cmd { m.showPlan(seq, prompt, plan); return nil }
	})
}

// showPlan shows a dry run's plan and asks to rewind.
func (m *model) showPlan(seq int64, prompt string, plan *liteagent.RestoreResult) {
	var body []string
	if len(plan.Files) == 0 {
		body = append(body, "no files to put back")
	}
	for _, f := range plan.Files {
		body = append(body, f.Action+" "+f.Path)
	}
	for _, d := range plan.Drift {
		body = append(body, "changed since the session left it: "+d)
	}
	for _, n := range plan.NotUndone {
		body = append(body, "cannot undo (ran a command): "+n)
	}
	what := fmt.Sprintf("revision %d", seq)
	if prompt != "" {
		what = fmt.Sprintf("before “%s” (revision %d)", short(prompt, 60), seq)
	}
	q := "Rewind the session and these files to " + what + "?"
	keys := "y rewind · n keep everything as it is"
	force := len(plan.Drift) > 0
	if force {
		q = "Some files changed since the session left them. Overwrite them and rewind to " + what + "?"
		keys = "y overwrite and rewind · n keep everything as it is"
	}
	m.ask(&confirm{
		title: "rewind", body: body, question: q, keys: keys,
		yes: func() tea.Cmd { return m.restore(seq, force) },
		no:  func() tea.Cmd { m.tr.notice("not rewound"); return nil },
	})
}

func (m *model) restore(seq int64, force bool) tea.Cmd {
	a, id, db := m.agent, m.sessionID, m.opts.SessionDB
	return m.do("rewinding", func(ctx context.Context) func(*model) tea.Cmd {
		res, err := a.Restore(ctx, id, seq, &liteagent.RestoreOptions{Force: force})
		if err != nil {
			return failed("rewind", err)
		}
		note := fmt.Sprintf("rewound to revision %d: put back %d file%s", seq, len(res.Files), plural(len(res.Files)))
		if res.UndoSession != "" {
			note += fmt.Sprintf(". To undo: lite-agent --session-db %s --restore %s --to %d (or /sessions, load %s, then /rewind %d)",
				db, res.UndoSession, res.UndoSeq, res.UndoSession, res.UndoSeq)
		} else {
			note = fmt.Sprintf("already at revision %d: nothing to rewind", seq)
		}
		return func(m *model) tea.Cmd { return m.loadCmd(id, false, note) }
	})
}

// compact summarises the session's transcript with the model.
func (m *model) compact(focus string) tea.Cmd {
	a := m.agent
	return m.do("compacting", func(ctx context.Context) func(*model) tea.Cmd {
		res, err := a.Compact(ctx, focus)
		if err != nil {
			return failed("compact", err)
		}
		return func(m *model) tea.Cmd {
			m.tr.notice(compactNote(res))
			return nil
		}
	})
}

// compactNote says what a compaction did.
func compactNote(r *liteagent.CompactResult) string {
	return fmt.Sprintf("compacted: about %d tokens up to revision %d are now sent as a %d-character summary; the log keeps everything (/checkpoints and /fork reach it)", r.Tokens, r.ThroughSeq, len(r.Summary))
}

func (m *model) fork(seq int64) tea.Cmd {
	a, id := m.agent, m.sessionID
	return m.do("forking", func(ctx context.Context) func(*model) tea.Cmd {
		fork, err := a.Fork(ctx, id, seq)
		if err != nil {
			return failed("fork", err)
		}
		return func(m *model) tea.Cmd {
			return m.loadCmd(fork, true, "now in fork "+fork+" of "+id)
		}
	})
}
