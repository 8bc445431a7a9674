package liteagent

import (
	"context"
	"fmt"

	"github.com/lite-agent/lite-agent/models"
	"github.com/lite-agent/lite-agent/session"
)

// Model returns the model the session's turns ask for: the one it was
// switched to with SetModel (in this run, or recorded in its log by an
// earlier run with the same provider), else the agent's Options.Model.
func (s *Session) Model() string {
	s.mu.Lock()
	pending, chosen := s.pendingModel, s.state.Model()
	s.mu.Unlock()
	switch {
	case pending != "":
		return pending
	case chosen.Model != "" && (chosen.Provider == "" || chosen.Provider == providerName(s.a)):
		return chosen.Model
	}
	return s.a.opts.Model
}

// SetModel switches the session to model for its later turns (and their
// context window and title requests). The switch is recorded in the log
// as a model_changed event, so a resumed session goes on with it; a
// session whose log does not exist yet records it with its first prompt.
// The name is sent as given (the models package knows windows and prices
// of some, not which names a server takes). SetModel waits for a running
// turn to end; ctx ends the wait.
func (s *Session) SetModel(ctx context.Context, model string) error {
	if err := session.CheckModelName(model); err != nil {
		return fmt.Errorf("set model: %w", err)
	}
	ctx, release, err := s.beginTurn(ctx)
	if err != nil {
		return err
	}
	defer release()
	from := s.Model()
	if from == model {
		return nil
	}
	if s.Head() == 0 {
		s.mu.Lock()
		s.pendingModel = model
		s.mu.Unlock()
		return nil
	}
	return s.append(ctx, mustEvent(session.TypeModelChanged, session.ModelChanged{Model: model, From: from, Provider: providerName(s.a)}))
}

// firstEvents returns the events that open a session's log: its
// session_started, and a model_changed when SetModel was called before
// the log existed. Called with s.mu held.
func (s *Session) firstEvents(id string) []session.Event {
	start := mustEvent(session.TypeSessionStarted, session.SessionStarted{
		ID: id, Namespace: s.namespace, Workdir: s.root.Dir(),
		Provider: providerName(s.a), Model: s.a.opts.Model,
	})
	if s.pendingModel == "" {
		return []session.Event{start}
	}
	return []session.Event{start, mustEvent(session.TypeModelChanged, session.ModelChanged{Model: s.pendingModel, From: s.a.opts.Model, Provider: providerName(s.a)})}
}

// Models returns the table of known models the agent uses for context
// windows and prices (the built-in one with Options.Models over it), a
// copy the caller may change.
func (a *Agent) Models() models.Table { return a.models.With(nil) }

// SetModel switches the current session (a new one when there is none)
// to model; see Session.SetModel.
func (a *Agent) SetModel(ctx context.Context, model string) error {
	s, err := a.current(true)
	if err != nil {
		return err
	}
	return s.SetModel(ctx, model)
}

// SessionModel returns the model the current session's turns ask for
// (see Session.Model), or Options.Model when there is no current session.
func (a *Agent) SessionModel() string {
	if s, _ := a.current(false); s != nil {
		return s.Model()
	}
	return a.opts.Model
}
