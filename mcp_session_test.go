package liteagent_test

import (
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/mcp"
)

// TestMCPServerPerSession: a server configured PerSession runs once per
// Session of an Agent: two sessions get two processes, a tool one
// session's server adds is not the other's, closing a session stops its
// server and leaves the other's running, and closing the agent stops the
// rest. A shared server is one process for every session.
func TestMCPServerPerSession(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__own__add_tool", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, Tools: []string{"mcp__own__added"}}, Text: "A added a tool"},
		fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"mcp__own__add_tool", "mcp__shared__echo"}}, Text: "B answered"},
	)
	servers := append(testServer(t), mcp.ServerConfig{Name: "own", Command: testServer(t)[0].Command, PerSession: true})
	servers[0].Name = "shared"
	a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "m", Workdir: t.TempDir(), Checkpointer: memory.New(), MCPServers: servers,
		Approve: (&approvals{d: liteagent.AllowOnce}).approve})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sa, err := a.NewSession(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.NewSession(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := func(s *liteagent.Session) int {
		t.Helper()
		set, err := s.MCP(t.Context())
		if err != nil || set == nil || len(set.Servers()) != 1 || set.Servers()[0].Name != "own" || set.Servers()[0].State != mcp.StateReady {
			t.Fatalf("the session's own servers: %v %+v", err, set)
		}
		return set.Servers()[0].PID
	}
	pa, pb := pid(sa), pid(sb)
	if pa == pb || !running(pa) || !running(pb) {
		t.Fatalf("two sessions share the per-session server (pids %d, %d)", pa, pb)
	}
	shared, _ := a.MCP(t.Context())
	if len(shared.Servers()) != 1 || shared.Servers()[0].Name != "shared" {
		t.Fatalf("the agent's shared servers: %+v", shared.Servers())
	}

	if res, err := sa.Send(t.Context(), "add a tool", nil); err != nil || res.Text != "A added a tool" {
		t.Fatalf("session A: %+v %v", res, err)
	}
	if res, err := sb.Send(t.Context(), "what do you have?", nil); err != nil || res.Text != "B answered" {
		t.Fatalf("session B: %+v %v", res, err)
	}
	checkServer(t, srv)
	reqs := srv.Requests()
	if b := string(reqs[len(reqs)-1].Body); strings.Contains(b, "mcp__own__added") {
		t.Fatal("session B is offered the tool session A's server added")
	}

	if err := sa.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pa) || !running(pb) {
		t.Fatalf("after session A's Close: A's server running %v (want false), B's %v (want true)", running(pa), running(pb))
	}
	sharedPID := shared.Servers()[0].PID
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pb) || running(sharedPID) {
		t.Fatalf("after the agent's Close: B's server running %v, the shared one %v", running(pb), running(sharedPID))
	}
}
