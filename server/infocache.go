package server

import (
	"context"
	"sync"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// maxCachedInfos bounds the info cache; past it the cache starts over.
const maxCachedInfos = 4096

// infoCache keeps the last Info served per session with the head and
// last-event time it was read at, so a request for a session whose log
// has not moved (the store's head says so) is answered without replaying
// the log. BenchmarkSessionInfo50Clients showed the replay as 40% of the
// CPU of an info request. The liveness lease is asked on every check: an
// Info read while nobody ran the session is not reused once someone
// does, and the other way round.
//
// Requests for one session at once share their checks of the head and
// lease: a request is answered by a check that began after it arrived
// (so it sees every append made before it), but one check answers every
// request that arrived while the check before it ran. With 50 clients on
// one session that is one check for many requests, where the checks were
// a third of a request's CPU (BenchmarkSessionInfo50Clients).
type infoCache struct {
	mu     sync.Mutex
	m      map[string]cachedInfo
	checks map[string]*checks // sessions being checked
}

type cachedInfo struct {
	head    int64
	updated time.Time
	live    bool // a process held the session's lease when it was read
	info    liteagent.Info
}

// checks are a session's check of its head and lease now running, and
// the one the requests that came after it started wait for.
type checks struct{ running, next *headCheck }

// headCheck is one read of a session's head and lease holder; its fields
// are set before done is closed.
type headCheck struct {
	done   chan struct{}
	sum    session.Summary
	holder *checkpoint.Holder
	err    error
}

// checkTimeout bounds a shared check, which no one request's context
// cancels.
const checkTimeout = 10 * time.Second

// head returns session id's summary and lease holder as read by a check
// that began after head was called (see infoCache).
func (s *Server) head(ctx context.Context, id string) (session.Summary, *checkpoint.Holder, error) {
	s.infos.mu.Lock()
	if s.infos.checks == nil {
		s.infos.checks = map[string]*checks{}
	}
	cs := s.infos.checks[id]
	if cs == nil {
		cs = &checks{}
		s.infos.checks[id] = cs
	}
	var c *headCheck
	switch {
	case cs.running == nil:
		c = &headCheck{done: make(chan struct{})}
		cs.running = c
		go s.runCheck(context.WithoutCancel(ctx), id, cs, c)
	case cs.next == nil:
		c = &headCheck{done: make(chan struct{})}
		cs.next = c // started when the running one ends
	default:
		c = cs.next
	}
	s.infos.mu.Unlock()
	select {
	case <-c.done:
		return c.sum, c.holder, c.err
	case <-ctx.Done():
		return session.Summary{}, nil, ctx.Err()
	}
}

// runCheck reads the head and lease holder for c, then starts the check
// the requests that came meanwhile wait for, if any.
func (s *Server) runCheck(ctx context.Context, id string, cs *checks, c *headCheck) {
	for c != nil {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		c.sum, c.err = s.store.Head(cctx, id)
		if l, ok := s.store.(checkpoint.Leaser); ok && c.err == nil {
			if h, err := l.LeaseHolder(cctx, id); err == nil {
				c.holder = h
			}
		}
		cancel()
		s.infos.mu.Lock()
		next := cs.next
		cs.running, cs.next = next, nil
		if next == nil {
			delete(s.infos.checks, id)
		}
		s.infos.mu.Unlock()
		close(c.done)
		c = next
	}
}

// info returns session id's Info (see liteagent.Agent.SessionInfo).
func (s *Server) info(ctx context.Context, id string) (*liteagent.Info, error) {
	sum, holder, err := s.head(ctx, id)
	if err != nil {
		return nil, err
	}
	s.infos.mu.Lock()
	c, ok := s.infos.m[id]
	s.infos.mu.Unlock()
	if ok && c.head == sum.Head && c.updated.Equal(sum.Updated) && c.live == (holder != nil) {
		info := c.info // the slices are shared, and only read
		info.Running = holder
		return &info, nil
	}
	info, err := s.agent.SessionInfo(ctx, id)
	if err != nil {
		return nil, err
	}
	s.infos.mu.Lock()
	if s.infos.m == nil || len(s.infos.m) >= maxCachedInfos {
		s.infos.m = map[string]cachedInfo{}
	}
	s.infos.m[id] = cachedInfo{head: info.Head, updated: info.Updated, live: info.Running != nil, info: *info}
	s.infos.mu.Unlock()
	return info, nil
}
