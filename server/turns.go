package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// turn is a turn this server runs.
type turn struct {
	session string
	cancel  context.CancelFunc
	done    chan struct{} // closed when Send returned

	// Set before done closes.
	res  *liteagent.Result
	err  error
	head int64

	mu       sync.Mutex
	shutdown bool // Shutdown cancelled it
}

func (t *turn) markShutdown() {
	t.mu.Lock()
	t.shutdown = true
	t.mu.Unlock()
}

func (t *turn) wasShutdown() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shutdown
}

// BusyError is returned when a turn already runs in the session: in this
// server, or in another process (Holder, when the store can tell). Nothing
// was written.
type BusyError struct {
	Session string
	Head    int64              // the session's head when the prompt was refused
	Here    bool               // the running turn is this server's
	Holder  *checkpoint.Holder // the process running it, when known
}

func (e *BusyError) Error() string {
	switch {
	case e.Here:
		return fmt.Sprintf("a turn is already running in session %s on this server; wait for it to end (follow its stream) or cancel it", e.Session)
	case e.Holder != nil:
		return fmt.Sprintf("a turn is running in session %s in %s; wait for it to end", e.Session, e.Holder)
	}
	return fmt.Sprintf("a turn is running in session %s in another process; wait for it to end (if that process died, send again with take_over set to close its turn as interrupted)", e.Session)
}

// errShuttingDown: Shutdown has started; no new turn starts.
var errShuttingDown = errors.New("the server is shutting down; no new turn starts")

// turnStarted is what a prompt request learns once its turn is under way:
// the seq of its user_prompt event, or why it did not start.
type turnStarted struct {
	promptSeq int64
	err       error
}

// startTurn runs prompt in session id (fresh: a new session, not yet
// stored) as a turn of the server, and returns once its prompt is in the
// log or the turn failed before that. The turn goes on after the request
// that started it ends.
func (s *Server) startTurn(ctx context.Context, id string, fresh *liteagent.Session, prompt string, takeOver bool) (*turn, int64, error) {
	t := &turn{session: id, done: make(chan struct{})}
	s.mu.Lock()
	if s.isShutdown {
		s.mu.Unlock()
		return nil, 0, errShuttingDown
	}
	l := s.sessions[id]
	if l != nil && l.turn != nil {
		s.mu.Unlock()
		return nil, 0, &BusyError{Session: id, Head: l.head(), Here: true}
	}
	if l == nil {
		l = &liveSession{s: fresh}
		s.sessions[id] = l
	}
	l.turn = t // reserved: a second prompt here is refused from now on
	s.turnsWG.Add(1)
	s.mu.Unlock()

	release := func() {
		s.mu.Lock()
		if l.turn == t {
			l.turn = nil
		}
		if l.s == nil {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
		s.turnsWG.Done()
	}
	sess := fresh
	if fresh == nil {
		s.mu.Lock()
		have := l.s
		s.mu.Unlock()
		var err error
		sess, err = s.current(ctx, id, have, takeOver)
		if have != nil && have != sess {
			have.Close() // behind the log: another process wrote it
		}
		s.mu.Lock()
		l.s = sess // nil on error
		s.mu.Unlock()
		if err != nil {
			t.err = err // for a Shutdown that counted it already
			release()
			return nil, 0, err
		}
	}
	tctx, cancel := context.WithCancel(s.turnCtx)
	t.cancel = cancel
	started := make(chan turnStarted, 1)
	go func() {
		defer cancel()
		var once sync.Once
		signal := func(r turnStarted) { once.Do(func() { started <- r }) }
		res, err := sess.Send(tctx, prompt, &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) {
			s.publishUpdate(id, u)
			if u.Event != nil && u.Event.Type == session.TypeUserPrompt {
				signal(turnStarted{promptSeq: u.Event.Seq})
				s.feeds.publish(id, dataMsg(kindTurn, turnState{State: "running", Session: id}))
			}
		}})
		t.res, t.err, t.head = res, err, sess.Head()
		st := turnState{State: "ended", Session: id, Head: t.head}
		if res != nil {
			st.StopReason = res.StopReason
		}
		if err != nil {
			st.Error = err.Error()
		}
		if s.approvals != nil {
			// Before the turn is said to have ended, so that a client
			// sending the next prompt at once finds the session free.
			s.approvals.turnEnded(id)
		}
		s.feeds.publish(id, dataMsg(kindTurn, st))
		s.mu.Lock()
		if fresh != nil && sess.Head() == 0 {
			// Nothing was stored: the session does not exist.
			delete(s.sessions, id)
			sess.Close()
		}
		if l.turn == t {
			l.turn = nil
		}
		s.mu.Unlock()
		close(t.done)
		// A turn that failed before its prompt was stored answers its
		// request only now, when the session takes the next prompt.
		signal(turnStarted{err: err})
		s.turnsWG.Done()
	}()
	select {
	case r := <-started:
		return t, r.promptSeq, r.err
	case <-ctx.Done():
		return t, 0, ctx.Err()
	}
}

// current returns a Session of id at the store's head: have when it is
// there still, else the session opened again. A turn the log shows
// running in another process refuses the prompt with a *BusyError, unless
// takeOver (that process died and the store cannot tell).
func (s *Server) current(ctx context.Context, id string, have *liteagent.Session, takeOver bool) (*liteagent.Session, error) {
	sum, err := s.store.Head(ctx, id)
	if err != nil {
		return nil, err
	}
	if sum.Kind != "" {
		return nil, fmt.Errorf("session %s is a %s log, not a conversation: %w", id, sum.Kind, checkpoint.ErrInvalid)
	}
	if sum.Status == session.StatusRunning && !takeOver {
		l, ok := s.store.(checkpoint.Leaser)
		if !ok {
			return nil, &BusyError{Session: id, Head: sum.Head}
		}
		if h, err := l.LeaseHolder(ctx, id); err != nil || h != nil {
			return nil, &BusyError{Session: id, Head: sum.Head, Holder: h}
		}
	}
	if have != nil && have.Head() == sum.Head {
		return have, nil
	}
	sess, err := s.agent.OpenSession(ctx, id, s.sessionOptions())
	if err != nil {
		return nil, err
	}
	if h := sess.Head(); h != sum.Head {
		// Another process appended since the head was read: its turn is
		// running or just ran; this prompt must not go after it blindly.
		sess.Close()
		return nil, &checkpoint.ConflictError{Session: id, Expected: sum.Head, Actual: h}
	}
	return sess, nil
}

// sessionOptions route the updates of the work a session does by itself
// (background completion turns, job ends) to its stream.
func (s *Server) sessionOptions() *liteagent.SessionOptions {
	return &liteagent.SessionOptions{OnBackground: func(u liteagent.Update) { s.publishUpdate(u.Session, u) }}
}

// head is the session's head as this server knows it; 0 when it has not
// opened it yet. The caller holds s.mu.
func (l *liveSession) head() int64 {
	if l.s == nil {
		return 0
	}
	return l.s.Head()
}

// turnState is the data of a turn message.
type turnState struct {
	State      string `json:"state"` // "running" or "ended"
	Session    string `json:"session"`
	Head       int64  `json:"head,omitempty"`
	StopReason string `json:"stop_reason,omitempty"`
	Error      string `json:"error,omitempty"`
}

// publishUpdate hands an update of a turn to the session's stream.
func (s *Server) publishUpdate(id string, u liteagent.Update) {
	switch {
	case u.Event != nil:
		s.feeds.publish(id, eventMsg(*u.Event))
	case u.Delta != nil:
		s.feeds.publish(id, dataMsg(kindDelta, deltaJSON{Index: u.Delta.Index, Kind: u.Delta.Kind, Text: u.Delta.Text, Name: u.Delta.Name}))
	case u.Approval != nil && s.approvals == nil:
		// The agent's own ApprovalFunc answers; the stream shows the call.
		s.feeds.publish(id, dataMsg(kindApproval, approvalOf(*u.Approval)))
	}
	// With the server's Approvals, an approval is published by them once
	// it waits for its answer (publishApproval), not here: before that, a
	// stream opening would neither receive it live nor find it pending.
}

// publishApproval puts a call waiting for approval on the session's stream.
func (s *Server) publishApproval(r liteagent.ApprovalRequest) {
	s.feeds.publish(r.Session, dataMsg(kindApproval, approvalOf(r)))
}

// publishQuestion puts a question the model asks on the session's stream.
func (s *Server) publishQuestion(q liteagent.InputRequest) {
	s.feeds.publish(q.Session, dataMsg(kindQuestion, questionOf(q)))
}

// cancelTurn cancels this server's turn in session id.
func (s *Server) cancelTurn(id string) (*turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.sessions[id]
	if l == nil || l.turn == nil || l.turn.cancel == nil {
		return nil, false
	}
	l.turn.cancel()
	return l.turn, true
}

// idle returns an error when this server runs a turn in session id.
func (s *Server) idle(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.sessions[id]; l != nil && l.turn != nil {
		return &BusyError{Session: id, Head: l.head(), Here: true}
	}
	return nil
}

// drop closes and forgets the server's open session id (after a delete).
func (s *Server) drop(id string) {
	s.mu.Lock()
	l := s.sessions[id]
	if l != nil && l.turn == nil {
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	if l != nil && l.turn == nil && l.s != nil {
		l.s.Close()
	}
}
