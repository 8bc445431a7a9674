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

// Send appends prompt to the current session (creating one on first use)
// and runs the turn: model calls and tool calls until the model stops. Every
// step is appended to the log before the next one starts. Cancelling ctx
// stops the model stream and running tools; the log then ends the turn with
// turn_interrupted and Send returns ctx's error.
func (a *Agent) Send(ctx context.Context, prompt string) (*Result, error) {
	return a.send(ctx, prompt, false)
}

func (a *Agent) send(ctx context.Context, prompt string, background bool) (*Result, error) {
	if a.opts.Provider == nil {
		return nil, ErrNoProvider
	}
	if strings.TrimSpace(prompt) == "" {
		return nil, errors.New("empty prompt")
	}
	ctx, leave, err := a.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	select {
	case a.turn <- struct{}{}:
		defer func() { <-a.turn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return a.turnLocked(ctx, prompt, background)
}

// turnLocked runs one turn; the caller holds the turn. A background turn
// (a completion turn the agent starts itself) records its prompt as
// Background and leaves the user's goal as it was.
func (a *Agent) turnLocked(ctx context.Context, prompt string, background bool) (*Result, error) {
	if err := a.ensureSession(ctx); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.inBackground = background
	a.mu.Unlock()
	st := a.current()
	if hz := a.currentHazards(); len(hz) > 0 {
		return nil, &HazardError{Session: a.SessionID(), Hazards: hz}
	}
	res := &Result{Session: a.SessionID()}
	// A turn a crash cut off: calls the model asked for that never started
	// are asked for again (approval included); a turn that died while the
	// model streamed is closed as interrupted.
	if pending := st.Pending(); len(pending) > 0 {
		if err := a.runTools(ctx, pendingCalls(st, pending)); err != nil {
			return nil, a.interrupt(ctx, res, err)
		}
	} else if st.Summary.Status == session.StatusRunning {
		if err := a.append(ctx, mustEvent(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: "the process stopped before the turn ended"})); err != nil {
			return nil, err
		}
	}
	start, cerr := a.contextEvents(ctx, st)
	if cerr != nil {
		return nil, cerr
	}
	if err := a.append(ctx, append(start, mustEvent(session.TypeUserPrompt, session.UserPrompt{Text: prompt, Background: background}))...); err != nil {
		return nil, err
	}
	if !background {
		a.mu.Lock()
		a.goal = prompt
		a.mu.Unlock()
	}
	for {
		if res.ModelCalls >= a.opts.MaxModelCalls {
			err := fmt.Errorf("%w (%d); send another prompt to let it go on, or raise MaxModelCalls", ErrModelCallLimit, a.opts.MaxModelCalls)
			return res, a.interrupt(ctx, res, err)
		}
		res.ModelCalls++
		resp, err := a.callModel(ctx)
		if err != nil {
			return res, a.interrupt(ctx, res, err)
		}
		res.Usage = res.Usage.Add(resp.Usage)
		res.StopReason = resp.StopReason
		res.Text = textOf(resp.Blocks)
		msg := session.AssistantMessage{Blocks: resp.Blocks, StopReason: resp.StopReason, Usage: resp.Usage, Model: resp.Model}
		if err := a.append(ctx, mustEvent(session.TypeAssistantMessage, msg)); err != nil {
			return res, a.interrupt(ctx, res, err)
		}
		calls := toolCalls(resp.Blocks)
		if len(calls) == 0 {
			break
		}
		if err := a.runTools(ctx, calls); err != nil {
			return res, a.interrupt(ctx, res, err)
		}
	}
	err := a.append(ctx, mustEvent(session.TypeTurnCompleted, session.TurnCompleted{StopReason: res.StopReason, Usage: res.Usage}))
	res.Head = a.headNow()
	return res, err
}

// interrupt ends the turn with turn_interrupted, written even though ctx
// may be cancelled, and returns cause.
func (a *Agent) interrupt(ctx context.Context, res *Result, cause error) error {
	reason := cause.Error()
	if ctx.Err() != nil {
		reason = "cancelled"
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := a.append(wctx, mustEvent(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: reason})); err != nil {
		cause = errors.Join(cause, fmt.Errorf("record the interruption: %w", err))
	}
	res.Head = a.headNow()
	if ctx.Err() != nil && !errors.Is(cause, ctx.Err()) {
		return errors.Join(ctx.Err(), cause)
	}
	return cause
}

func (a *Agent) callModel(ctx context.Context) (provider.Response, error) {
	st := a.current()
	msgs := st.Transcript()
	req := provider.Request{
		Model:     a.opts.Model,
		System:    a.systemPrompt(st),
		Messages:  msgs[:len(msgs):len(msgs)],
		Tools:     a.specs,
		MaxTokens: a.opts.MaxTokens,
	}
	id := a.SessionID()
	return a.opts.Provider.Stream(ctx, req, func(d provider.Delta) {
		a.hub.publish(Update{Session: id, Delta: &d})
	})
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
func (a *Agent) runTools(ctx context.Context, calls []call) error {
	for _, c := range calls {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.runTool(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) runTool(ctx context.Context, c call) error {
	finish := func(ctx context.Context, r session.ToolFinished) error {
		r.CallID, r.Tool = c.id, c.name
		return a.append(ctx, mustEvent(session.TypeToolFinished, r))
	}
	t, ok := a.tools[c.name]
	if !ok {
		return finish(ctx, session.ToolFinished{Output: fmt.Sprintf("There is no tool named %q. Available tools: %s.", c.name, strings.Join(a.toolNames(), ", ")), IsError: true})
	}
	spec := t.Spec()
	var paths []string
	if m, ok := t.(tool.Mutator); ok {
		p, err := m.Paths(a.root, c.input)
		if err != nil {
			return finish(ctx, session.ToolFinished{Output: err.Error(), IsError: true})
		}
		paths = p
	}
	approval, err := a.approve(ctx, c, spec, paths)
	if err != nil {
		return err
	}
	if approval == "" {
		return finish(ctx, session.ToolFinished{Output: "The user denied this tool call; it was not run. Do not retry it; ask the user or take another approach.", IsError: true, Denied: true})
	}
	// The intent and the snapshots of what the call will change go in one
	// durable append: if it fails, the tool does not run.
	events := []session.Event{mustEvent(session.TypeToolStarted, session.ToolStarted{CallID: c.id, Tool: c.name, Input: c.input, Paths: paths, Approval: approval})}
	st := a.current()
	for _, p := range paths {
		if st.Snapshotted(p) {
			continue
		}
		snap, err := a.snapshot(c.id, p)
		if err != nil {
			return finish(ctx, session.ToolFinished{Output: fmt.Sprintf("Could not snapshot %s before changing it, so the change was not made: %v", p, err), IsError: true})
		}
		events = append(events, mustEvent(session.TypeFileSnapshot, snap))
	}
	if err := a.append(ctx, events...); err != nil {
		return err
	}
	res := t.Run(ctx, tool.Call{ID: c.id, Input: c.input, Root: a.root})
	out := session.ToolFinished{Output: res.Output, IsError: res.IsError, Untracked: res.Untracked}
	if ctx.Err() != nil {
		out.IsError = true
		out.Output = strings.TrimSpace("The tool was cancelled by the user before it finished. " + res.Output)
	}
	if len(paths) > 0 {
		out.Files = map[string]string{}
		for _, p := range paths {
			out.Files[p] = a.digest(p)
		}
	}
	// The receipt is written even when the turn was cancelled, so the log
	// says exactly what the tool did.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	return finish(wctx, out)
}

func (a *Agent) toolNames() []string {
	var names []string
	for _, s := range a.specs {
		names = append(names, s.Name)
	}
	return names
}

// approve returns how the call was approved ("auto", "once", "session"), or
// "" when it was denied.
func (a *Agent) approve(ctx context.Context, c call, spec tool.Spec, paths []string) (string, error) {
	if spec.Kind == tool.KindRead || spec.Kind == "" {
		return "auto", nil
	}
	if a.opts.Approve == nil {
		return "auto", nil
	}
	a.mu.Lock()
	ok, background := a.allowed[c.name], a.inBackground
	a.mu.Unlock()
	if ok {
		return "session", nil
	}
	d, err := a.opts.Approve(ctx, ApprovalRequest{Session: a.SessionID(), CallID: c.id, Tool: c.name, Kind: spec.Kind, Input: c.input, Paths: paths, Background: background})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("approval of %s: %w", c.name, err)
	}
	switch d {
	case AllowOnce:
		return "once", nil
	case AllowSession:
		a.mu.Lock()
		a.allowed[c.name] = true
		a.mu.Unlock()
		return "session", nil
	}
	return "", nil
}

// snapshot records a file as it is now.
func (a *Agent) snapshot(callID, rel string) (session.FileSnapshot, error) {
	s := session.FileSnapshot{CallID: callID, Path: rel}
	data, mode, err := readFile(a.root, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.Existed, s.Mode, s.Content, s.Digest = true, mode, data, digestOf(data)
	return s, nil
}

// digest returns the sha256 of the file at rel, "" if there is none.
func (a *Agent) digest(rel string) string {
	data, _, err := readFile(a.root, rel)
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
