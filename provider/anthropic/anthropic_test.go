package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/provider/providertest"
	"github.com/lite-agent/lite-agent/session"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey is the API key the tests use; it must never show in an error.
const testKey = "sk-ant-test-SECRET-0123456789"

// newProvider returns a provider talking to srv, retrying fast.
func newProvider(t testing.TB, srv *fakemodel.Server, maxRetries int) *anthropic.Provider {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := anthropic.New(&anthropic.Options{
		APIKey:         testKey,
		BaseURL:        srv.URL(),
		HTTPClient:     &http.Client{Transport: tr},
		MaxRetries:     maxRetries,
		RetryBaseDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// decode unmarshals a logged request body.
func decode(t testing.TB, body json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("logged body %s: %v", body, err)
	}
	return m
}

// wire parses JSON text for comparisons with decoded bodies.
func wire(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func TestTranscriptCarried(t *testing.T) {
	srv := start(t, `{"replies": [{
		"expect": {
			"model": "claude-test", "last_user_contains": ["now list"], "system_contains": ["careful agent"],
			"tool_result_for": ["toolu_1", "toolu_2"], "tools": ["write"]
		},
		"text": "Listed."
	}]}`)
	schema := `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`
	req := provider.Request{
		Model:  "claude-test",
		System: "You are a careful agent.",
		Tools:  []provider.ToolSpec{{Name: "write", Description: "Write a file.", InputSchema: json.RawMessage(schema)}},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "write a.txt"}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{
				{Type: session.BlockText, Text: "Writing."},
				{Type: session.BlockToolUse, ID: "toolu_1", Name: "write", Input: json.RawMessage(`{"path":"a.txt","content":"x"}`)},
				{Type: session.BlockToolUse, ID: "toolu_2", Name: "write", Input: json.RawMessage(`{"path":"/etc/passwd","content":"x"}`)},
			}},
			{Role: session.RoleUser, Blocks: []session.Block{
				{Type: session.BlockText, Text: "now list the files"},
				{Type: session.BlockToolResult, ToolUseID: "toolu_1", Text: "wrote 1 byte"},
				{Type: session.BlockToolResult, ToolUseID: "toolu_2", Text: "outside the workdir", IsError: true},
			}},
		},
	}
	resp, _, err := collect(t, t.Context(), newProvider(t, srv, 0), req)
	if err != nil {
		t.Fatalf("Stream: %v (server failures: %v)", err, srv.Failures())
	}
	if len(resp.Blocks) != 1 || resp.Blocks[0].Text != "Listed." {
		t.Errorf("response blocks %+v", resp.Blocks)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := decode(t, reqs[0].Body)
	// Breakpoints: the tools, the system prompt and the last two user
	// messages.
	const cc = `,"cache_control":{"type":"ephemeral"}`
	want := map[string]any{
		"model":      "claude-test",
		"max_tokens": float64(anthropic.DefaultMaxTokens),
		"stream":     true,
		"system":     wire(t, `[{"type":"text","text":"You are a careful agent."`+cc+`}]`),
		"tools":      wire(t, `[{"name":"write","description":"Write a file.","input_schema":`+schema+cc+`}]`),
		"messages": wire(t, `[
			{"role":"user","content":[{"type":"text","text":"write a.txt"`+cc+`}]},
			{"role":"assistant","content":[
				{"type":"text","text":"Writing."},
				{"type":"tool_use","id":"toolu_1","name":"write","input":{"path":"a.txt","content":"x"}},
				{"type":"tool_use","id":"toolu_2","name":"write","input":{"path":"/etc/passwd","content":"x"}}
			]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"wrote 1 byte"}]},
				{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"outside the workdir"}],"is_error":true},
				{"type":"text","text":"now list the files"`+cc+`}
			]}
		]`),
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("request body on the wire (-want +got):\n%s", diff)
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	p, err := anthropic.New(nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = p.Stream(t.Context(), prompt("hi"), nil)
	if !errors.Is(err, provider.ErrAuth) || !strings.Contains(err.Error(), "set ANTHROPIC_API_KEY") {
		t.Fatalf("Stream without a key = %v, want ErrAuth saying to set ANTHROPIC_API_KEY", err)
	}
}

func TestEnvironment(t *testing.T) {
	srv := start(t, `{"replies": [{"text": "from the environment"}]}`)
	t.Setenv("ANTHROPIC_API_KEY", testKey)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	p, err := anthropic.New(nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if p.Name() != "anthropic" {
		t.Errorf("Name = %q", p.Name())
	}
	resp, err := p.Stream(t.Context(), prompt("hi"), nil)
	if err != nil || len(resp.Blocks) != 1 {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestBadInput(t *testing.T) {
	if _, err := anthropic.New(&anthropic.Options{BaseURL: "localhost:8080"}); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("New with a bad base URL = %v", err)
	}
	srv := start(t, `{"replies": []}`)
	p := newProvider(t, srv, 0)
	user := func(b ...session.Block) []provider.Message {
		return []provider.Message{{Role: session.RoleUser, Blocks: b}}
	}
	tests := []struct {
		name    string
		req     provider.Request
		wantErr string
	}{
		{"no model", provider.Request{Messages: user(session.Block{Type: session.BlockText, Text: "hi"})}, "no model is set"},
		{"bad schema", provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}}, `tool "t": the input schema is not a JSON object`},
		{"null schema", provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(` null`)}}}, `tool "t": the input schema is not a JSON object`},
		{"torn schema", provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", InputSchema: json.RawMessage(` {"type":`)}}}, `tool "t": the input schema is not a JSON object`},
		{"tool use from the user", provider.Request{Model: "m", Messages: user(session.Block{Type: session.BlockToolUse, ID: "x", Name: "t"})}, "belongs in an assistant message"},
		{"unknown block", provider.Request{Model: "m", Messages: user(session.Block{Type: "image"})}, `block type "image" is not supported`},
		{"unknown role", provider.Request{Model: "m", Messages: []provider.Message{{Role: "system", Blocks: []session.Block{{Type: session.BlockText, Text: "x"}}}}}, `role "system"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Stream(t.Context(), tt.req, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Stream = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("bad input reached the server %d times", n)
	}
}

// harness describes this provider to the shared provider suite.
var harness = providertest.Harness{
	Model: "claude-test",
	Key:   testKey,
	New: func(t testing.TB, srv *fakemodel.Server, maxRetries int) provider.Provider {
		return newProvider(t, srv, maxRetries)
	},
}

func start(t testing.TB, scriptJSON string) *fakemodel.Server {
	return providertest.Start(t, scriptJSON)
}

func prompt(text string) provider.Request { return harness.Prompt(text) }

func collect(t testing.TB, ctx context.Context, p provider.Provider, req provider.Request) (provider.Response, []provider.Delta, error) {
	t.Helper()
	return harness.Collect(t, ctx, p, req)
}

func TestProvider(t *testing.T) { providertest.Run(t, harness) }

func TestRetries(t *testing.T) {
	providertest.RunRetries(t, harness, []providertest.RetryCase{
		providertest.Retry("429 then success", `{"fault": {"kind": "rate_limit", "retry_after_ms": 1}}, `+providertest.RetryOK, 0, "", 2),
		providertest.Retry("529 then success", `{"fault": {"kind": "overloaded"}}, `+providertest.RetryOK, 0, "", 2),
		providertest.Retry("500 twice then success", `{"fault": {"kind": "server_error"}}, {"fault": {"status": 503}}, `+providertest.RetryOK, 0, "", 3),
		providertest.Retry("overloaded event before any delta", `{"text": "lost", "fault": {"kind": "overloaded", "after_deltas": 0}}, `+providertest.RetryOK, 0, "", 2),
		providertest.Retry("cut before any delta", `{"text": "lost", "fault": {"kind": "cut", "after_deltas": 0}}, `+providertest.RetryOK, 0, "", 2),
		providertest.Retry("overloaded until the retries run out", `{"fault": {"kind": "overloaded"}}, {"fault": {"kind": "overloaded"}}, {"fault": {"kind": "overloaded"}}, `+providertest.RetryOK, 2,
			"the server is overloaded (529 overloaded_error: Overloaded, request req_fake_0003); try again later (gave up after 3 attempts)", 3),
		providertest.Retry("retries off", `{"fault": {"kind": "rate_limit"}}, `+providertest.RetryOK, -1, "rate limited (429 rate_limit_error", 1),
		providertest.Retry("server asks to wait too long", `{"fault": {"kind": "rate_limit", "retry_after": 3600}}, `+providertest.RetryOK, 0, "the server asks to wait 1h0m0s", 1),
	})
}

func TestErrors(t *testing.T) {
	providertest.RunErrors(t, harness, []providertest.ErrorCase{
		providertest.Error("401", `{"kind": "auth"}`, provider.ErrAuth, []string{"ANTHROPIC_API_KEY", "401 authentication_error"}),
		providertest.Error("403", `{"kind": "permission"}`, provider.ErrAuth, []string{"ANTHROPIC_API_KEY"}),
		providertest.Error("401 echoing the key", `{"kind": "auth", "message": "invalid x-api-key `+testKey+`"}`, provider.ErrAuth, []string{"invalid x-api-key [redacted]"}),
		providertest.Error("404", `{"kind": "model_not_found"}`, provider.ErrModelNotFound, []string{`model "claude-test"`, "check the model name"}),
		providertest.Error("context too long", `{"kind": "context_too_long"}`, provider.ErrContextTooLong, []string{"prompt is too long", "start a new session", "fork"}),
		providertest.Error("413", `{"status": 413, "message": "Request exceeds the maximum allowed number of bytes."}`, provider.ErrContextTooLong, []string{"413"}),
		providertest.Error("other 400", `{"kind": "bad_request", "message": "messages: roles must alternate"}`, nil, []string{"request refused (400 invalid_request_error: messages: roles must alternate"}),
	})
}

func BenchmarkStreamRoundTrip(b *testing.B) { providertest.BenchStreamRoundTrip(b, harness) }
