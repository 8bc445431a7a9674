package liteagent_test

import (
	"context"
	"errors"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func TestAskUserGoesToTheInputHandler(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"ask_user"}},
			ToolCalls: []fakemodel.ToolCall{call("q1", "ask_user", map[string]any{"question": "Which file?", "choices": []string{"a.go", "b.go"}})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"q1"}, BodyContains: []string{"b.go please"}}, Text: "Editing b.go."},
	)
	var asked []liteagent.InputRequest
	a := newAgent(t, p, liteagent.Options{Input: func(ctx context.Context, r liteagent.InputRequest) (string, error) {
		asked = append(asked, r)
		return "b.go please", nil
	}})
	res, err := a.Send(t.Context(), "fix it")
	if err != nil || res.Text != "Editing b.go." {
		t.Fatalf("%+v %v", res, err)
	}
	if len(asked) != 1 || asked[0].Question != "Which file?" || len(asked[0].Choices) != 2 || asked[0].CallID != "q1" {
		t.Fatalf("input requests %+v", asked)
	}
	checkServer(t, srv)
}

func TestAskUserDismissedOnCancel(t *testing.T) {
	_, p := startModel(t, "anthropic", fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("q1", "ask_user", map[string]any{"question": "Well?"})}})
	waiting := make(chan struct{})
	a := newAgent(t, p, liteagent.Options{Input: func(ctx context.Context, r liteagent.InputRequest) (string, error) {
		close(waiting)
		<-ctx.Done() // a UI would take its prompt down here
		return "", ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-waiting; cancel() }()
	if _, err := a.Send(ctx, "ask me"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v", err)
	}
	if hz := a.Hazards(); len(hz) != 0 {
		t.Fatalf("a dismissed question left a hazard: %+v", hz)
	}
}

func TestNoAskUserWithoutInputHandler(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"ask_user"}}, Text: "x"})
	a := newAgent(t, p, liteagent.Options{})
	if _, err := a.Send(t.Context(), "hi"); err == nil {
		t.Fatal("the model was offered ask_user without an input handler")
	}
	if len(srv.Failures()) != 1 {
		t.Fatalf("failures %v", srv.Failures())
	}
}
