package liteagent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Errors callers branch on.
var (
	// ErrSessionsDisabled: a persistent session method was called on an
	// agent created with DisableSessions.
	ErrSessionsDisabled = errors.New("sessions are disabled for this agent (Options.DisableSessions); create it with a checkpointer to list, resume, fork or restore sessions")
	// ErrClosed: the agent was closed.
	ErrClosed = errors.New("agent closed")
	// ErrNoProvider: Send was called on an agent without a model provider.
	ErrNoProvider = errors.New("no model provider configured (Options.Provider)")
	// ErrModelCallLimit: a Send used up Options.MaxModelCalls.
	ErrModelCallLimit = errors.New("the turn reached the limit of model calls per prompt")
	// ErrSessionClosed: a method was called on a closed Session.
	ErrSessionClosed = errors.New("session closed")
	// ErrNoSession: the agent has no current session yet.
	ErrNoSession = errors.New("no current session: send a prompt or resume a session first")
)

// HazardError is returned by Send when the session has tool calls that
// were cut off while running (the process died): their outcome is unknown.
// Review them (Agent.SessionInfo, Session.Hazards) and call Acknowledge
// with their tokens before sending again. Nothing is replayed.
type HazardError struct {
	Session string
	Hazards []session.Hazard
}

func (e *HazardError) Error() string {
	var calls []string
	for _, h := range e.Hazards {
		calls = append(calls, fmt.Sprintf("%s %s (token %s)", h.Tool, h.CallID, h.Token))
	}
	return fmt.Sprintf("session %s has %d interrupted tool call(s) whose outcome is unknown: %s; they are never re-run automatically, and the session goes on once each token is acknowledged after review",
		e.Session, len(e.Hazards), strings.Join(calls, ", "))
}

// LookupError is returned when a session handle matches no session or
// several sessions.
type LookupError struct {
	Handle     string
	Candidates []string // ids that share the prefix, when ambiguous
}

func (e *LookupError) Error() string {
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("no session matches %q in this namespace", e.Handle)
	}
	return fmt.Sprintf("%q matches %d sessions (%s); give more of the id", e.Handle, len(e.Candidates), strings.Join(e.Candidates, ", "))
}

// AppendError is returned when a turn could not append to its session's
// log; the turn stopped there, and the log holds everything before it. Err
// is the store's error: a *checkpoint.ConflictError when another agent or
// process wrote the session at the same time (reopen the session to go on
// from what it wrote).
type AppendError struct {
	Session string
	Err     error
	// Holder is the process running a turn in the session when the append
	// failed (see checkpoint.Leaser), nil if none or the store cannot tell.
	Holder *checkpoint.Holder
}

func (e *AppendError) Error() string {
	if checkpoint.IsConflict(e.Err) {
		who := "another agent or process"
		if e.Holder != nil {
			who = e.Holder.String()
		}
		return fmt.Sprintf("session %s was written by %s at the same time; the turn stopped to keep the log whole: %v", e.Session, who, e.Err)
	}
	return fmt.Sprintf("append to session %s: %v", e.Session, e.Err)
}

func (e *AppendError) Unwrap() error { return e.Err }
