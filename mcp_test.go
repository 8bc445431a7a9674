package liteagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/internal/mcptest"
	"github.com/lite-agent/lite-agent/mcp"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// approvals records the approval requests of a test and answers them.
type approvals struct {
	mu  sync.Mutex
	got []liteagent.ApprovalRequest
	d   liteagent.Decision
}

func (ap *approvals) approve(_ context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	ap.got = append(ap.got, r)
	return ap.d, nil
}

// testServer configures the project's own test server as server "t".
func testServer(t testing.TB, args ...string) []mcp.ServerConfig {
	return []mcp.ServerConfig{{Name: "t", Command: mcptest.Server(t), Args: args}}
}

// waitFor waits for a marker file the test server writes.
func waitFor(t testing.TB, path string) {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Errorf("%s never appeared", path)
}

// running reports whether pid is a process that is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && len(stat) > i+2 && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

func TestMCPToolCallIsApprovedAndRecorded(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{`"mcp__t__echo"`, `"mcp__t__slow"`, "Echoes text back"}}, ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__t__echo", map[string]string{"text": "ship it"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"echo: ship it"}}, ToolCalls: []fakemodel.ToolCall{call("c2", "mcp__t__fail", map[string]string{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c2"}, BodyContains: []string{"project FOO is archived"}}, Text: "done"},
	)
	store := memory.New()
	ap := &approvals{d: liteagent.AllowOnce}
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Approve: ap.approve, MCPServers: testServer(t)})
	res, err := a.Send(t.Context(), "echo it")
	if err != nil || res.Text != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
	// A read-only annotation does not skip approval; the request names the
	// server and carries the arguments.
	if len(ap.got) != 2 {
		t.Fatalf("approvals %+v", ap.got)
	}
	if r := ap.got[0]; r.Tool != "mcp__t__echo" || r.Server != "t" || r.Kind != tool.KindMCP || !r.ReadOnly || !strings.Contains(string(r.Input), "ship it") {
		t.Errorf("first approval %+v", r)
	}
	if r := ap.got[1]; r.Server != "t" || r.ReadOnly {
		t.Errorf("second approval %+v", r)
	}
	events, err := checkpoint.ReadAll(t.Context(), store, a.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, e := range events {
		switch e.Type {
		case session.TypeToolStarted:
			var s session.ToolStarted
			e.Decode(&s)
			trail = append(trail, "started "+s.Tool)
		case session.TypeToolFinished:
			var f session.ToolFinished
			e.Decode(&f)
			trail = append(trail, "finished "+f.Tool+" "+f.Output)
			if f.Tool == "mcp__t__fail" && !f.IsError {
				t.Error("the server's isError is not a tool error")
			}
		}
	}
	want := []string{"started mcp__t__echo", "finished mcp__t__echo echo: ship it", "started mcp__t__fail", "finished mcp__t__fail the ticket tracker refused: project FOO is archived"}
	if !slices.Equal(trail, want) {
		t.Errorf("log trail:\n got %q\nwant %q", trail, want)
	}
}

func TestMCPCancelledTurnCancelsTheCall(t *testing.T) {
	dir := t.TempDir()
	_, p := startModel(t, "anthropic", fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__t__slow", map[string]any{"seconds": 600})}})
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, MCPServers: testServer(t, "-dir", dir)})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { waitFor(t, filepath.Join(dir, "slow.started")); cancel() }()
	if _, err := a.Send(ctx, "deploy"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v", err)
	}
	waitFor(t, filepath.Join(dir, "slow.cancelled"))
	// slow is not read-only: manifests bracket it, the one after it taken
	// although the turn was cancelled, as for a shell command.
	want := "user_prompt assistant_message tool_started workspace_scanned workspace_changed tool_finished turn_interrupted"
	if got := strings.Join(types(t, store, a.SessionID()), " "); !strings.HasSuffix(got, want) {
		t.Fatalf("log:\n got %s\nwant %s", got, want)
	}
}

func TestMCPFailedServerLeavesAWorkingAgent(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{Text: "hello without tools"})
	a := newAgent(t, p, liteagent.Options{MCPServers: []mcp.ServerConfig{
		{Name: "exits", Command: mcptest.Server(t), Args: []string{"-mode", "exit"}},
		{Name: "garbage", Command: mcptest.Server(t), Args: []string{"-mode", "garbage"}},
	}})
	res, err := a.Send(t.Context(), "hi")
	if err != nil || res.Text != "hello without tools" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
	set, err := a.MCP(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	failed := set.Failed()
	if len(failed) != 2 || !strings.Contains(failed[0].Error(), "cannot open the config file") || !strings.Contains(failed[1].Error(), "not JSON-RPC") {
		t.Errorf("failed: %v", failed)
	}
}

func TestMCPListChangedBetweenTurns(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__t__add_tool", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}}, Text: "added"},
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{`"mcp__t__added"`}}, ToolCalls: []fakemodel.ToolCall{call("c2", "mcp__t__added", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c2"}, BodyContains: []string{"added: here"}}, Text: "used it"},
	)
	a := newAgent(t, p, liteagent.Options{MCPServers: testServer(t)})
	if _, err := a.Send(t.Context(), "add a tool"); err != nil {
		t.Fatal(err)
	}
	set, _ := a.MCP(t.Context())
	// The notification is asynchronous: wait until the server has sent it.
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(set.Servers()[0].Tools, "mcp__t__added") {
		if time.Now().After(deadline) {
			t.Fatal("the tool list did not change")
		}
		set.Tools(t.Context())
		time.Sleep(20 * time.Millisecond)
	}
	if res, err := a.Send(t.Context(), "use it"); err != nil || res.Text != "used it" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
}

// TestMCPListChangedWithinATurn: a tool call that makes the server change
// its tools (tools/list_changed) is followed, in the same turn, by a model
// call that offers the new tool, which the model can then call.
func TestMCPListChangedWithinATurn(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "mcp__t__add_tool", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, Tools: []string{"mcp__t__added"}}, ToolCalls: []fakemodel.ToolCall{call("c2", "mcp__t__added", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c2"}, BodyContains: []string{"added: here"}}, Text: "used it"},
	)
	a := newAgent(t, p, liteagent.Options{MCPServers: testServer(t)})
	if res, err := a.Send(t.Context(), "add a tool and use it"); err != nil || res.Text != "used it" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
}

func TestMCPCloseStopsServers(t *testing.T) {
	_, p := startModel(t, "anthropic")
	a, err := liteagent.New(&liteagent.Options{Provider: p, Workdir: t.TempDir(), DisableSessions: true, MCPServers: testServer(t, "-ignore-stdin")})
	if err != nil {
		t.Fatal(err)
	}
	set, err := a.MCP(t.Context())
	if err != nil || set.Servers()[0].State != mcp.StateReady {
		t.Fatalf("%v %+v", err, set.Servers())
	}
	pid := set.Servers()[0].PID
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Errorf("server pid %d survived Close", pid)
	}
}
