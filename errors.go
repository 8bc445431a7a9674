package liteagent

import (
	"errors"
	"fmt"
	"strings"

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
	// ErrNoSession: the agent has no current session yet.
	ErrNoSession = errors.New("no current session: send a prompt or resume a session first")
)

// HazardError is returned by Send when the current session has tool calls
// that were cut off while running (the process died): their outcome is
// unknown. Review them (SessionInfo, or `lite-agent --recovery-info`) and call
// Acknowledge with their tokens before sending again. Nothing is replayed.
type HazardError struct {
	Session string
	Hazards []session.Hazard
}

func (e *HazardError) Error() string {
	var calls []string
	for _, h := range e.Hazards {
		calls = append(calls, fmt.Sprintf("%s %s (token %s)", h.Tool, h.CallID, h.Token))
	}
	return fmt.Sprintf("session %s has %d interrupted tool call(s) whose outcome is unknown: %s; review them with --recovery-info %s and acknowledge each token before continuing (tools are never re-run automatically)",
		e.Session, len(e.Hazards), strings.Join(calls, ", "), e.Session)
}

// LookupError is returned when a session handle matches no session or
// several sessions.
type LookupError struct {
	Handle     string
	Candidates []string // ids that share the prefix, when ambiguous
}

func (e *LookupError) Error() string {
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("no session matches %q in this workspace; list them with --sessions", e.Handle)
	}
	return fmt.Sprintf("%q matches %d sessions (%s); give more of the id", e.Handle, len(e.Candidates), strings.Join(e.Candidates, ", "))
}
