package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/session"
)

// TestThinkingSentBackDuringToolUse: with a thinking budget the response
// keeps its thinking block with the signature, and sending the transcript
// back passes the API's check that the tool use's thinking comes back
// unchanged.
func TestThinkingSentBackDuringToolUse(t *testing.T) {
	srv := start(t, `{"replies": [
		{"thinking": "The file is small; read it.", "tool_calls": [{"id": "toolu_1", "name": "read", "input": {"path": "a"}}]},
		{"text": "It says A."}
	]}`)
	p := newProvider(t, srv, 0)
	req := prompt("what is in a?")
	req.ThinkingBudget = 2048
	resp, deltas, err := collect(t, t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Blocks) != 2 || resp.Blocks[0].Type != session.BlockThinking || resp.Blocks[0].Text != "The file is small; read it." || resp.Blocks[0].Signature == "" {
		t.Fatalf("blocks %+v; want the thinking with its signature, then the call", resp.Blocks)
	}
	var thought strings.Builder
	for _, d := range deltas {
		if d.Kind == provider.DeltaThinking {
			thought.WriteString(d.Text)
		}
	}
	if thought.String() != resp.Blocks[0].Text {
		t.Fatalf("thinking deltas %q", thought.String())
	}
	req.Messages = append(req.Messages,
		session.Message{Role: session.RoleAssistant, Blocks: resp.Blocks},
		session.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "toolu_1", Text: "A"}}})
	if _, _, err := collect(t, t.Context(), p, req); err != nil {
		t.Fatalf("second request: %v (server: %v)", err, srv.Err())
	}
	var body struct {
		MaxTokens int `json:"max_tokens"`
		Thinking  struct {
			Type   string `json:"type"`
			Budget int    `json:"budget_tokens"`
		} `json:"thinking"`
	}
	json.Unmarshal(srv.Requests()[1].Body, &body)
	if body.Thinking.Type != "enabled" || body.Thinking.Budget != 2048 || body.MaxTokens <= 2048 {
		t.Fatalf("request thinking %+v, max_tokens %d", body.Thinking, body.MaxTokens)
	}
}

// TestUsageByKind: the second request of a conversation reads what the
// first wrote to the cache; usage counts input (all of it), cache writes
// and cache reads apart. With NoPromptCache nothing is marked or cached.
func TestUsageByKind(t *testing.T) {
	srv := start(t, `{"replies": [{"text": "one"}], "when_done": "repeat_last"}`)
	req := prompt("hello " + strings.Repeat("there ", 200))
	req.System = strings.Repeat("You are careful. ", 100)
	p := newProvider(t, srv, 0)
	first, _, err := collect(t, t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages,
		session.Message{Role: session.RoleAssistant, Blocks: first.Blocks},
		session.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "and again"}}})
	second, _, err := collect(t, t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	u1, u2 := first.Usage, second.Usage
	if u1.CacheWriteTokens == 0 || u1.CacheReadTokens != 0 || u2.CacheReadTokens != u1.CacheWriteTokens || u2.InputTokens < u2.CacheReadTokens+u2.CacheWriteTokens {
		t.Fatalf("usage %+v then %+v; want the first's cache writes read by the second, inside its input", u1, u2)
	}

	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	off, err := anthropic.New(&anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), HTTPClient: &http.Client{Transport: tr}, NoPromptCache: true})
	if err != nil {
		t.Fatal(err)
	}
	third, _, err := collect(t, t.Context(), off, req)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if strings.Contains(string(reqs[len(reqs)-1].Body), "cache_control") || third.Usage.CacheReadTokens != 0 || third.Usage.CacheWriteTokens != 0 {
		t.Fatalf("NoPromptCache: usage %+v, body marked: %v", third.Usage, strings.Contains(string(reqs[len(reqs)-1].Body), "cache_control"))
	}
}

// TestUnsignedThinkingLeftOut: reasoning another provider kept (a thinking
// block with no signature) is not sent, since the API refuses a thinking
// block whose signature it cannot check.
func TestUnsignedThinkingLeftOut(t *testing.T) {
	srv := start(t, `{"replies": [{"text": "Fine."}]}`)
	p := newProvider(t, srv, 0)
	req := prompt("and now?")
	req.ThinkingBudget = 2048
	req.Messages = append([]session.Message{
		{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "hi"}}},
		{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockThinking, Text: "OTHER-PROVIDER-REASONING"}, {Type: session.BlockText, Text: "Hello."}}},
	}, req.Messages...)
	if _, _, err := collect(t, t.Context(), p, req); err != nil {
		t.Fatalf("%v (server: %v)", err, srv.Err())
	}
	if b := string(srv.Requests()[0].Body); strings.Contains(b, "OTHER-PROVIDER-REASONING") {
		t.Fatalf("the unsigned thinking was sent: %s", b)
	}
}
