package liteagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// CompactPrompt is what the model is asked, as the last user message of the
// summary request, when a session is compacted. A focus given to Compact
// follows it.
const CompactPrompt = "Summarise this conversation so far for yourself, so that the work can go on from the summary alone: the messages before it will no longer be sent. Keep the user's goals and instructions, the decisions made and why, the files read or changed (with paths) and what matters in them, commands run and their results, errors met and how they were solved, and what is still to do. Be complete but brief; answer with the summary only and call no tools."

// DefaultCompactAt is the share of the model's context window at which a
// request is compacted before it is sent.
const DefaultCompactAt = 0.85

// ErrNothingToCompact is returned by Compact for a session with no messages.
var ErrNothingToCompact = errors.New("nothing to compact: the session has no messages yet")

// CompactResult describes a compaction that was recorded.
type CompactResult struct {
	Session    string        `json:"session"`
	Seq        int64         `json:"seq"`         // the compaction event
	ThroughSeq int64         `json:"through_seq"` // the last event it summarises
	Tokens     int64         `json:"tokens"`      // the estimated size of the transcript it replaced
	Summary    string        `json:"summary"`
	Usage      session.Usage `json:"usage"` // what the summary request cost
}

// Compact compacts the agent's current session (see Session.Compact).
func (a *Agent) Compact(ctx context.Context, focus string) (*CompactResult, error) {
	s, err := a.current(false)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, ErrNoSession
	}
	return s.Compact(ctx, focus)
}

// Compact summarises the session's transcript with the model and records
// the summary as a compaction event: from then on the model is sent the
// system prompt, the summary, the turn of the latest prompt (unless it is
// most of the transcript) and what follows. The log keeps every earlier
// event, so checkpoints, restore and fork still reach them. focus, when
// not empty, says what the summary should keep. Nothing is written unless
// the summary arrives whole: a failed or cancelled summary request leaves
// the log as it was.
func (s *Session) Compact(ctx context.Context, focus string) (*CompactResult, error) {
	if s.a.opts.Provider == nil {
		return nil, ErrNoProvider
	}
	ctx, release, err := s.beginTurn(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if hz := s.Hazards(); len(hz) > 0 {
		return nil, &HazardError{Session: s.id, Hazards: hz}
	}
	return s.compactLocked(ctx, strings.TrimSpace(focus), false)
}

// compactLocked compacts the session; the caller holds the turn.
func (s *Session) compactLocked(ctx context.Context, focus string, auto bool) (*CompactResult, error) {
	st := s.current()
	msgs := st.Transcript()
	if len(msgs) == 0 {
		return nil, ErrNothingToCompact
	}
	req := s.request(st)
	tokens := estimate(req, st)
	head := s.Head()
	through, older := tailFrom(st, head, tokens)
	instruction := CompactPrompt
	if focus != "" {
		instruction += "\n\nFocus the summary on: " + focus
	}
	req.Messages = withUserText(older, instruction)
	resp, err := s.a.opts.Provider.Stream(ctx, req, nil)
	if errors.Is(err, provider.ErrContextTooLong) && ctx.Err() == nil {
		// Too long to summarise whole: the old tool results go first.
		req.Messages = withUserText(clearOldResults(older, keepResults), instruction)
		resp, err = s.a.opts.Provider.Stream(ctx, req, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("compact session %s: the summary request failed, so nothing was changed: %w", s.id, err)
	}
	summary := strings.TrimSpace(textOf(resp.Blocks))
	if summary == "" {
		return nil, fmt.Errorf("compact session %s: the model answered with no summary, so nothing was changed", s.id)
	}
	c := session.Compaction{ThroughSeq: through, Summary: summary, Focus: focus, Auto: auto, Tokens: tokens, Usage: resp.Usage}
	if err := s.append(ctx, mustEvent(session.TypeCompaction, c)); err != nil {
		return nil, err
	}
	return &CompactResult{Session: s.id, Seq: head + 1, ThroughSeq: through, Tokens: tokens, Summary: summary, Usage: resp.Usage}, nil
}

// tailFrom chooses what a compaction at head summarises: everything before
// the latest prompt's turn, which stays as it is (the tail), when that turn
// is less than half of the transcript's tokens; else everything. It
// returns the seq the compaction goes through and the messages to
// summarise.
func tailFrom(st *session.State, head, tokens int64) (int64, []session.Message) {
	msgs := st.Transcript()
	cps := st.Checkpoints()
	_, compacted := st.Compaction()
	if n := len(cps); n > 0 && cps[n-1].Seq > compacted {
		tail := st.MessagesAfter(cps[n-1].Seq)
		older := msgs[:len(msgs)-len(tail)]
		if b, err := json.Marshal(tail); err == nil && len(older) > 0 && int64(len(b)/4)*2 < tokens {
			return cps[n-1].Seq, older
		}
	}
	return head, msgs
}

// autoCompact compacts the session before a model call when the request
// would pass the threshold of the model's context window (unless the
// transcript is nothing but the latest compaction already). The caller
// holds the turn.
func (s *Session) autoCompact(ctx context.Context) error {
	window := s.a.contextWindow(s.Model())
	if window <= 0 || s.a.opts.CompactAt < 0 {
		return nil
	}
	st := s.current()
	if _, seq := st.Compaction(); seq == s.Head() {
		return nil
	}
	if estimate(s.request(st), st) < int64(s.a.opts.CompactAt*float64(window)) {
		return nil
	}
	_, err := s.compactLocked(ctx, "", true)
	return err
}

// contextWindow is model's window in tokens, 0 when unknown.
func (a *Agent) contextWindow(model string) int {
	if a.opts.ContextWindow > 0 {
		return a.opts.ContextWindow
	}
	info, _ := a.models.Lookup(model)
	return info.Window
}

// estimate is the size of req in tokens: a quarter of its bytes as JSON
// (the rule the fake model uses too), or what the provider last reported
// for the transcript, whichever is larger.
func estimate(req provider.Request, st *session.State) int64 {
	n := len(req.System)
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	n += session.MessagesJSONSize(req.Messages)
	u := st.LastUsage()
	return max(int64(n+3)/4, u.InputTokens+u.OutputTokens)
}

// keepResults is how many of the latest messages keep their tool results
// when old ones are cleared.
const keepResults = 6

// clearOldResults returns a copy of msgs in which the tool results of all
// but the last keep messages are replaced by a note of their size.
func clearOldResults(msgs []session.Message, keep int) []session.Message {
	out := make([]session.Message, len(msgs))
	copy(out, msgs)
	for i := range max(0, len(out)-keep) {
		var blocks []session.Block // a copy, made at the first change
		for j, b := range out[i].Blocks {
			if b.Type != session.BlockToolResult || len(b.Text) < 200 {
				continue
			}
			if blocks == nil {
				blocks = slices.Clone(out[i].Blocks)
			}
			blocks[j].Text = fmt.Sprintf("[tool output of %d bytes cleared to fit the context window]", len(b.Text))
		}
		if blocks != nil {
			out[i].Blocks = blocks
		}
	}
	return out
}

// withUserText returns msgs with text as a last user block: added to the
// last message when it is the user's, else as a new user message. msgs is
// not modified.
func withUserText(msgs []session.Message, text string) []session.Message {
	out := make([]session.Message, len(msgs), len(msgs)+1)
	copy(out, msgs)
	b := session.Block{Type: session.BlockText, Text: text}
	if n := len(out); n > 0 && out[n-1].Role == session.RoleUser {
		out[n-1].Blocks = append(append([]session.Block(nil), out[n-1].Blocks...), b)
		return out
	}
	return append(out, session.Message{Role: session.RoleUser, Blocks: []session.Block{b}})
}

// callModelCompacting makes the turn's next model call, compacting first
// when the request would pass the threshold, and once more (then retrying)
// when the provider still finds it too long.
func (s *Session) callModelCompacting(ctx context.Context) (provider.Response, error) {
	if err := s.autoCompact(ctx); err != nil {
		return provider.Response{}, err
	}
	resp, err := s.callModel(ctx)
	if !errors.Is(err, provider.ErrContextTooLong) || ctx.Err() != nil || s.a.opts.CompactAt < 0 {
		return resp, err
	}
	if _, cerr := s.compactLocked(ctx, "", true); cerr != nil {
		return resp, errors.Join(err, cerr)
	}
	return s.callModel(ctx)
}
