package liteagent_test

import (
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/mcp"
)

// TestMCPEverythingListChanged: npm's server-everything registers its
// conditional tools once initialized and says so with
// notifications/tools/list_changed; the notification is received, the
// next turn lists the tools again, and the model is offered them as they
// are then (simulate-research-query is one the server adds that way).
func TestMCPEverythingListChanged(t *testing.T) {
	bin := mcptest.NPMServer(t, "mcp-server-everything")
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"mcp__everything__echo", "mcp__everything__simulate-research-query"}}, Text: "I see them."},
	)
	a := newAgent(t, p, liteagent.Options{MCPServers: []mcp.ServerConfig{{Name: "everything", Command: bin, Args: []string{"stdio"}}}})
	set, err := a.MCP(t.Context())
	if err != nil || set.Servers()[0].State != mcp.StateReady {
		t.Fatalf("server-everything: %v %+v", err, set.Servers())
	}
	deadline := time.Now().Add(15 * time.Second)
	for set.Servers()[0].ToolListChanges == 0 {
		if time.Now().After(deadline) {
			t.Fatal("server-everything sent no tools/list_changed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := set.Servers()[0].ToolListings
	if res, err := a.Send(t.Context(), "which tools do you have?"); err != nil || res.Text != "I see them." {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
	if after := set.Servers()[0].ToolListings; after <= before {
		t.Fatalf("the tools were not listed again after tools/list_changed (%d listings before the turn, %d after)", before, after)
	}
}
