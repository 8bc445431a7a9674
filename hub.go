package liteagent

import (
	"sync"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// Update is what SendOptions.OnUpdate and subscribers receive: a streaming
// piece of the model's answer (never persisted), a persisted event, or an
// approval asked. Exactly one field besides Session is set.
type Update struct {
	Session string
	// Delta is set for a streaming piece of the model's answer.
	Delta *provider.Delta
	// Event is set for an event just appended to the session log.
	Event *session.Event
	// Approval is set when a tool call waits for Options.Approve.
	Approval *ApprovalRequest
}

// Subscribe returns a channel of updates and a function that ends the
// subscription. Updates are queued without bound for each subscriber, so a
// slow reader never blocks the agent loop. The channel is closed when the
// subscription or the agent is closed.
func (a *Agent) Subscribe() (<-chan Update, func()) {
	return a.hub.subscribe()
}

// hub fans updates out to subscribers without blocking the publisher.
type hub struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	closed bool
}

type subscriber struct {
	mu     sync.Mutex
	queue  []Update
	wake   chan struct{}
	done   chan struct{}
	out    chan Update
	closed sync.Once
}

func (h *hub) subscribe() (<-chan Update, func()) {
	s := &subscriber{wake: make(chan struct{}, 1), done: make(chan struct{}), out: make(chan Update)}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		close(s.out)
		return s.out, func() {}
	}
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go s.pump()
	return s.out, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
		s.stop()
	}
}

func (h *hub) publish(u Update) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.mu.Lock()
		s.queue = append(s.queue, u)
		s.mu.Unlock()
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	subs := h.subs
	h.subs, h.closed = nil, true
	h.mu.Unlock()
	for s := range subs {
		s.stop()
	}
}

func (s *subscriber) stop() { s.closed.Do(func() { close(s.done) }) }

// pump moves queued updates to the reader, in order, until stopped; what is
// still queued then is dropped. Readers that need every update of a turn
// read until its turn_completed or turn_interrupted event.
func (s *subscriber) pump() {
	defer close(s.out)
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, u := range batch {
			select {
			case s.out <- u:
			case <-s.done:
				return
			}
		}
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
	}
}
