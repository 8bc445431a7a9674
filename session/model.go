package session

import (
	"fmt"
	"strings"
	"unicode"
)

// TypeModelChanged records that the user switched the session to another
// model (the command line's /model NAME). Later turns ask for Model; a
// resumed session goes on with it when the run's provider is Provider.
const TypeModelChanged Type = "model_changed"

// ModelChanged is the payload of model_changed.
type ModelChanged struct {
	Model string `json:"model"`          // the model turns ask for from now on
	From  string `json:"from,omitempty"` // the model the session used before
	// Provider is the provider the name belongs to ("anthropic", "openai").
	Provider string `json:"provider,omitempty"`
}

// CheckModelName reports what is wrong with a model name a user typed, nil
// when it can be sent: not empty, at most 200 characters, no spaces or
// control characters.
func CheckModelName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("no model name given")
	case len(name) > 200:
		return fmt.Errorf("model name of %d bytes: a model name is at most 200", len(name))
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("model name %q holds spaces or control characters", name)
	}
	return nil
}

// Model returns the log's latest model_changed: the model the user
// switched the session to, with its provider; zero when never switched.
func (s *State) Model() ModelChanged { return s.model }

func (s *State) applyModel(e Event) {
	var p ModelChanged
	if e.Decode(&p) == nil && p.Model != "" {
		s.model = p
	}
}
