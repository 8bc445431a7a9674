package tui

import (
	"context"

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
	reply    chan liteagent.Decision // buffered: the screen never blocks on it
	answered chan struct{}           // closed by the screen once it replied
}

// Approve is a liteagent.ApprovalFunc. It runs on the agent's goroutine:
// it hands the request to the screen and waits for the answer. When ctx
// ends (the turn was cancelled or the agent closed) it returns Deny with
// ctx's error and the screen dismisses the question.
func (p *Approvals) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	ask := &approvalAsk{ctx: ctx, req: req, reply: make(chan liteagent.Decision, 1), answered: make(chan struct{})}
	select {
	case p.asks <- ask:
	case <-ctx.Done():
		return liteagent.Deny, ctx.Err()
	}
	select {
	case d := <-ask.reply:
		return d, nil
	case <-ctx.Done():
		return liteagent.Deny, ctx.Err()
	}
}

// answer replies once; later calls do nothing.
func (a *approvalAsk) answer(d liteagent.Decision) {
	select {
	case <-a.answered:
		return
	default:
	}
	a.reply <- d
	close(a.answered)
}
