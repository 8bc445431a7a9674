package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/usercmd"
)

// lineMode is the plain interactive client: prompts and slash commands,
// one per line.
type lineMode struct {
	c     *config
	std   IO // its Stderr is out's, once the session is open
	e     *env
	lines <-chan string // closed at end of input
	out   *lineOutput
	// pending are lines typed while an approval was open that did not
	// answer it: the next prompts, read before lines.
	pending []string
	// failed is the last prompt's error, the exit status at end of input.
	failed error
	// readErr says why lines closed before the end of input, if it did.
	readErr <-chan error
	// editor edits the lines on a terminal; nil when stdin is not one
	// (lines are read as they come).
	editor *lineEditor
}

// maxLine is the longest line the line mode reads.
const maxLine = 4 << 20

// readLines delivers stdin's lines on a channel, closed at end of input;
// why reading stopped, when not at the end (a line over maxLine, a read
// error), is sent on the second channel before the first is closed.
func readLines(r io.Reader) (<-chan string, <-chan error) {
	ch, errc := make(chan string), make(chan error, 1)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), maxLine)
		for sc.Scan() {
			ch <- sc.Text()
		}
		if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
			errc <- fmt.Errorf("a line of input is longer than %d MiB, so it and everything after it was not read; put long text in a file and attach it with @FILE", maxLine>>20)
		} else if err != nil {
			errc <- fmt.Errorf("reading input: %w", err)
		}
	}()
	return ch, errc
}

const lineHelp = `Type a prompt and press enter. Commands:
  /sessions [WORDS]    list this workspace's sessions (with WORDS: those whose titles or content hold them) and load one (needs --session-db)
  /checkpoints         list the current session's checkpoints (one per prompt)
  /rewind SEQ          rewind the session and its files to checkpoint SEQ (asks first)
  /fork [SEQ]          continue in a copy of the current session (up to SEQ)
  /compact [FOCUS]     summarise the conversation so far; the model is then sent the
                       summary and what follows (the log keeps everything)
  /new                 start a new session
  /model [NAME]        switch to model NAME for the rest of the session (recorded, so a
                       resume keeps it); alone, show the current model and the known ones
  /mcp                 the MCP servers: their state, tools and prompts
  /mcp__SERVER__PROMPT [ARGS]  send an MCP server's prompt (ARGS in order, or NAME=VALUE)
  /help                show this help, and your own commands: .lite-agent/commands/NAME.md
                       in the project or your config directory is /NAME [ARGS]
  /exit                quit (so does end of input)
Ctrl-C cancels a running turn; a second Ctrl-C quits.
When a background job ends, what the agent does with its result is printed
as it comes; tools it wants to run then, that need approval, are denied.`

func interactive(ctx context.Context, c *config, std IO) error {
	if ok, err := fullScreen(ctx, c, std); ok {
		return err
	}
	m := &lineMode{c: c, std: std}
	edit := editsLines(std)
	if !edit {
		m.lines, m.readErr = readLines(std.Stdin)
	}
	c.approve, c.input = m.approve, m.input
	e, err := openSession(ctx, c, std)
	if err != nil {
		return err
	}
	m.e = e
	defer func() { m.e.close() }()
	if edit {
		ed, err := newLineEditor(std, e.agent.Workdir())
		if err != nil {
			return fmt.Errorf("line editing on this terminal: %w (use a pipe for input instead)", err)
		}
		defer ed.close()
		m.editor, m.lines = ed, ed.lines
		std.Stdout, std.Stderr = ed.writer(std.Stdout), ed.writer(std.Stderr)
		m.std = std
	}
	m.out = newLineOutput(std, c.output)
	m.out.edited = edit
	e.onBackground(m.out.background)
	m.std.Stderr = m.out.stderr()
	fmt.Fprintf(m.std.Stderr, "lite-agent in %s; /help for commands, /exit to quit\n", e.agent.Workdir())
	reportMCP(ctx, e.agent, m.std.Stderr)
	if _, notes := c.userCommands(e.agent.Workdir()); len(notes) > 0 {
		printNotes(m.std.Stderr, notes)
	}
	if id := e.agent.SessionID(); id != "" {
		fmt.Fprintf(m.std.Stderr, "resumed session %s\n", id)
	}
	for {
		m.out.prompt()
		line, ok := m.read(ctx)
		m.out.answered(ok)
		if !ok {
			select {
			case err := <-m.readErr: // input stopped before its end
				return err
			default:
			}
			// At the end of piped input, a failed turn is the run's status.
			if m.failed != nil {
				return fmt.Errorf("a prompt failed: %w", m.failed)
			}
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "/") {
			if err := m.command(ctx, line); errors.Is(err, errQuit) {
				return nil
			} else if err != nil {
				fmt.Fprintln(m.std.Stderr, "error:", describe(err))
			}
			continue
		}
		if err := m.turn(ctx, line); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, errNoAnswerer) {
				return err
			}
			fmt.Fprintln(m.std.Stderr, "error:", describe(err))
			m.failed = err
		}
	}
}

// turn sends one prompt; the first interrupt cancels it. m.out prints what
// the turn says as it happens, and ends the turn's output as one-shot runs
// do (a newline, or the result object with --output json and stream-json)
// when Send returns, before a completion turn that follows.
func (m *lineMode) turn(ctx context.Context, prompt string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.std.Interrupt:
			fmt.Fprintln(m.std.Stderr, "\ncancelling the turn… (Ctrl-C again to quit)")
			cancel()
		case <-ctx.Done():
		}
	}()
	m.out.begin()
	res, err := m.e.send(ctx, expandPrompt(ctx, m.e, prompt, m.std.Stderr), m.out.update)
	err = checkAnswer(res, err)
	m.out.end(res, err)
	return err
}

// read returns the next line; false at end of input, on Ctrl-C while idle,
// or when ctx ends.
func (m *lineMode) read(ctx context.Context) (string, bool) {
	if len(m.pending) > 0 {
		l := m.pending[0]
		m.pending = m.pending[1:]
		return l, true
	}
	if m.editor != nil {
		m.editor.ask("> ", true)
	}
	select {
	case l, ok := <-m.lines:
		return l, ok
	case <-m.std.Interrupt:
		return "", false
	case <-ctx.Done():
		return "", false
	}
}

// ask prints a question and reads the answer; ctx ends it (a cancelled
// turn dismisses the question).
func (m *lineMode) ask(ctx context.Context, q string) (string, error) {
	m.question(q)
	select {
	case l, ok := <-m.lines:
		if !ok {
			return "", io.EOF
		}
		return strings.TrimSpace(strings.ToLower(l)), nil
	case <-ctx.Done():
		fmt.Fprintln(m.std.Stderr)
		return "", ctx.Err()
	}
}

// question shows q and waits for the line that answers it; on a terminal
// the editor shows q's last line as its prompt.
func (m *lineMode) question(q string) {
	if m.editor == nil {
		fmt.Fprint(m.std.Stderr, q)
		return
	}
	head, last := splitQuestion(q)
	if head != "" {
		fmt.Fprint(m.std.Stderr, head)
	}
	m.editor.ask(last, false)
}

// input answers the model's ask_user questions with a line from the user.
// A question from a background turn would race with the prompt reader, so
// it is declined (the model is told).
func (m *lineMode) input(ctx context.Context, req liteagent.InputRequest) (string, error) {
	if req.Background {
		return "", fmt.Errorf("the user is not at the prompt for background questions; ask in your final answer instead")
	}
	q := "? " + req.Question
	if len(req.Choices) > 0 {
		q += " (" + strings.Join(req.Choices, " / ") + ")"
	}
	m.question(q + "\n")
	select {
	case l, ok := <-m.lines:
		if !ok {
			return "", io.EOF
		}
		return strings.TrimSpace(l), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (m *lineMode) approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	if req.Background {
		// A background completion turn runs while the prompt loop owns
		// stdin: asking here would race with it, so such calls are denied
		// (the model is told) and the user is told how to allow them.
		fmt.Fprintf(m.std.Stderr, "denied %s from a background completion turn: the line mode cannot ask while it waits for a prompt (use the full-screen client, or ask for it in your next prompt)\n", req.Tool)
		return liteagent.Deny, nil
	}
	// What the model said before the call is already printed: updates are
	// shown as the turn makes them.
	if req.Diff != "" {
		printDiff(m.std.Stderr, req.Diff)
	}
	ch, err := m.approvalAnswer(ctx, m.c.approvalQuestion(req))
	if errors.Is(err, io.EOF) {
		fmt.Fprintln(m.std.Stderr)
		return liteagent.Deny, errNoAnswerer
	}
	if err != nil {
		return liteagent.Deny, err
	}
	return m.c.decide(ch, req, m.std.Stderr)
}

// lineOutput prints what the agent says in the line mode: the turns of
// the user's prompts (their updates, from Send) and the background
// completion turns the agent runs between them (when a background job
// ends), whose updates come from the agent's goroutine. Text goes to
// stdout, tool lines and notices to stderr, both through runTurn's printer.
//
// Everything is written under mu: updates, the prompt, and the line mode's
// own messages (stderr), so lines never interleave. A completion turn that
// starts while "> " waits for input begins on a new line and, once it
// ends, prints "> " again. The prompt reader is never touched: approvals a
// completion turn asks for are denied (see lineMode.approve).
type lineOutput struct {
	mu       sync.Mutex
	p        *printer
	errw     io.Writer
	busy     bool     // a prompt's turn runs
	started  bool     // it holds the session: its updates came
	held     []Update // background updates that came after them, shown after its end
	bg       bool     // a background completion turn is being printed
	atPrompt bool     // "> " is the last thing on the screen
	edited   bool     // the line editor draws "> " and the line (lineEditor)
}

func newLineOutput(std IO, format string) *lineOutput {
	o := &lineOutput{errw: std.Stderr}
	o.p = &printer{out: promptBreak{o, std.Stdout}, errw: promptBreak{o, std.Stderr}, format: format}
	return o
}

// update prints one update of a prompt's turn.
func (o *lineOutput) update(u Update) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = true
	o.p.show(u)
}

// background prints one update of the agent's background work. Work that
// starts once the prompt's turn released the session (a job ended during
// it) is shown after that turn's end.
func (o *lineOutput) background(u Update) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.busy && o.started {
		o.held = append(o.held, u)
		return
	}
	o.showBackground(u)
}

// showBackground prints a background update; o.mu is held.
func (o *lineOutput) showBackground(u Update) {
	text := o.p.format == "text"
	if e := u.Event; e != nil {
		switch e.Type {
		case session.TypeUserPrompt:
			var up session.UserPrompt
			if e.Decode(&up) == nil && up.Background {
				o.bg = true
				if text {
					o.p.endLine()
					fmt.Fprintln(o.p.errw, "▸ the agent goes on with the job's result (a background turn)")
				}
			}
		case session.TypeTurnCompleted, session.TypeTurnInterrupted:
			if o.bg {
				o.p.show(u)
				o.bg = false
				var ti session.TurnInterrupted
				if e.Type == session.TypeTurnInterrupted && text && e.Decode(&ti) == nil {
					o.p.endLine()
					fmt.Fprintf(o.p.errw, "▸ the background turn was interrupted: %s\n", oneLine(ti.Reason))
				}
				o.p.endLine()
				if !o.busy {
					o.showPrompt()
				}
				return
			}
		}
	}
	o.p.show(u)
}

// prompt prints the prompt for the next line.
func (o *lineOutput) prompt() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p.endLine()
	o.showPrompt()
}

func (o *lineOutput) showPrompt() {
	if !o.atPrompt && !o.edited {
		fmt.Fprint(o.errw, "> ")
	}
	o.atPrompt = true
}

// leavePrompt starts a new line when "> " is the last thing printed
// (nothing was typed after it, as far as the output knows); o.mu is held.
func (o *lineOutput) leavePrompt() {
	if o.atPrompt && !o.edited { // the editor moves its line itself
		fmt.Fprintln(o.errw)
	}
	o.atPrompt = false
}

// answered notes that the prompt got its line (got: the terminal echoed
// it and its newline) or that input ended (a newline ends the prompt's
// line).
func (o *lineOutput) answered(got bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if got {
		o.atPrompt = false
		return
	}
	if o.edited && o.atPrompt {
		fmt.Fprintln(o.errw) // end of input: below the editor's line
	}
	o.leavePrompt()
}

// begin marks a prompt's turn as running.
func (o *lineOutput) begin() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.busy = true
	if o.bg && o.p.format == "text" {
		o.p.endLine()
		fmt.Fprintln(o.errw, "▸ your prompt is sent when the background turn ends")
	}
}

// end ends the output of a prompt's turn: a newline, or the result
// object. Every update of the turn was printed before Send returned.
func (o *lineOutput) end(res *liteagent.Result, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.p.finish(res, err)
	o.busy, o.started = false, false
	held := o.held
	o.held = nil
	for _, u := range held {
		o.showBackground(u)
	}
}

// stderr is the line mode's own stderr: each write waits for the output in
// progress, and starts on a line of its own.
func (o *lineOutput) stderr() io.Writer { return lockedStderr{o} }

type lockedStderr struct{ o *lineOutput }

func (w lockedStderr) Write(b []byte) (int, error) {
	w.o.mu.Lock()
	defer w.o.mu.Unlock()
	w.o.p.endLine()
	w.o.leavePrompt()
	return w.o.errw.Write(b)
}

// promptBreak is the printer's writer: what it prints starts below a
// waiting prompt. Its writes happen under o.mu.
type promptBreak struct {
	o *lineOutput
	w io.Writer
}

func (w promptBreak) Write(b []byte) (int, error) {
	w.o.leavePrompt()
	return w.w.Write(b)
}

func (m *lineMode) command(ctx context.Context, line string) error {
	fields := strings.Fields(line)
	arg := ""
	if len(fields) > 1 {
		arg = fields[1]
	}
	switch fields[0] {
	case "/exit", "/quit":
		return errQuit
	case "/help":
		fmt.Fprintln(m.std.Stderr, lineHelp)
		cmds, notes := m.c.userCommands(m.e.agent.Workdir())
		printUserCommands(m.std.Stderr, cmds, notes)
	case "/new":
		if err := m.e.use(ctx, ""); err != nil {
			return err
		}
		fmt.Fprintln(m.std.Stderr, "the next prompt starts a new session")
	case "/sessions":
		return m.pickSession(ctx, arg)
	case "/checkpoints":
		return m.showCheckpoints(ctx)
	case "/rewind":
		return m.rewind(ctx, arg)
	case "/fork":
		return m.fork(ctx, arg)
	case "/model":
		return switchModel(ctx, m.e, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "/model")), m.std.Stderr)
	case "/mcp":
		sets, err := m.e.agent.MCPSets(ctx)
		if err != nil {
			return err
		}
		printMCP(m.std.Stderr, sets)
	case "/compact":
		return m.compact(ctx, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "/compact")))
	default:
		if strings.HasPrefix(fields[0], "/mcp__") {
			prompt, err := mcpPrompt(ctx, m.e.agent, line)
			if err != nil {
				return err
			}
			return m.turn(ctx, prompt)
		}
		name, args := splitCommand(line)
		cmds, _ := m.c.userCommands(m.e.agent.Workdir())
		if uc, ok := usercmd.Find(cmds, name); ok {
			return m.turn(ctx, uc.Prompt(args))
		}
		return fmt.Errorf("unknown command %s; /help lists them", fields[0])
	}
	return nil
}

func (m *lineMode) needDB(cmd string) error {
	if m.c.sessionDB == "" {
		return fmt.Errorf("%s needs --session-db PATH: without it nothing is persisted, so there are no sessions to switch to", cmd)
	}
	return nil
}

// pickSession lists the workspace's sessions, or with words only those
// whose titles or content hold them, and loads the one picked.
func (m *lineMode) pickSession(ctx context.Context, words string) error {
	if err := m.needDB("/sessions"); err != nil {
		return err
	}
	list, err := m.e.agent.ListSessions(ctx)
	if err != nil {
		return err
	}
	var snippets map[string]string
	if words != "" {
		if list, snippets, err = m.matching(ctx, list, words); err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintf(m.std.Stderr, "no session of this workspace mentions %q\n", words)
			return nil
		}
	}
	if len(list) == 0 {
		fmt.Fprintln(m.std.Stderr, "no sessions in this workspace yet")
		return nil
	}
	for i, s := range list {
		mark := " "
		if s.Hazards() > 0 {
			mark = "!"
		}
		fmt.Fprintf(m.std.Stderr, "%s%3d  %s  %s  %3d msgs  %s\n", mark, i+1, s.ID, s.Updated.Local().Format("2006-01-02 15:04"), s.Messages, s.Title)
		if sn := snippets[s.ID]; sn != "" {
			fmt.Fprintf(m.std.Stderr, "      “%s”\n", sn)
		}
	}
	ans, err := m.ask(ctx, "load which (number, enter to cancel): ")
	if err != nil || ans == "" {
		return err
	}
	n, err := strconv.Atoi(ans)
	if err != nil || n < 1 || n > len(list) {
		return fmt.Errorf("no session numbered %q", ans)
	}
	return m.load(ctx, list[n-1].ID)
}

// matching keeps the sessions of list whose content holds words (newest
// hit first), with the snippet of each one's newest hit.
func (m *lineMode) matching(ctx context.Context, list []session.Summary, words string) ([]session.Summary, map[string]string, error) {
	hits, err := m.e.agent.SearchSessions(ctx, words, &liteagent.SearchOptions{Limit: 500})
	if err != nil {
		return nil, nil, err
	}
	byID := make(map[string]session.Summary, len(list))
	for _, s := range list {
		byID[s.ID] = s
	}
	snippets := map[string]string{}
	var out []session.Summary
	for _, h := range hits {
		s, ok := byID[h.Session]
		if _, seen := snippets[h.Session]; seen || !ok {
			continue
		}
		snippets[h.Session] = h.Snippet
		out = append(out, s)
	}
	return out, snippets, nil
}

// load makes id the current session; hazards are shown for review and
// acknowledged only when the user says so.
func (m *lineMode) load(ctx context.Context, id string) error {
	a := m.e.agent
	if err := m.e.use(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(m.std.Stderr, "loaded session %s\n", id)
	hz := a.Hazards()
	if len(hz) == 0 {
		return nil
	}
	fmt.Fprintf(m.std.Stderr, "this session was interrupted while tools ran; their outcome is unknown and they will not be re-run:\n")
	var tokens []string
	for _, h := range hz {
		fmt.Fprintf(m.std.Stderr, "  %s %s started %s, files: %s (token %s)\n", h.Tool, h.CallID, h.Started.Local().Format("15:04:05"), strings.Join(h.Paths, ", "), h.Token)
		tokens = append(tokens, h.Token)
	}
	ans, err := m.ask(ctx, "have you reviewed what they did, and go on? [y/n]: ")
	if err != nil {
		return err
	}
	if ans != "y" && ans != "yes" {
		fmt.Fprintln(m.std.Stderr, "not acknowledged: prompts will be refused until you are (load it again to review)")
		return nil
	}
	return a.Acknowledge(ctx, tokens...)
}

func (m *lineMode) showCheckpoints(ctx context.Context) error {
	if err := m.needDB("/checkpoints"); err != nil {
		return err
	}
	id := m.e.agent.SessionID()
	if id == "" {
		return liteagent.ErrNoSession
	}
	cps, err := m.e.agent.ListCheckpoints(ctx, id)
	if err != nil {
		return err
	}
	for _, cp := range cps {
		fmt.Fprintf(m.std.Stderr, "%5d  %s  %s\n", cp.Seq, cp.Time.Local().Format("15:04:05"), short(cp.Prompt, 70))
	}
	fmt.Fprintln(m.std.Stderr, "rewind with /rewind SEQ")
	return nil
}

func (m *lineMode) rewind(ctx context.Context, arg string) error {
	if err := m.needDB("/rewind"); err != nil {
		return err
	}
	seq, err := strconv.ParseInt(arg, 10, 64)
	if err != nil {
		return fmt.Errorf("/rewind takes a checkpoint SEQ as /checkpoints prints it")
	}
	a := m.e.agent
	id := a.SessionID()
	if id == "" {
		return liteagent.ErrNoSession
	}
	plan, err := a.Restore(ctx, id, seq, &liteagent.RestoreOptions{DryRun: true})
	if err != nil {
		return err
	}
	describePlan(m.std.Stderr, plan)
	q := "rewind? [y/n]: "
	force := false
	if len(plan.Drift) > 0 {
		q = "these files changed since the session left them; overwrite them anyway? [y/n]: "
		force = true
	}
	ans, err := m.ask(ctx, q)
	if err != nil || (ans != "y" && ans != "yes") {
		return err
	}
	res, err := a.Restore(ctx, id, seq, &liteagent.RestoreOptions{Force: force})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.std.Stderr, "rewound to %d; to undo: --restore %s --to %d\n", seq, res.UndoSession, res.UndoSeq)
	return nil
}

func describePlan(w io.Writer, plan *liteagent.RestoreResult) {
	if len(plan.Files) == 0 {
		fmt.Fprintln(w, "no files to put back")
	}
	for _, f := range plan.Files {
		fmt.Fprintf(w, "  %-7s %s\n", f.Action, f.Path)
	}
	for _, d := range plan.Drift {
		fmt.Fprintf(w, "  changed since the session left it: %s\n", d)
	}
	for _, n := range plan.NotUndone {
		fmt.Fprintf(w, "  cannot undo (a command ran, or a call was cut off): %s\n", n)
	}
}

// compact summarises the current session; Ctrl-C cancels it and leaves
// the log as it was.
func (m *lineMode) compact(ctx context.Context, focus string) error {
	if m.e.agent.SessionID() == "" {
		return fmt.Errorf("/compact: %w", liteagent.ErrNoSession)
	}
	ctx, stop := cancelOnInterrupt(ctx, m.std.Interrupt)
	defer stop()
	fmt.Fprintln(m.std.Stderr, "compacting… (Ctrl-C cancels; nothing changes until the summary is in)")
	res, err := m.e.agent.Compact(ctx, focus)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.std.Stderr, compactNote(res))
	return nil
}

// compactNote says what a compaction did.
func compactNote(r *liteagent.CompactResult) string {
	return fmt.Sprintf("compacted: about %d tokens up to revision %d are now sent as a %d-character summary; the log keeps everything (--checkpoints, --fork and --restore reach it)", r.Tokens, r.ThroughSeq, len(r.Summary))
}

func (m *lineMode) fork(ctx context.Context, arg string) error {
	if err := m.needDB("/fork"); err != nil {
		return err
	}
	a := m.e.agent
	id := a.SessionID()
	if id == "" {
		return liteagent.ErrNoSession
	}
	var seq int64
	if arg != "" {
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return fmt.Errorf("/fork takes an optional SEQ as /checkpoints prints it")
		}
		seq = n
	}
	fork, err := a.Fork(ctx, id, seq)
	if err != nil {
		return err
	}
	if err := m.e.use(ctx, fork); err != nil {
		return err
	}
	fmt.Fprintf(m.std.Stderr, "now in fork %s of %s\n", fork, id)
	return nil
}
