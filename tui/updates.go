package tui

import (
	"context"
	"sync"

	liteagent "github.com/lite-agent/lite-agent"
)

// updateQueue carries the updates of the screen's session from the SDK's
// goroutines (SendOptions.OnUpdate, SessionOptions.OnBackground) to the UI:
// push never blocks the turn, take hands the UI what is queued, in order.
type updateQueue struct {
	mu   sync.Mutex
	q    []liteagent.Update
	wake chan struct{}
}

func newUpdateQueue() *updateQueue { return &updateQueue{wake: make(chan struct{}, 1)} }

// push queues u; it is the OnUpdate and OnBackground of the screen's
// sessions.
func (q *updateQueue) push(u liteagent.Update) {
	q.mu.Lock()
	q.q = append(q.q, u)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take waits until updates are queued and returns up to max of them, or
// nil once done is closed.
func (q *updateQueue) take(done <-chan struct{}, max int) []liteagent.Update {
	for {
		q.mu.Lock()
		if n := min(len(q.q), max); n > 0 {
			out := q.q[:n:n]
			q.q = q.q[n:]
			if len(q.q) > 0 {
				select {
				case q.wake <- struct{}{}:
				default:
				}
			}
			q.mu.Unlock()
			return out
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-done:
			return nil
		}
	}
}

// openSession opens session id (a new one with "") for the screen, its
// background work's updates queued for it, and makes it the agent's
// current session. It runs in a command's goroutine; the caller sets
// m.sess on the UI goroutine.
func openSession(ctx context.Context, a *liteagent.Agent, q *updateQueue, id string) (*liteagent.Session, error) {
	opts := &liteagent.SessionOptions{OnBackground: q.push}
	var s *liteagent.Session
	var err error
	if id == "" {
		s, err = a.NewSession(ctx, opts)
	} else {
		opts.Workdir = a.Workdir() // only a session of this workdir (see Agent.Resume)
		s, err = a.OpenSession(ctx, id, opts)
	}
	if err != nil {
		return nil, err
	}
	a.Use(s)
	return s, nil
}
