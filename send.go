package liteagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// Result is the outcome of one Send.
type Result struct {
	Session    string
	Text       string // the text of the model's last message
	StopReason string
	Usage      session.Usage // tokens used by this turn
	ModelCalls int
	Head       int64 // the session's head after the turn
}

// finishTimeout bounds the appends that record how a cancelled turn ended.
const finishTimeout = 10 * time.Second

// Send sends prompt in the agent's current session, creating one on first
// use (see Session.Send): successive calls share one conversation.
func (a *Agent) Send(ctx context.Context, prompt string) (*Result, error) {
	s, err := a.current(true)
	if err != nil {
		return nil, err
	}
	return s.Send(ctx, prompt, nil)
}

// turnLocked runs one turn; the caller holds the turn. A background turn
// (a completion turn the agent starts itself) records its prompt as
// Background and leaves the user's goal as it was.
func (s *Session) turnLocked(ctx context.Context, prompt string, background bool) (*Result, error) {
	release, err := s.a.leaseTurn(ctx, s.id)
	if err != nil {
		return nil, err
	}
	defer release()
	s.mu.Lock()
	s.inBackground = background
	st := s.state
	s.mu.Unlock()
	if hz := s.Hazards(); len(hz) > 0 {
		return nil, &HazardError{Session: s.id, Hazards: hz}
	}
	if err := s.syncMCPTools(ctx); err != nil {
		return nil, err
	}
	res := &Result{Session: s.id}
	// A turn a crash cut off: calls the model asked for that never started
	// are asked for again (approval included); a turn that died while the
	// model streamed is closed as interrupted.
	if pending := st.Pending(); len(pending) > 0 {
		if err := s.runTools(ctx, pendingCalls(st, pending)); err != nil {
			return nil, s.interrupt(ctx, res, err)
		}
	} else if st.Summary.Status == session.StatusRunning {
		if err := s.append(ctx, mustEvent(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: "the process stopped before the turn ended"})); err != nil {
			return nil, err
		}
	}
	start, err := s.a.contextEvents(ctx, st, s.root.Dir())
	if err != nil {
		return nil, err
	}
	title := s.startTitle(ctx, st, prompt, background)
	defer title.stop()
	// The first model call goes out while the prompt is made durable;
	// nothing from it is seen before (early.go).
	early := s.callEarly(ctx, prompt, start)
	if err := s.append(ctx, append(start, mustEvent(session.TypeUserPrompt, session.UserPrompt{Text: prompt, Background: background}))...); err != nil {
		early.discard()
		return nil, err
	}
	if !background {
		s.mu.Lock()
		s.goal = prompt
		s.mu.Unlock()
	}
	for {
		if res.ModelCalls >= s.a.opts.MaxModelCalls {
			err := fmt.Errorf("%w (%d); send another prompt to let it go on, or raise MaxModelCalls", ErrModelCallLimit, s.a.opts.MaxModelCalls)
			return res, s.interrupt(ctx, res, err)
		}
		res.ModelCalls++
		resp, err, taken := early.take(ctx, s)
		early = nil
		if !taken {
			resp, err = s.callModelCompacting(ctx)
		}
		if err != nil {
			return res, s.interrupt(ctx, res, err)
		}
		res.Usage = res.Usage.Add(resp.Usage)
		res.StopReason = resp.StopReason
		res.Text = textOf(resp.Blocks)
		msg := session.AssistantMessage{Blocks: resp.Blocks, StopReason: resp.StopReason, Usage: resp.Usage, Model: resp.Model}
		s.hold(mustEvent(session.TypeAssistantMessage, msg))
		calls := toolCalls(resp.Blocks)
		if len(calls) == 0 {
			break
		}
		if err := s.runTools(ctx, calls); err != nil {
			return res, s.interrupt(ctx, res, err)
		}
		// A tool may have changed a server's tools (tools/list_changed):
		// the next call offers them as they are now.
		if err := s.syncMCPTools(ctx); err != nil {
			return res, s.interrupt(ctx, res, err)
		}
	}
	if err := s.recordTitle(ctx, title); err != nil {
		return res, s.interrupt(ctx, res, err)
	}
	err = s.append(ctx, mustEvent(session.TypeTurnCompleted, session.TurnCompleted{StopReason: res.StopReason, Usage: res.Usage}))
	res.Head = s.Head()
	return res, err
}

// interrupt ends the turn with turn_interrupted, written even though ctx
// may be cancelled, and returns cause.
func (s *Session) interrupt(ctx context.Context, res *Result, cause error) error {
	reason := cause.Error()
	if ctx.Err() != nil {
		reason = "cancelled"
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := s.append(wctx, mustEvent(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: reason})); err != nil {
		cause = errors.Join(cause, fmt.Errorf("record the interruption: %w", err))
	}
	res.Head = s.Head()
	if ctx.Err() != nil && !errors.Is(cause, ctx.Err()) {
		return errors.Join(ctx.Err(), cause)
	}
	return cause
}

// systemPrompt is the system prompt of the session's next model call (see
// Agent.systemPrompt, the one place it is put together).
func (s *Session) systemPrompt() string { return s.a.systemPrompt(s.current()) }

// current returns the session's state; only the turn changes it.
func (s *Session) current() *session.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *Session) callModel(ctx context.Context) (provider.Response, error) {
	req := s.request(s.current())
	return s.a.opts.Provider.Stream(ctx, req, func(d provider.Delta) {
		s.publish(Update{Session: s.id, Delta: &d})
	})
}

// request is the model request for st's next call: the system prompt, the
// transcript (from the latest compaction on) and the tools.
func (s *Session) request(st *session.State) provider.Request {
	msgs := st.Transcript()
	o := &s.a.opts
	return provider.Request{
		Model:           s.Model(),
		System:          s.a.systemPrompt(st),
		Messages:        msgs[:len(msgs):len(msgs)],
		Tools:           s.specs,
		MaxTokens:       o.MaxTokens,
		ThinkingBudget:  o.ThinkingBudget,
		ReasoningEffort: o.ReasoningEffort,
	}
}

// call is one tool call of an assistant message.
type call struct {
	id, name string
	input    []byte
}

func toolCalls(blocks []session.Block) []call {
	var out []call
	for _, b := range blocks {
		if b.Type == session.BlockToolUse {
			out = append(out, call{id: b.ID, name: b.Name, input: b.Input})
		}
	}
	return out
}

// pendingCalls finds the calls named by ids in the latest assistant message.
func pendingCalls(st *session.State, ids []string) []call {
	msgs := st.Transcript()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != session.RoleAssistant {
			continue
		}
		var out []call
		for _, c := range toolCalls(msgs[i].Blocks) {
			for _, id := range ids {
				if c.id == id {
					out = append(out, c)
				}
			}
		}
		return out
	}
	return nil
}

func textOf(blocks []session.Block) string {
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == session.BlockText {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// runTools runs the calls in order. A call's failure is the model's to read
// (a tool result); only a failure to record the log, or cancellation,
// stops the turn.
func (s *Session) runTools(ctx context.Context, calls []call) error {
	for _, c := range calls {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.runTool(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (s *Session) runTool(ctx context.Context, c call) error {
	finish := func(ctx context.Context, r session.ToolFinished, with ...session.Event) error {
		r.CallID, r.Tool = c.id, c.name
		return s.append(ctx, append(with, mustEvent(session.TypeToolFinished, r))...)
	}
	t, ok := s.tools[c.name]
	if !ok {
		return finish(ctx, session.ToolFinished{Output: fmt.Sprintf("There is no tool named %q. Available tools: %s.", c.name, strings.Join(s.toolNames(), ", ")), IsError: true})
	}
	var paths []string
	if m, ok := t.(tool.Mutator); ok {
		p, err := m.Paths(s.root, c.input)
		if err != nil {
			return finish(ctx, session.ToolFinished{Output: err.Error(), IsError: true})
		}
		paths = p
	}
	approval, denied, err := s.approve(ctx, c, t, paths)
	if err != nil {
		return err
	}
	if approval == "" {
		return finish(ctx, session.ToolFinished{Output: denied, IsError: true, Denied: true})
	}
	started := session.ToolStarted{CallID: c.id, Tool: c.name, Input: c.input, Paths: paths, Approval: approval}
	if sb, ok := t.(Sandboxed); ok {
		started.Sandbox = sb.SandboxMode()
	}
	// The intent and the snapshots of what the call will change go in one
	// durable append: if it fails, the tool does not run.
	events := []session.Event{mustEvent(session.TypeToolStarted, started)}
	st := s.current()
	for _, p := range paths {
		if st.Snapshotted(p) {
			continue
		}
		snap, err := snapshotFile(s.root, c.id, p)
		if err != nil {
			return finish(ctx, session.ToolFinished{Output: fmt.Sprintf("Could not snapshot %s before changing it, so the change was not made: %v", p, err), IsError: true})
		}
		events = append(events, mustEvent(session.TypeFileSnapshot, snap))
	}
	// A shell command is bracketed by workspace manifests (shellwatch.go);
	// a file tool's new directories are recorded (tooldirs.go).
	shell, scanned := s.beforeShell(ctx, c, t, started.Sandbox)
	newDirs := s.missingDirs(paths)
	if err := s.append(ctx, append(events, scanned...)...); err != nil {
		return err
	}
	if err := s.checkNotClaimed(ctx, t); err != nil {
		return err
	}
	res := t.Run(ctx, tool.Call{ID: c.id, Input: c.input, Root: s.root})
	// Background jobs the call started go in the log with its receipt,
	// before the model hears of them.
	jobEvents, bg := s.startedEvents(c.id)
	out := session.ToolFinished{Output: res.Output, IsError: res.IsError, Untracked: res.Untracked, Images: toSessionImages(res.Images)}
	if ctx.Err() != nil {
		out.IsError = true
		out.Output = strings.TrimSpace("The tool was cancelled by the user before it finished. " + res.Output)
	}
	if len(paths) > 0 {
		out.Files = map[string]string{}
		for _, p := range paths {
			out.Files[p] = digestFile(s.root, p)
		}
	}
	// The receipt is written even when the turn was cancelled, so the log
	// says exactly what the tool did.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	out.CallID, out.Tool = c.id, c.name
	events = jobEvents
	if shell != nil {
		events = append(events, shell.after(wctx))
	}
	if ev, ok := s.dirsCreated(c.id, newDirs); ok {
		events = append(events, ev)
	}
	if err := s.append(wctx, append(events, mustEvent(session.TypeToolFinished, out))...); err != nil {
		s.a.jobs.Refuse("its start could not be recorded", bg...)
		return err
	}
	s.a.jobs.Logged(bg...)
	return nil
}

func (s *Session) toolNames() []string {
	var names []string
	for _, sp := range s.specs {
		names = append(names, sp.Name)
	}
	return names
}

// approve returns how the call was approved ("auto", "once", "session",
// "rule"), or "" and what the model is told when it was denied.
func (s *Session) approve(ctx context.Context, c call, t tool.Tool, paths []string) (string, string, error) {
	spec := t.Spec()
	effect, ruleDenied := s.decideByRule(c, spec, paths)
	switch {
	case effect == permission.Allow:
		return "rule", "", nil
	case effect == permission.Deny:
		return "", ruleDenied, nil
	}
	userDenied := deniedText("The user denied this tool call.")
	if effect != permission.Ask {
		if spec.Kind == tool.KindRead || spec.Kind == "" || s.a.opts.Approve == nil {
			return "auto", "", nil
		}
		s.mu.Lock()
		ok := s.allowed[c.name]
		s.mu.Unlock()
		if ok {
			return "session", "", nil
		}
	} else if s.a.opts.Approve == nil {
		return "", deniedText("A permission rule requires the user's approval for this call, and no one can approve it here."), nil
	}
	s.mu.Lock()
	background := s.inBackground
	s.mu.Unlock()
	req := ApprovalRequest{Session: s.id, CallID: c.id, Tool: c.name, Kind: spec.Kind, Input: c.input, Paths: paths, Background: background, Server: spec.Server, ReadOnly: spec.ReadOnly}
	if p, ok := t.(tool.Previewer); ok {
		req.Diff = p.Preview(s.root, c.input)
	}
	// What the model said is durable before anyone is asked: a person may
	// take minutes to answer.
	if err := s.flush(ctx); err != nil {
		return "", "", err
	}
	s.publish(Update{Session: s.id, Approval: &req})
	d, err := s.a.opts.Approve(ctx, req)
	var de *DeniedError
	if errors.As(err, &de) {
		return "", deniedText("The user denied this tool call: " + de.Reason + "."), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		return "", "", fmt.Errorf("approval of %s: %w", c.name, err)
	}
	switch d {
	case AllowOnce:
		return "once", "", nil
	case AllowSession:
		s.mu.Lock()
		s.allowed[c.name] = true
		s.mu.Unlock()
		return "session", "", nil
	}
	return "", userDenied, nil
}

// snapshotFile records a file of root as it is now.
func snapshotFile(root *tool.Root, callID, rel string) (session.FileSnapshot, error) {
	snap := session.FileSnapshot{CallID: callID, Path: rel}
	data, mode, err := readFile(root, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return snap, nil
	}
	if err != nil {
		return snap, err
	}
	snap.Existed, snap.Mode, snap.Content, snap.Digest = true, mode, data, digestOf(data)
	return snap, nil
}

// digestFile returns the sha256 of the file of root at rel, "" if there is
// none.
func digestFile(root *tool.Root, rel string) string {
	data, _, err := readFile(root, rel)
	if err != nil {
		return ""
	}
	return digestOf(data)
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustEvent(t session.Type, p any) session.Event { return session.MustNew(t, p) }
