package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
)

// lineMode is the plain interactive client: prompts and slash commands,
// one per line.
type lineMode struct {
	c     *config
	std   IO
	e     *env
	lines <-chan string // closed at end of input
}

// readLines delivers stdin's lines on a channel, closed at end of input.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

const lineHelp = `Type a prompt and press enter. Commands:
  /sessions            list this workspace's sessions and load one (needs --session-db)
  /checkpoints         list the current session's checkpoints (one per prompt)
  /rewind SEQ          rewind the session and its files to checkpoint SEQ (asks first)
  /fork [SEQ]          continue in a copy of the current session (up to SEQ)
  /new                 start a new session
  /help                show this help
  /exit                quit (so does end of input)
Ctrl-C cancels a running turn; a second Ctrl-C quits.`

func interactive(ctx context.Context, c *config, std IO) error {
	if ok, err := fullScreen(ctx, c, std); ok {
		return err
	}
	m := &lineMode{c: c, std: std, lines: readLines(std.Stdin)}
	c.approve = m.approve
	e, err := openSession(ctx, c, std)
	if err != nil {
		return err
	}
	m.e = e
	defer func() { m.e.close() }()
	fmt.Fprintf(std.Stderr, "lite-agent in %s; /help for commands, /exit to quit\n", e.agent.Workdir())
	if id := e.agent.SessionID(); id != "" {
		fmt.Fprintf(std.Stderr, "resumed session %s\n", id)
	}
	for {
		fmt.Fprint(std.Stderr, "> ")
		line, ok := m.read(ctx)
		if !ok {
			fmt.Fprintln(std.Stderr)
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
				fmt.Fprintln(std.Stderr, "error:", oneLine(err.Error()))
			}
			continue
		}
		if _, err := runTurn(ctx, m.e, c, std, line); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fmt.Fprintln(std.Stderr, "error:", oneLine(err.Error()))
		}
	}
}

// read returns the next line; false at end of input, on Ctrl-C while idle,
// or when ctx ends.
func (m *lineMode) read(ctx context.Context) (string, bool) {
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
	fmt.Fprint(m.std.Stderr, q)
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

func (m *lineMode) approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	if req.Background {
		// A background completion turn runs while the prompt loop owns
		// stdin: asking here would race with it, so such calls are denied
		// (the model is told) and the user is told how to allow them.
		fmt.Fprintf(m.std.Stderr, "\ndenied %s from a background completion turn: the line mode cannot ask while it waits for a prompt (use the full-screen client, or ask for it in your next prompt)\n", req.Tool)
		return liteagent.Deny, nil
	}
	what := req.Tool + " " + short(string(req.Input), 120)
	for {
		a, err := m.ask(ctx, fmt.Sprintf("allow %s? [y] once, [a] always this session, [n] no: ", what))
		if err != nil {
			return liteagent.Deny, err
		}
		switch a {
		case "y", "yes":
			return liteagent.AllowOnce, nil
		case "a", "always":
			return liteagent.AllowSession, nil
		case "n", "no":
			return liteagent.Deny, nil
		}
	}
}

func (m *lineMode) command(ctx context.Context, line string) error {
	fields := strings.Fields(line)
	arg := ""
	if len(fields) > 1 {
		arg = fields[1]
	}
	a := m.e.agent
	switch fields[0] {
	case "/exit", "/quit":
		return errQuit
	case "/help":
		fmt.Fprintln(m.std.Stderr, lineHelp)
	case "/new":
		a.NewSession()
		fmt.Fprintln(m.std.Stderr, "the next prompt starts a new session")
	case "/sessions":
		return m.pickSession(ctx)
	case "/checkpoints":
		return m.showCheckpoints(ctx)
	case "/rewind":
		return m.rewind(ctx, arg)
	case "/fork":
		return m.fork(ctx, arg)
	default:
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

func (m *lineMode) pickSession(ctx context.Context) error {
	if err := m.needDB("/sessions"); err != nil {
		return err
	}
	list, err := m.e.agent.ListSessions(ctx)
	if err != nil {
		return err
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

// load makes id the current session; hazards are shown for review and
// acknowledged only when the user says so.
func (m *lineMode) load(ctx context.Context, id string) error {
	a := m.e.agent
	if err := a.Resume(ctx, id); err != nil {
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
		fmt.Fprintf(w, "  cannot undo (ran a command): %s\n", n)
	}
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
	if err := a.Resume(ctx, fork); err != nil {
		return err
	}
	fmt.Fprintf(m.std.Stderr, "now in fork %s of %s\n", fork, id)
	return nil
}
