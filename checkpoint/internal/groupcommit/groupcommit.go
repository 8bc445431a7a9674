// Package groupcommit batches concurrent writes into one durable commit.
//
// Callers Submit requests; while one commit runs, later requests queue. When
// the commit returns, the first queued caller takes the whole queue as the
// next batch. So under load many appends share one transaction and one
// fsync, while a lone append pays for exactly one commit and waits for nobody.
package groupcommit

import (
	"sync"
	"time"
)

// Group runs commits of batches of requests of type R one at a time.
type Group[R any] struct {
	commit func(batch []*R)

	mu      sync.Mutex
	pending []*call[R]
	running bool

	gather  func(queued int) time.Duration // see Gather; nil: take the queue at once
	arrived chan struct{}                  // closed by Submit while a leader gathers
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

// Gather makes each leader wait a little for company before it takes the
// queue. When commits are dominated by a flush, the callers released by one
// commit come back while the next one is already flushing, so without it
// concurrent callers settle into two alternating halves and each commit
// serves about half of them. The leader calls wait with the number of
// requests queued (its own included) and waits for at most the duration
// returned, counted from the first call, or until another request arrives,
// then asks again; a duration ≤ 0 means take the queue now. Call Gather
// before the first Submit.
func (g *Group[R]) Gather(wait func(queued int) time.Duration) {
	g.gather = wait
}

// Submit queues r and returns once a commit that included it has returned.
func (g *Group[R]) Submit(r *R) {
	c := &call[R]{req: r, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if g.arrived != nil {
		close(g.arrived)
		g.arrived = nil
	}
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
	g.gatherCompany()
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

// gatherCompany waits as Gather set up; g.mu is held on entry and on return.
func (g *Group[R]) gatherCompany() {
	if g.gather == nil {
		return
	}
	var deadline time.Time
	for {
		d := g.gather(len(g.pending))
		if d <= 0 {
			return
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(d)
		} else if left := deadline.Sub(now); left < d {
			d = left
		}
		if d <= 0 {
			return
		}
		arrived := make(chan struct{})
		g.arrived = arrived
		g.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-arrived:
			t.Stop()
			g.mu.Lock()
		case <-t.C:
			g.mu.Lock()
			g.arrived = nil
			return
		}
	}
}
