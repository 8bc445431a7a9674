package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrAnswered is wrapped by Mailbox.Answer when the call has its answer
// already: another process (or an earlier request) answered it first.
var ErrAnswered = errors.New("this call has been answered already")

// Mail is one entry of a session's mailbox: a call that waits, or waited,
// for an answer from outside the process running the turn.
type Mail struct {
	Session string
	Call    string    // the tool call's id
	Kind    string    // what waits, in the caller's words (the server's: "approval", "question")
	Request []byte    // what the waiting process posted; its encoding is the caller's
	Answer  []byte    // nil while the call waits
	Posted  time.Time // when Post stored it, UTC
}

// Mailbox is an optional ability of a Checkpointer: a small mailbox per
// session, kept in the store beside its log, in which the process running a
// turn posts the calls that wait for a person (approvals, questions) and any
// process on the same store answers them. It is what lets several server
// processes on one database answer each other's turns.
//
// Entries belong to their session: Delete removes them with the log. They
// are not events: the log records the decision itself, through the turn.
//
// A store without it has no mailbox; the documented fallback is that calls
// are answered only in the process running the turn.
//
// Every method is safe for concurrent use, from any number of processes.
// Returned Mail is the caller's.
type Mailbox interface {
	// Post records that call of session id waits for an answer of kind,
	// with request. An entry of the same call is replaced, its answer
	// dropped. The error wraps ErrNotFound when the session does not exist.
	Post(ctx context.Context, id, call, kind string, request []byte) error
	// Answer stores answer for call of session id, if an entry of kind
	// waits there without one. Of concurrent Answers to one call, from any
	// processes, exactly one succeeds. The error wraps ErrNotFound when no
	// such entry waits (none, or of another kind) and ErrAnswered when it
	// has its answer already.
	Answer(ctx context.Context, id, call, kind string, answer []byte) error
	// Mail returns session id's entries, oldest first: none (and no error)
	// for a session without any, or one that does not exist.
	Mail(ctx context.Context, id string) ([]Mail, error)
	// Unpost removes call's entry of session id, or all of its entries
	// when call is "". Removing nothing is not an error.
	Unpost(ctx context.Context, id, call string) error
	// Mailboxes returns the ids of the sessions that have entries, sorted;
	// one whose session is gone was left over (a doctor reports it).
	Mailboxes(ctx context.Context) ([]string, error)
}

// CheckMail validates the arguments of Post and Answer.
func CheckMail(id, call, kind string) error {
	switch {
	case id == "" || call == "" || kind == "":
		return fmt.Errorf("mailbox: %w: give a session id, a call id and a kind", ErrInvalid)
	case len(id) > 512 || len(call) > 512 || len(kind) > 64:
		return fmt.Errorf("mailbox: %w: the session id or call id is over 512 bytes, or the kind over 64", ErrInvalid)
	}
	return nil
}
