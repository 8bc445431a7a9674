package tui

import (
	"context"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
)

// Approvals carries tool approval requests from the agent to the screen
// and the user's answers back. Create it before the agent, pass its
// Approve method as liteagent.Options.Approve, and give it to Run.
type Approvals struct {
	asks chan *approvalAsk
}

// NewApprovals returns an Approvals with no screen attached yet: Approve
// waits until Run shows the request (or its context ends).
func NewApprovals() *Approvals {
	return &Approvals{asks: make(chan *approvalAsk)}
}

// approvalAsk is one request waiting for the user.
type approvalAsk struct {
	ctx      context.Context
	req      liteagent.ApprovalRequest
	reply    chan verdict  // buffered: the screen never blocks on it
	answered chan struct{} // closed by the screen once it replied
	// Set by the screen: when the question appeared, and the choice the
	// arrow keys point at (-1: none yet).
	shown    time.Time
	selected int
}

// verdict is the screen's answer: a decision, and for a deny the reason the
// model is told ("" for none).
type verdict struct {
	d      liteagent.Decision
	reason string
}

// Approve is a liteagent.ApprovalFunc. It runs on the agent's goroutine:
// it hands the request to the screen and waits for the answer. When ctx
// ends (the turn was cancelled or the agent closed) it returns Deny with
// ctx's error and the screen dismisses the question.
func (p *Approvals) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	ask := &approvalAsk{ctx: ctx, req: req, reply: make(chan verdict, 1), answered: make(chan struct{}), selected: -1}
	select {
	case p.asks <- ask:
	case <-ctx.Done():
		return liteagent.Deny, ctx.Err()
	}
	select {
	case r := <-ask.reply:
		if r.d == liteagent.Deny && r.reason != "" {
			return liteagent.Deny, &liteagent.DeniedError{Reason: r.reason}
		}
		return r.d, nil
	case <-ctx.Done():
		return liteagent.Deny, ctx.Err()
	}
}

// answer replies once; later calls do nothing.
func (a *approvalAsk) answer(d liteagent.Decision, reason string) {
	select {
	case <-a.answered:
		return
	default:
	}
	a.reply <- verdict{d, reason}
	close(a.answered)
}
