// Package groupcommit batches concurrent writes into one durable commit.
//
// Callers Submit requests; while one commit runs, later requests queue. When
// the commit returns, the first queued caller takes the whole queue as the
// next batch. So under load many appends share one transaction and one
// fsync, while a lone append pays for exactly one commit and waits for nobody.
package groupcommit

import "sync"

// Group runs commits of batches of requests of type R one at a time.
type Group[R any] struct {
	commit func(batch []*R)

	mu      sync.Mutex
	pending []*call[R]
	running bool
}

type call[R any] struct {
	req  *R
	done chan struct{} // closed when a commit including req returned
	lead chan struct{} // closed when this caller must run the next commit
}

// New returns a Group whose commit function is called with each batch. The
// function must record each request's own outcome inside the request (its
// result, or its error such as a conflict) and be durable before it returns.
// It is never called concurrently with itself.
func New[R any](commit func(batch []*R)) *Group[R] {
	return &Group[R]{commit: commit}
}

// Submit queues r and returns once a commit that included it has returned.
func (g *Group[R]) Submit(r *R) {
	c := &call[R]{req: r, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if g.running {
		g.mu.Unlock()
		select {
		case <-c.done:
			return
		case <-c.lead:
		}
		g.mu.Lock()
	}
	g.running = true
	batch := g.pending
	g.pending = nil
	g.mu.Unlock()

	reqs := make([]*R, len(batch))
	for i, b := range batch {
		reqs[i] = b.req
	}
	g.commit(reqs)
	for _, b := range batch {
		close(b.done)
	}

	g.mu.Lock()
	if len(g.pending) > 0 {
		close(g.pending[0].lead) // it takes the queue; running stays true
	} else {
		g.running = false
	}
	g.mu.Unlock()
}
