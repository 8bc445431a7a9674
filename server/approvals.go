package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
)

// Approvals holds the tool calls waiting for approval and the questions
// waiting for an answer, so that HTTP requests can answer them. Build the
// agent with its methods, then hand it to New:
//
//	ap := server.NewApprovals()
//	agent, _ := liteagent.New(&liteagent.Options{Approve: ap.Approve, Input: ap.Input, …})
//	srv, _ := server.New(agent, &server.Options{Approvals: ap, Store: store})
//
// A call waits until it is answered or its turn is cancelled. Safe for
// concurrent use.
type Approvals struct {
	mu       sync.Mutex
	pending  map[pendingKey]*waiting
	question func(liteagent.InputRequest) // the server's: publish a question on the session's stream
}

type pendingKey struct{ session, call string }

// waiting is one call or question waiting for its answer.
type waiting struct {
	approval *liteagent.ApprovalRequest
	question *liteagent.InputRequest
	since    time.Time
	answer   chan answer // buffered, 1
}

type answer struct {
	decision liteagent.Decision
	reason   string // a denial's reason, told to the model
	text     string // a question's answer
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

// NewApprovals returns an empty Approvals.
func NewApprovals() *Approvals {
	return &Approvals{pending: map[pendingKey]*waiting{}}
}

func (a *Approvals) attach(question func(liteagent.InputRequest)) {
	a.mu.Lock()
	a.question = question
	a.mu.Unlock()
}

// Approve is a liteagent.ApprovalFunc: it waits for an HTTP answer to the
// call (POST /api/sessions/{id}/approvals/{call}) or for ctx to end.
func (a *Approvals) Approve(ctx context.Context, req liteagent.ApprovalRequest) (liteagent.Decision, error) {
	r := req
	ans, err := a.wait(ctx, pendingKey{req.Session, req.CallID}, &waiting{approval: &r})
	if err != nil {
		return liteagent.Deny, err
	}
	if ans.decision == liteagent.Deny && ans.reason != "" {
		return liteagent.Deny, &liteagent.DeniedError{Reason: ans.reason}
	}
	return ans.decision, nil
}

// Input is a liteagent.InputFunc: it publishes the question on the
// session's stream and waits for an HTTP answer (POST
// /api/sessions/{id}/questions/{call}) or for ctx to end.
func (a *Approvals) Input(ctx context.Context, req liteagent.InputRequest) (string, error) {
	r := req
	a.mu.Lock()
	publish := a.question
	a.mu.Unlock()
	ans, err := a.wait(ctx, pendingKey{req.Session, req.CallID}, &waiting{question: &r}, func() {
		if publish != nil {
			publish(r)
		}
	})
	return ans.text, err
}

// wait registers w, runs then (once it can be answered) and waits.
func (a *Approvals) wait(ctx context.Context, k pendingKey, w *waiting, then ...func()) (answer, error) {
	w.since, w.answer = time.Now().UTC(), make(chan answer, 1)
	a.mu.Lock()
	a.pending[k] = w
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.pending[k] == w {
			delete(a.pending, k)
		}
		a.mu.Unlock()
	}()
	for _, f := range then {
		f()
	}
	select {
	case ans := <-w.answer:
		return ans, nil
	case <-ctx.Done():
		return answer{}, ctx.Err()
	}
}

// answer hands ans to what waits under k: a question when question is
// set, else an approval. It returns errNoPending when nothing of that kind
// waits.
func (a *Approvals) answer(k pendingKey, question bool, ans answer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.pending[k]
	if !ok || (w.question != nil) != question {
		return errNoPending
	}
	delete(a.pending, k)
	w.answer <- ans
	return nil
}

// Pending lists what waits for an answer in session id, oldest first.
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
