package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// openSession builds the agent for a run that talks to the model and, with
// --resume, loads the session (only if it belongs to this run's workdir, or
// --retarget moves it here) and records the acknowledgements given.
func openSession(ctx context.Context, c *config, std IO) (*env, error) {
	e, err := newAgent(ctx, c, "", false, true)
	if err != nil {
		return nil, err
	}
	if c.resume == "" {
		return e, nil
	}
	id, err := e.agent.FindSession(ctx, c.resume)
	if err != nil {
		e.close()
		return nil, err
	}
	if err := retargetIfAsked(ctx, c, e, id, std.Stderr); err != nil {
		e.close()
		return nil, err
	}
	if err := e.use(ctx, id); err != nil {
		e.close()
		return nil, workdirHint(err)
	}
	if err := refuseRunning(ctx, e, id); err != nil {
		e.close()
		return nil, err
	}
	if len(c.acknowledge) > 0 {
		if err := e.sess.Acknowledge(ctx, c.acknowledge...); err != nil {
			e.close()
			return nil, err
		}
		fmt.Fprintf(std.Stderr, "acknowledged %d interrupted tool call(s); the model will be told their outcome is unknown and that they were not re-run\n", len(c.acknowledge))
	}
	if hz := e.sess.Hazards(); len(hz) > 0 {
		e.close()
		return nil, &liteagent.HazardError{Session: id, Hazards: hz}
	}
	if err := resumeModel(ctx, c, e.sess); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// oneShotApproval denies the calls no rule or --allow let run (nobody is
// there to ask), telling the user how to allow them and the model why.
func oneShotApproval(stderr io.Writer) liteagent.ApprovalFunc {
	return func(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
		flag := "edit"
		switch req.Kind {
		case tool.KindExec:
			flag = "bash"
		case tool.KindNetwork:
			flag = "network (every fetch; or a rule such as web_fetch(domain:HOST))"
		case tool.KindMCP:
			flag = "mcp__" + req.Server + " (that server), --allow " + req.Tool + " (that tool) or --allow mcp (every MCP tool)"
		}
		fmt.Fprintf(stderr, "denied %s (one-shot runs need --allow %s, or an allow rule in a config file, to let it run)\n", req.Tool, flag)
		return liteagent.Deny, &liteagent.DeniedError{Reason: "this one-shot run has nobody to approve it; the user can allow such calls with --allow " + flag + " or a permission rule"}
	}
}

func oneShot(ctx context.Context, c *config, std IO) error {
	c.approve = oneShotApproval(std.Stderr)
	e, err := openSession(ctx, c, std)
	if err != nil {
		return err
	}
	defer e.close()
	reportMCP(ctx, e.agent, std.Stderr)
	return runOneShot(ctx, e, c, std)
}

// runTurn sends one prompt and prints what happens in the --output format.
// The first interrupt cancels the turn.
func runTurn(ctx context.Context, e *env, c *config, std IO, prompt string) (*liteagent.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-std.Interrupt:
			fmt.Fprintln(std.Stderr, "\ncancelling the turn… (Ctrl-C again to quit)")
			cancel()
		case <-ctx.Done():
		}
	}()
	p := &printer{out: std.Stdout, errw: std.Stderr, format: c.output}
	res, err := e.send(ctx, prompt, p.show)
	p.finish(res, err)
	return res, err
}

// printer shows a turn's updates to people (text) or scripts (stream-json);
// with json it prints only the final result. Its methods are called from
// one goroutine at a time.
type printer struct {
	out, errw io.Writer
	format    string
	midLine   bool // text was printed without a trailing newline
}

// Update is the SDK's update type, named here for brevity.
type Update = liteagent.Update

func (p *printer) show(u Update) {
	if u.Approval != nil {
		return // the approval handler asks the user
	}
	switch p.format {
	case "json":
		return
	case "stream-json":
		streamLine(p.out, u)
		return
	}
	if u.Delta != nil {
		if u.Delta.Kind == "text" {
			fmt.Fprint(p.out, u.Delta.Text)
			p.midLine = !strings.HasSuffix(u.Delta.Text, "\n")
		}
		return
	}
	e := u.Event
	switch e.Type {
	case session.TypeAssistantMessage:
		p.endLine()
	case session.TypeToolStarted:
		var s session.ToolStarted
		if e.Decode(&s) == nil {
			fmt.Fprintf(p.errw, "▸ %s %s\n", s.Tool, startedArgs(s))
		}
	case session.TypeJobFinished:
		var f session.JobFinished
		if e.Decode(&f) == nil {
			p.endLine()
			fmt.Fprintf(p.errw, "▸ background job %s ended: %s\n", f.Job, jobEnd(f))
		}
	case session.TypePermissionDecided:
		var d session.PermissionDecided
		if e.Decode(&d) == nil && d.Effect == "deny" {
			why := d.Reason
			if why == "" {
				why = "rule " + d.Rule
			}
			fmt.Fprintf(p.errw, "⊘ %s denied: %s (%s)\n", d.Tool, why, d.Source)
		}
	case session.TypeToolFinished:
		var f session.ToolFinished
		if e.Decode(&f) == nil && !f.Denied {
			printResult(p.errw, f)
		}
	}
}

func (p *printer) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

// finish prints the end of a turn: the result object for json and
// stream-json, a newline for text.
func (p *printer) finish(res *liteagent.Result, err error) {
	if p.format == "text" {
		p.endLine()
		return
	}
	writeLine(p.out, newResultLine(res, err))
}

// short returns s on one line, cut to n runes.
func short(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

var errQuit = errors.New("quit")
