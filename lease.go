package liteagent

import (
	"context"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// leaseTurn takes the liveness lease of session id for the turn about to
// run, when the store offers leases (checkpoint.Leaser); a live process
// holding it makes the turn stop with a *checkpoint.LeaseHeldError before
// anything is written. Without a Leaser it is a no-op.
func (a *Agent) leaseTurn(ctx context.Context, id string) (func(), error) {
	l, ok := a.store.(checkpoint.Leaser)
	if !ok {
		return func() {}, nil
	}
	return l.Lease(ctx, id)
}

// Running returns the process running a turn in session id right now (a
// live lease, see checkpoint.Leaser), nil if none does or the store cannot
// tell: Info.Running without reading the session's log, for a caller
// about to resume it that must not present a running turn's open calls as
// recovery hazards.
func (a *Agent) Running(ctx context.Context, id string) *checkpoint.Holder {
	return a.liveHolder(ctx, id)
}

// liveHolder returns the process running a turn in session id now, nil if
// none does or the store cannot tell.
func (a *Agent) liveHolder(ctx context.Context, id string) *checkpoint.Holder {
	l, ok := a.store.(checkpoint.Leaser)
	if !ok {
		return nil
	}
	h, err := l.LeaseHolder(ctx, id)
	if err != nil {
		return nil
	}
	return h
}

// refuseLive returns a *checkpoint.LeaseHeldError when a live process runs
// session id: its open calls are running, not crashed, and must not be
// acknowledged or continued.
func (a *Agent) refuseLive(ctx context.Context, id string) error {
	if h := a.liveHolder(ctx, id); h != nil {
		return &checkpoint.LeaseHeldError{Session: id, Holder: *h}
	}
	return nil
}

// splitLive moves the hazards of a session a live process is running into
// the calls it is running now: they are not hazards.
func splitLive(h *checkpoint.Holder, hz []session.Hazard) (hazards, running []session.Hazard) {
	if h == nil {
		return hz, nil
	}
	return nil, hz
}
