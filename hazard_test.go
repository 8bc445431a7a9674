package liteagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// crashedSession writes the log a process leaves when it dies after the
// model asked for a tool: with started, the tool had begun (a hazard);
// without, it was waiting for approval.
func crashedSession(t testing.TB, store checkpoint.Checkpointer, ns string, started bool) string {
	t.Helper()
	id := liteagent.NewSessionID()
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "run the build"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{
			{Type: session.BlockToolUse, ID: "c9", Name: "write", Input: json.RawMessage(`{"path":"out.txt","content":"built"}`)},
		}}),
	}
	if started {
		events = append(events, session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c9", Tool: "write", Paths: []string{"out.txt"}}))
	}
	if _, err := store.Append(context.Background(), id, 0, events); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestHazardRefusedUntilAcknowledged(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{
		Expect: &fakemodel.Expect{ToolResultFor: []string{"c9"}, BodyContains: []string{"outcome of this tool call is unknown"}, LastUserContains: []string{"go on"}},
		Text:   "checked",
	})
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	id := crashedSession(t, store, a.Namespace(), true)
	if err := a.Resume(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	hz := a.Hazards()
	if len(hz) != 1 || hz[0].CallID != "c9" || hz[0].Paths[0] != "out.txt" {
		t.Fatalf("hazards %+v", hz)
	}
	_, err := a.Send(t.Context(), "go on")
	var he *liteagent.HazardError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "acknowledged") || strings.Contains(err.Error(), "--") {
		t.Fatalf("Send with a hazard = %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the model was contacted %d times before the hazard was acknowledged", n)
	}
	if err := a.Acknowledge(t.Context(), "rv-wrong"); err == nil {
		t.Fatal("an unknown token was accepted")
	}
	if err := a.Acknowledge(t.Context(), hz[0].Token); err != nil {
		t.Fatal(err)
	}
	res, err := a.Send(t.Context(), "go on")
	if err != nil || res.Text != "checked" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
	// The tool was never re-run: no second tool_started for c9.
	n := 0
	for _, ty := range types(t, store, id) {
		if ty == string(session.TypeToolStarted) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d tool_started events: the interrupted tool was replayed", n)
	}
}

func TestPendingApprovalAskedAgainOnResume(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{
		Expect: &fakemodel.Expect{ToolResultFor: []string{"c9"}, LastUserContains: []string{"continue"}},
		Text:   "built",
	})
	store := memory.New()
	var asked []string
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
		asked = append(asked, r.CallID)
		return liteagent.AllowOnce, nil
	}})
	id := crashedSession(t, store, a.Namespace(), false)
	if err := a.Resume(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(t.Context(), "continue"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "c9" {
		t.Fatalf("approvals asked: %v", asked)
	}
	checkServer(t, srv)
}
