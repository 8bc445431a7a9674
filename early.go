package liteagent

import (
	"context"
	"errors"
	"reflect"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// earlyCall is a turn's first model call, sent while the prompt's append
// is being made durable, so that the append's fsync and the model's time
// to its first byte overlap (the first delta of a turn comes that much
// sooner; BenchmarkFirstStreamByte in package server measures it).
//
// Nothing the model sends is shown or used before the append is durable:
// each delta waits at the gate, and the response is taken only then. If
// the append fails, or the request the log now makes is not the one sent
// (a prompt that closed calls left open, say), the call is cancelled and
// nothing of it is seen; the turn fails, or calls the model again, as it
// would have without it.
type earlyCall struct {
	req    provider.Request
	cancel context.CancelFunc
	gate   chan struct{}       // closed once keep is decided
	keep   bool                // written before gate closes
	deltas chan provider.Delta // the kept deltas; closed when Stream returned
	resp   provider.Response
	err    error
}

// callEarly starts the first model call of the turn whose prompt (after
// the events start) is about to be appended. It returns nil, and calls
// nothing, when the call would first have to compact the transcript.
func (s *Session) callEarly(ctx context.Context, prompt string, start []session.Event) *earlyCall {
	st := s.current()
	pc := st.ProjectContext()
	for _, e := range start {
		if e.Type == session.TypeProjectContext {
			pc = new(session.ProjectContext)
			if e.Decode(pc) != nil {
				return nil
			}
		}
	}
	req := s.request(st)
	req.System = s.a.systemText(pc)
	req.Messages = withUserText(req.Messages, prompt)
	if s.wouldCompact(req, st) {
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	c := &earlyCall{req: req, cancel: cancel, gate: make(chan struct{}), deltas: make(chan provider.Delta)}
	go func() {
		defer close(c.deltas)
		c.resp, c.err = s.a.opts.Provider.Stream(cctx, req, func(d provider.Delta) {
			<-c.gate
			if c.keep {
				c.deltas <- d // take publishes it, from the turn's goroutine
			}
		})
	}()
	return c
}

// wouldCompact reports whether autoCompact would compact before sending
// req, st's next request.
func (s *Session) wouldCompact(req provider.Request, st *session.State) bool {
	window := s.a.contextWindow(s.Model())
	if window <= 0 || s.a.opts.CompactAt < 0 {
		return false
	}
	if _, seq := st.Compaction(); seq == s.Head() {
		return false
	}
	return estimate(req, st) >= int64(s.a.opts.CompactAt*float64(window))
}

// take is called once the prompt is durable: when the request the log
// now makes is the one sent, the call's deltas go out and its
// response is returned, retried after compacting as callModelCompacting
// would; ok is false, and the call cancelled, when it is not (or c is
// nil).
func (c *earlyCall) take(ctx context.Context, s *Session) (resp provider.Response, err error, ok bool) {
	if c == nil {
		return provider.Response{}, nil, false
	}
	c.keep = sameRequest(c.req, s.request(s.current()))
	close(c.gate)
	if !c.keep {
		c.cancel()
	}
	for d := range c.deltas {
		s.publish(Update{Session: s.id, Delta: &d})
	}
	c.cancel()
	if !c.keep {
		return provider.Response{}, nil, false
	}
	resp, err = c.resp, c.err
	if !errors.Is(err, provider.ErrContextTooLong) || ctx.Err() != nil || s.a.opts.CompactAt < 0 {
		return resp, err, true
	}
	if _, cerr := s.compactLocked(ctx, "", true); cerr != nil {
		return resp, errors.Join(err, cerr), true
	}
	resp, err = s.callModel(ctx)
	return resp, err, true
}

// discard cancels the call when the prompt's append failed, and returns
// once it has stopped; nothing it got was seen. A nil call is fine.
func (c *earlyCall) discard() {
	if c == nil {
		return
	}
	c.cancel()
	close(c.gate)
	for range c.deltas {
	}
}

// sameRequest reports whether a and b are the same request, as
// reflect.DeepEqual does. The messages are compared one by one, a block
// list shared by both (the transcript's own, as both requests are built
// from the session's state) taken as equal without reading it:
// DeepEqual of a 500-turn request records each of its 1,000 block lists
// in a map against cycles, about 1.2 ms of a resumed process's CPU.
func sameRequest(a, b provider.Request) bool {
	am, bm := a.Messages, b.Messages
	a.Messages, b.Messages = nil, nil
	if (am == nil) != (bm == nil) || len(am) != len(bm) || !reflect.DeepEqual(a, b) {
		return false
	}
	for i := range am {
		x, y := am[i].Blocks, bm[i].Blocks
		if am[i].Role != bm[i].Role || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		if len(x) > 0 && &x[0] == &y[0] {
			continue
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}
