package liteagent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/permission"
	"github.com/lite-agent/lite-agent/session"
)

// decisions returns the permission_decided events of a session's log.
func decisions(t testing.TB, c checkpoint.Checkpointer, id string) []session.PermissionDecided {
	t.Helper()
	events, err := checkpoint.ReadAll(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.PermissionDecided
	for _, e := range events {
		if e.Type == session.TypePermissionDecided {
			var d session.PermissionDecided
			if err := e.Decode(&d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

func TestPermissionRulesDecideAndAreLogged(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
			call("c1", "write", map[string]string{"path": "docs/a.md", "content": "x"}),
			call("c2", "bash", map[string]string{"command": "echo hi && rm -rf docs"}),
			call("c3", "read", map[string]string{"path": "secrets/key"}),
			call("c4", "write", map[string]string{"path": "main.go", "content": "package main"}),
			call("c5", "bash", map[string]string{"command": "echo asked"}),
		}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1", "c2", "c3", "c4", "c5"}, BodyContains: []string{"never delete trees", "A permission rule denied this call: deny rule read(secrets/**) (project)", "not today"}}, Text: "done"},
	)
	rules, err := permission.New([]permission.Rule{
		{Effect: permission.Allow, Pattern: "write(docs/**)", Source: "user"},
		{Effect: permission.Allow, Pattern: "bash(echo *)", Source: "user"},
		{Effect: permission.Deny, Pattern: "bash(rm -rf *)", Reason: "never delete trees", Source: "project"},
		{Effect: permission.Deny, Pattern: "read(secrets/**)", Source: "project"},
		{Effect: permission.Ask, Pattern: "bash(echo asked)", Source: "project"},
	})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	var mu sync.Mutex
	var asked []string
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Permissions: rules,
		Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
			mu.Lock()
			asked = append(asked, r.CallID)
			mu.Unlock()
			if r.CallID == "c4" {
				return liteagent.AllowSession, nil // does not lift the ask rule on c5
			}
			return liteagent.Deny, &liteagent.DeniedError{Reason: "not today"}
		}})
	os.MkdirAll(filepath.Join(a.Workdir(), "docs"), 0o755)
	res, err := a.Send(t.Context(), "go")
	if err != nil || res.Text != "done" {
		t.Fatalf("%+v %v", res, err)
	}
	checkServer(t, srv)
	if len(asked) != 2 || asked[0] != "c4" || asked[1] != "c5" {
		t.Fatalf("asked about %v, want c4 (no rule) and c5 (an ask rule)", asked)
	}
	if _, err := os.Stat(filepath.Join(a.Workdir(), "docs", "a.md")); err != nil {
		t.Fatalf("the allowed write did not happen: %v", err)
	}
	got := decisions(t, store, a.SessionID())
	want := []session.PermissionDecided{
		{CallID: "c1", Tool: "write", Effect: "allow", Rule: "write(docs/**)", Source: "user"},
		{CallID: "c2", Tool: "bash", Effect: "deny", Rule: "bash(rm -rf *)", Source: "project", Reason: "never delete trees"},
		{CallID: "c3", Tool: "read", Effect: "deny", Rule: "read(secrets/**)", Source: "project"},
		{CallID: "c5", Tool: "bash", Effect: "ask", Rule: "bash(echo asked)", Source: "project"},
	}
	if len(got) != len(want) {
		t.Fatalf("decisions %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("decision %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAskRuleWithoutApproverDenies(t *testing.T) {
	srv, p := startModel(t, "openai",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "x.txt", "content": "x"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"no one can approve it"}}, Text: "ok"},
	)
	rules, _ := permission.New([]permission.Rule{{Effect: permission.Ask, Pattern: "write"}})
	a := newAgent(t, p, liteagent.Options{Permissions: rules})
	if _, err := a.Send(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	checkServer(t, srv)
	if _, err := os.Stat(filepath.Join(a.Workdir(), "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("an ask rule with nobody to ask let the write happen")
	}
}
