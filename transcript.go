package liteagent

import (
	"context"
	"iter"

	"github.com/lite-agent/lite-agent/session"
)

// Events streams session id's log, oldest event first, through the agent's
// store. It writes nothing and does not change the current session, so a
// client can show any session's transcript (fold the events with
// session.Replay or its own view of them) before or without resuming it.
//
// An unknown session yields an error wrapping checkpoint.ErrNotFound as
// its only element; a closed agent yields ErrClosed. Stopping the iteration
// early releases what the read holds. The events are the caller's. Without
// sessions (Options.DisableSessions) only the current session's log, kept
// in memory, can be read.
func (a *Agent) Events(ctx context.Context, id string) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		a.mu.Lock()
		closed := a.isClosed
		a.mu.Unlock()
		if closed {
			yield(session.Event{}, ErrClosed)
			return
		}
		for e, err := range a.store.Read(ctx, id, 1) {
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}
