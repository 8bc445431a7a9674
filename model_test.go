package liteagent_test

import (
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// TestSetModelIsRecordedAndResumed: a model chosen before the first prompt
// and another chosen later are what the requests ask for, are in the log,
// and a session opened by another agent goes on with the latest.
func TestSetModelIsRecordedAndResumed(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Expect: &fakemodel.Expect{Model: "model-a"}, Text: "one"},
				fakemodel.Reply{Expect: &fakemodel.Expect{Model: "model-b"}, Text: "two"},
				fakemodel.Reply{Expect: &fakemodel.Expect{Model: "model-b"}, Text: "three"},
			)
			store, dir := memory.New(), t.TempDir()
			a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			s, err := a.NewSession(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if s.Model() != "test-model" {
				t.Fatalf("a new session's model is %q, want the agent's", s.Model())
			}
			if err := s.SetModel(t.Context(), "model-a"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(t.Context(), "first", nil); err != nil {
				t.Fatal(err)
			}
			if err := s.SetModel(t.Context(), "model-b"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(t.Context(), "second", nil); err != nil {
				t.Fatal(err)
			}
			id := s.ID()
			a.Close()

			var changes []session.ModelChanged
			for e, err := range store.Read(t.Context(), id, 1) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Type == session.TypeModelChanged {
					var mc session.ModelChanged
					if err := e.Decode(&mc); err != nil {
						t.Fatal(err)
					}
					changes = append(changes, mc)
				}
			}
			want := []session.ModelChanged{{Model: "model-a", From: "test-model", Provider: kind}, {Model: "model-b", From: "model-a", Provider: kind}}
			if len(changes) != 2 || changes[0] != want[0] || changes[1] != want[1] {
				t.Fatalf("model_changed events %+v, want %+v", changes, want)
			}

			b := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			s2, err := b.OpenSession(t.Context(), id, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s2.Model() != "model-b" {
				t.Fatalf("resumed session's model %q, want model-b", s2.Model())
			}
			if _, err := s2.Send(t.Context(), "third", nil); err != nil {
				t.Fatal(err)
			}
			checkServer(t, srv)
		})
	}
}

// TestSetModelBadNames: a name that cannot be a model is refused, and the
// session keeps its model.
func TestSetModelBadNames(t *testing.T) {
	_, p := startModel(t, "anthropic")
	a := newAgent(t, p, liteagent.Options{})
	s, err := a.NewSession(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "two words", "bad\x1b[2J", strings.Repeat("m", 201)} {
		if err := s.SetModel(t.Context(), name); err == nil || !strings.HasPrefix(err.Error(), "set model: ") {
			t.Errorf("SetModel(%q) = %v, want a set model error", name, err)
		}
	}
	if s.Model() != "test-model" {
		t.Errorf("model after bad names: %q", s.Model())
	}
}

// TestModelOfAnotherProviderIsNotResumed: a switch recorded for one
// provider does not carry to a run with another, whose names differ.
func TestModelOfAnotherProviderIsNotResumed(t *testing.T) {
	_, pa := startModel(t, "anthropic", fakemodel.Reply{Text: "one"})
	_, po := startModel(t, "openai")
	store, dir := memory.New(), t.TempDir()
	a := newAgent(t, pa, liteagent.Options{Checkpointer: store, Workdir: dir})
	s, err := a.NewSession(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetModel(t.Context(), "claude-opus-4-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(t.Context(), "hi", nil); err != nil {
		t.Fatal(err)
	}
	b := newAgent(t, po, liteagent.Options{Checkpointer: store, Workdir: dir})
	s2, err := b.OpenSession(t.Context(), s.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Model() != "test-model" {
		t.Errorf("opened with openai, the model is %q; want the agent's (the recorded one is anthropic's)", s2.Model())
	}
}
