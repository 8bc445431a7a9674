package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
)

// Approvals holds the tool calls waiting for approval and the questions
// waiting for an answer, so that HTTP requests can answer them. Build the
// agent with its methods, then hand it to New:
//
//	ap := server.NewApprovals()
//	agent, _ := liteagent.New(&liteagent.Options{Approve: ap.Approve, Input: ap.Input, …})
//	srv, _ := server.New(agent, &server.Options{Approvals: ap, Store: store})
//
// When the store is a checkpoint.Mailbox (SQLite, PostgreSQL, memory),
// every waiting call is also posted in the session's mailbox in the store,
// so any server on the same store can list and answer it; the waiting call
// watches the mailbox (checkpoint.Watcher where the store has it, else
// polling every Options.PollInterval). Without a mailbox only this process
// answers its calls.
//
// A call waits until it is answered or its turn is cancelled. An answered
// call keeps its answer until its turn ends, so a second answer is refused
// as answered already. Safe for concurrent use.
type Approvals struct {
	mu       sync.Mutex
	pending  map[pendingKey]*waiting
	answered map[pendingKey]bool             // answered here without a mailbox, until the turn ends
	posted   map[string]bool                 // sessions this process posted in since their last turn's end
	question func(liteagent.InputRequest)    // the server's: publish a question on the session's stream
	approval func(liteagent.ApprovalRequest) // the server's: publish a call waiting for approval
	store    checkpoint.Checkpointer         // the server's
	box      checkpoint.Mailbox              // nil: answers are taken in this process only
	watch    checkpoint.Watcher              // nil: the mailbox is polled
	poll     time.Duration                   // how often the mailbox is read without word from watch
	log      func(msg string, args ...any)   // the server's logger
}

type pendingKey struct{ session, call string }

// Mailbox kinds of the server's entries.
const (
	mailApproval = "approval"
	mailQuestion = "question"
)

// waiting is one call or question waiting for its answer.
type waiting struct {
	approval *liteagent.ApprovalRequest
	question *liteagent.InputRequest
	since    time.Time
	answer   chan answer // buffered, 1
}

// answer is what a call is answered with, and how it is kept in the
// mailbox.
type answer struct {
	Decision liteagent.Decision `json:"decision"`
	Reason   string             `json:"reason,omitempty"` // a denial's reason, told to the model
	Text     string             `json:"text,omitempty"`   // a question's answer
}

// Pending is a call or question waiting for an answer, as the API lists
// it: exactly one of Approval and Question is set.
type Pending struct {
	Approval *liteagent.ApprovalRequest `json:"approval,omitempty"`
	Question *liteagent.InputRequest    `json:"question,omitempty"`
	Since    time.Time                  `json:"since"`
}

// errNoPending: nothing with that call id waits for an answer.
var errNoPending = errors.New("no call or question with that id waits for an answer in this session")

// errAnswered: the call has its answer already.
var errAnswered = errors.New("this call or question has been answered already; its first answer stands")

// NewApprovals returns an empty Approvals.
func NewApprovals() *Approvals {
	return &Approvals{pending: map[pendingKey]*waiting{}, answered: map[pendingKey]bool{}, posted: map[string]bool{}}
}

// attach connects a to its server: how questions and calls waiting for
// approval are published, and the store's mailbox if it has one.
func (a *Approvals) attach(question func(liteagent.InputRequest), approval func(liteagent.ApprovalRequest), store checkpoint.Checkpointer, poll time.Duration, log func(string, ...any)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.question, a.approval, a.store, a.poll, a.log = question, approval, store, poll, log
	a.box, _ = store.(checkpoint.Mailbox)
	a.watch, _ = store.(checkpoint.Watcher)
}

// Approve is a liteagent.ApprovalFunc: it waits for an HTTP answer to the
// call (POST /api/sessions/{id}/approvals/{call}), on this server or any
// other on the same store, or for ctx to end.
func (a *Approvals) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	r := req
	ans, err := a.wait(ctx, pendingKey{req.Session, req.CallID}, &waiting{approval: &r})
	if err != nil {
		return liteagent.Deny, err
	}
	if ans.Decision == liteagent.Deny && ans.Reason != "" {
		return liteagent.Deny, &liteagent.DeniedError{Reason: ans.Reason}
	}
	return ans.Decision, nil
}

// Input is a liteagent.InputFunc: it publishes the question on the
// session's stream and waits for an HTTP answer (POST
// /api/sessions/{id}/questions/{call}), on this server or any other on
// the same store, or for ctx to end.
func (a *Approvals) Input(ctx context.Context, req liteagent.InputRequest) (string, error) {
	r := req
	ans, err := a.wait(ctx, pendingKey{req.Session, req.CallID}, &waiting{question: &r})
	return ans.Text, err
}

// wait registers w (here, and in the mailbox if there is one), publishes
// it on the session's stream once it can be answered (so a stream opened
// in between finds it pending instead of missing it) and waits for its
// answer.
func (a *Approvals) wait(ctx context.Context, k pendingKey, w *waiting) (answer, error) {
	w.since, w.answer = time.Now().UTC(), make(chan answer, 1)
	a.mu.Lock()
	a.pending[k] = w
	box, watch, poll, log := a.box, a.watch, a.poll, a.log
	approval, question := a.approval, a.question
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.pending[k] == w {
			delete(a.pending, k)
		}
		a.mu.Unlock()
	}()
	kind, req := mailApproval, any(w.approval)
	if w.question != nil {
		kind, req = mailQuestion, w.question
	}
	if box != nil {
		data, _ := json.Marshal(req)
		if err := box.Post(ctx, k.session, k.call, kind, data); err != nil {
			// Answered here only, as without a mailbox.
			if log != nil {
				log("could not post a waiting call in the store's mailbox; only this server can answer it", "session", k.session, "call", k.call, "error", err)
			}
			box = nil
		} else {
			a.mu.Lock()
			a.posted[k.session] = true
			a.mu.Unlock()
		}
	}
	switch {
	case w.approval != nil && approval != nil:
		approval(*w.approval)
	case w.question != nil && question != nil:
		question(*w.question)
	}
	if box == nil {
		select {
		case ans := <-w.answer:
			return ans, nil
		case <-ctx.Done():
			return answer{}, ctx.Err()
		}
	}
	var changes <-chan struct{}
	if watch != nil {
		ch, stop := watch.Watch(k.session)
		defer stop()
		changes = ch
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case ans := <-w.answer:
			return ans, nil
		case <-ctx.Done():
			// Nobody waits any more: an answer now is refused (404).
			box.Unpost(context.WithoutCancel(ctx), k.session, k.call)
			return answer{}, ctx.Err()
		case <-changes:
		case <-tick.C:
			if watch != nil && watch.Listening() {
				continue
			}
		}
		if ans, ok := a.mailed(ctx, box, k); ok {
			return ans, nil
		}
	}
}

// mailed returns the answer to k found in the mailbox, if it has one.
func (a *Approvals) mailed(ctx context.Context, box checkpoint.Mailbox, k pendingKey) (answer, bool) {
	mail, err := box.Mail(ctx, k.session)
	if err != nil {
		return answer{}, false // the next word or tick reads again
	}
	for _, m := range mail {
		if m.Call == k.call && m.Answer != nil {
			var ans answer
			if json.Unmarshal(m.Answer, &ans) != nil {
				return answer{}, false
			}
			return ans, true
		}
	}
	return answer{}, false
}

// answer hands ans to what waits under k: a question when question is
// set, else an approval. With a mailbox the answer is stored there first,
// which takes exactly one answer per call from all the servers on the
// store. It returns errNoPending when nothing of that kind waits and
// errAnswered when the call has its answer already.
func (a *Approvals) answer(ctx context.Context, k pendingKey, question bool, ans answer) error {
	a.mu.Lock()
	box, store := a.box, a.store
	a.mu.Unlock()
	if box != nil {
		if l, ok := store.(checkpoint.Leaser); ok {
			// Entries a dead process left wait for nobody.
			if h, err := l.LeaseHolder(ctx, k.session); err != nil {
				return err
			} else if h == nil {
				return errNoPending
			}
		}
		kind := mailApproval
		if question {
			kind = mailQuestion
		}
		data, _ := json.Marshal(ans)
		err := box.Answer(ctx, k.session, k.call, kind, data)
		switch {
		case errors.Is(err, checkpoint.ErrNotFound):
			return errNoPending
		case errors.Is(err, checkpoint.ErrAnswered):
			return errAnswered
		case err != nil:
			return err
		}
		// Stored; a call waiting here takes it now rather than at its
		// next read of the mailbox.
		a.mu.Lock()
		if w, ok := a.pending[k]; ok {
			select {
			case w.answer <- ans:
			default:
			}
		}
		a.mu.Unlock()
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.pending[k]
	if !ok || (w.question != nil) != question {
		if a.answered[k] {
			return errAnswered
		}
		return errNoPending
	}
	delete(a.pending, k)
	a.answered[k] = true
	w.answer <- ans
	return nil
}

// turnEnded forgets session id's answers: a call of a turn that ended
// waits for nothing, and its answered entries go from the mailbox too.
// Unanswered ones are left: a call that stopped waiting took its own, and
// one may be a new turn's (of a background completion turn here, or of
// another process, once the lease went).
func (a *Approvals) turnEnded(id string) {
	a.mu.Lock()
	for k := range a.answered {
		if k.session == id {
			delete(a.answered, k)
		}
	}
	box, posted := a.box, a.posted[id]
	delete(a.posted, id)
	a.mu.Unlock()
	if box == nil || !posted {
		return // a turn that asked nothing costs no read of the mailbox
	}
	ctx := context.Background()
	mail, err := box.Mail(ctx, id)
	if err != nil {
		return // the next turn's end, or the session's delete, takes them
	}
	for _, m := range mail {
		a.mu.Lock()
		_, waits := a.pending[pendingKey{id, m.Call}]
		a.mu.Unlock()
		if !waits && m.Answer != nil {
			box.Unpost(ctx, id, m.Call)
		}
	}
}

// Pending lists what waits for an answer in session id in this process,
// oldest first. PendingIn lists what waits on every server of the store.
func (a *Approvals) Pending(id string) []Pending {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Pending
	for k, w := range a.pending {
		if k.session == id {
			out = append(out, Pending{Approval: w.approval, Question: w.question, Since: w.since})
		}
	}
	slices.SortFunc(out, func(x, y Pending) int { return x.Since.Compare(y.Since) })
	return out
}

// PendingIn lists what waits for an answer in session id on any server of
// the store, oldest first: the unanswered entries of its mailbox, while a
// process holds the session's lease (entries a dead process left are not
// waited for). Without a mailbox it is Pending.
func (a *Approvals) PendingIn(ctx context.Context, store checkpoint.Checkpointer, id string) ([]Pending, error) {
	if a == nil {
		return nil, nil
	}
	a.mu.Lock()
	box := a.box
	a.mu.Unlock()
	if box == nil {
		return a.Pending(id), nil
	}
	mail, err := box.Mail(ctx, id)
	if err != nil || len(mail) == 0 {
		return nil, err
	}
	if l, ok := store.(checkpoint.Leaser); ok {
		if h, err := l.LeaseHolder(ctx, id); err != nil || h == nil {
			return nil, err
		}
	}
	var out []Pending
	for _, m := range mail {
		if m.Answer != nil {
			continue
		}
		p := Pending{Since: m.Posted}
		switch m.Kind {
		case mailApproval:
			p.Approval = &liteagent.ApprovalRequest{}
			err = json.Unmarshal(m.Request, p.Approval)
		case mailQuestion:
			p.Question = &liteagent.InputRequest{}
			err = json.Unmarshal(m.Request, p.Question)
		default:
			continue
		}
		if err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
