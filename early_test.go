package liteagent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// slowPrompt is a store whose armed Append (the next one) waits until the
// fake model has been asked and has had time to stream its whole answer,
// then fails with fail or, when fail is nil, is made.
type slowPrompt struct {
	checkpoint.Checkpointer
	model *fakemodel.Server

	mu    sync.Mutex
	armed bool
	fail  error
	asked int // the model's requests when the append was held
}

var errPromptAppend = errors.New("the disk is full")

func (s *slowPrompt) arm(fail error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.fail = true, fail
}

func (s *slowPrompt) Append(ctx context.Context, id string, expected int64, events []session.Event) (int64, error) {
	s.mu.Lock()
	armed, fail := s.armed, s.fail
	s.armed = false
	s.mu.Unlock()
	if armed {
		before := len(s.model.Requests())
		deadline := time.Now().Add(10 * time.Second)
		for len(s.model.Requests()) == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the answer streams meanwhile
		s.mu.Lock()
		s.asked = len(s.model.Requests()) - before
		s.mu.Unlock()
		if fail != nil {
			return 0, fail
		}
	}
	return s.Checkpointer.Append(ctx, id, expected, events)
}

// TestEarlyModelCallWaitsForThePrompt holds the prompt's append of a
// turn until the model, asked meanwhile, has streamed its answer: nothing
// of it is shown before the prompt is in the log, and when the append
// fails nothing of it is shown at all, the log is as before the turn and
// the next turn runs as if the failed one had never been sent.
func TestEarlyModelCallWaitsForThePrompt(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Text: "one"},
				fakemodel.Reply{Text: "an answer to a prompt that was never stored"},
				fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"third"}, BodyContains: []string{"first", "one"}}, Text: "three"},
			)
			store := &slowPrompt{Checkpointer: memory.New(), model: srv}
			a := newAgent(t, p, liteagent.Options{Checkpointer: store})
			s, err := a.NewSession(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()

			// A slow append that is made: the prompt's event comes before
			// the first delta.
			var updates []liteagent.Update
			record := &liteagent.SendOptions{OnUpdate: func(u liteagent.Update) { updates = append(updates, u) }}
			store.arm(nil)
			res, err := s.Send(t.Context(), "first", record)
			if err != nil || res.Text != "one" {
				t.Fatalf("Send: %+v, %v", res, err)
			}
			if store.asked != 1 {
				t.Fatalf("the model was asked %d times while the prompt was appended, want 1 (the early call)", store.asked)
			}
			prompt := slices.IndexFunc(updates, func(u liteagent.Update) bool { return u.Event != nil && u.Event.Type == session.TypeUserPrompt })
			delta := slices.IndexFunc(updates, func(u liteagent.Update) bool { return u.Delta != nil })
			if prompt < 0 || delta < 0 || delta < prompt {
				t.Fatalf("updates: the prompt's event at %d, the first delta at %d: the delta came first", prompt, delta)
			}

			// A failed append: nothing from the model, the log unchanged.
			before := types(t, store, s.ID())
			head := s.Head()
			updates = nil
			store.arm(errPromptAppend)
			if _, err := s.Send(t.Context(), "a prompt lost to the disk", record); !errors.Is(err, errPromptAppend) {
				t.Fatalf("Send: %v, want the append's error", err)
			}
			if store.asked != 1 {
				t.Fatalf("the model was asked %d times while the prompt was appended, want 1", store.asked)
			}
			for _, u := range updates {
				if u.Delta != nil || u.Event != nil {
					t.Fatalf("after a failed prompt append the turn showed %+v", u)
				}
			}
			if got := types(t, store, s.ID()); !slices.Equal(got, before) || s.Head() != head {
				t.Fatalf("log after the failed append: %v (head %d), want %v (head %d)", got, s.Head(), before, head)
			}

			res, err = s.Send(t.Context(), "third", nil)
			if err != nil || res.Text != "three" {
				t.Fatalf("Send after the failure: %+v, %v", res, err)
			}
			reqs := srv.Requests()
			if last := string(reqs[len(reqs)-1].Body); strings.Contains(last, "lost to the disk") || strings.Contains(last, "never stored") {
				t.Fatalf("the next turn's request carries the failed turn: %s", last)
			}
			checkServer(t, srv)
		})
	}
}
