package openai_test

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
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/session"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey is the API key the tests use; it must never show in an error.
const testKey = "sk-proj-test-SECRET-0123456789"

// start runs a fake model server following the script given as JSON.
func start(t testing.TB, scriptJSON string) *fakemodel.Server {
	t.Helper()
	script, err := fakemodel.ParseScript([]byte(scriptJSON))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	srv, err := fakemodel.Start(script)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// newProvider returns a provider talking to srv, retrying fast.
func newProvider(t testing.TB, srv *fakemodel.Server, maxRetries int) *openai.Provider {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := openai.New(&openai.Options{
		APIKey:         testKey,
		BaseURL:        srv.OpenAIURL(),
		HTTPClient:     &http.Client{Transport: tr},
		MaxRetries:     maxRetries,
		RetryBaseDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func prompt(text string) provider.Request {
	return provider.Request{
		Model:    "gpt-test",
		Messages: []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: text}}}},
	}
}

// collect streams req and returns the response, the deltas and the error.
func collect(t testing.TB, ctx context.Context, p provider.Provider, req provider.Request) (provider.Response, []provider.Delta, error) {
	t.Helper()
	var deltas []provider.Delta
	resp, err := p.Stream(ctx, req, func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Errorf("the API key shows in the error: %v", err)
	}
	return resp, deltas, err
}

func TestStreamText(t *testing.T) {
	const text = "Hello there, this answer arrives in pieces."
	srv := start(t, `{"replies": [{"text": "`+text+`", "usage": {"input_tokens": 11, "output_tokens": 22}}]}`)
	resp, deltas, err := collect(t, t.Context(), newProvider(t, srv, 0), prompt("hi"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	var got strings.Builder
	for _, d := range deltas {
		if d.Index != 0 || d.Kind != provider.DeltaText {
			t.Errorf("delta %+v, want text deltas of block 0", d)
		}
		got.WriteString(d.Text)
	}
	if len(deltas) < 2 || got.String() != text {
		t.Errorf("%d deltas making %q, want several making %q", len(deltas), got.String(), text)
	}
	want := provider.Response{
		Blocks:     []session.Block{{Type: session.BlockText, Text: text}},
		StopReason: provider.StopEndTurn,
		Usage:      session.Usage{InputTokens: 11, OutputTokens: 22},
		Model:      "gpt-test",
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestStreamToolCall(t *testing.T) {
	srv := start(t, `{"replies": [{
		"text": "Writing it.",
		"tool_calls": [
			{"id": "toolu_1", "name": "write", "input": {"path": "a.txt", "content": "line one\nline two\n"}},
			{"id": "toolu_2", "name": "ls"}
		],
		"chunk_size": 3
	}]}`)
	resp, deltas, err := collect(t, t.Context(), newProvider(t, srv, 0), prompt("write a.txt"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.StopReason != provider.StopToolUse || len(resp.Blocks) != 3 {
		t.Fatalf("stop %q with %d blocks, want tool_use with 3: %+v", resp.StopReason, len(resp.Blocks), resp.Blocks)
	}
	if b := resp.Blocks[0]; b.Type != session.BlockText || b.Text != "Writing it." {
		t.Errorf("block 0 = %+v", b)
	}
	wantCalls := []struct {
		id, name string
		input    map[string]any
	}{
		{"toolu_1", "write", map[string]any{"path": "a.txt", "content": "line one\nline two\n"}},
		{"toolu_2", "ls", map[string]any{}},
	}
	for i, w := range wantCalls {
		b := resp.Blocks[i+1]
		var input map[string]any
		if err := json.Unmarshal(b.Input, &input); err != nil {
			t.Fatalf("block %d input %q: %v", i+1, b.Input, err)
		}
		if b.Type != session.BlockToolUse || b.ID != w.id || b.Name != w.name || !cmp.Equal(input, w.input) {
			t.Errorf("block %d = %s %s %s %s, want tool_use %s %s %v", i+1, b.Type, b.ID, b.Name, b.Input, w.id, w.name, w.input)
		}
		// The deltas of the block rebuild its input, the first naming the tool.
		var fragments strings.Builder
		var first *provider.Delta
		for j, d := range deltas {
			if d.Index == i+1 {
				if first == nil {
					first = &deltas[j]
				}
				if d.Kind != provider.DeltaToolInput {
					t.Errorf("delta %+v of a tool block is not a tool input", d)
				}
				fragments.WriteString(d.Text)
			}
		}
		if first == nil || first.Name != w.name {
			t.Errorf("block %d: first delta %+v does not name %s", i+1, first, w.name)
		}
		if fragments.Len() > 0 && fragments.String() != string(b.Input) {
			t.Errorf("block %d: deltas make %q, input is %q", i+1, fragments.String(), b.Input)
		}
	}
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
			"model": "gpt-test", "last_user_contains": ["now list"], "system_contains": ["careful agent"],
			"tool_result_for": ["toolu_1", "toolu_2"], "tools": ["write"]
		},
		"text": "Listed."
	}]}`)
	schema := `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`
	req := provider.Request{
		Model:  "gpt-test",
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
	want := map[string]any{
		"model":          "gpt-test",
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"tools":          wire(t, `[{"type":"function","function":{"name":"write","description":"Write a file.","parameters":`+schema+`}}]`),
		"messages": wire(t, `[
			{"role":"system","content":"You are a careful agent."},
			{"role":"user","content":"write a.txt"},
			{"role":"assistant","content":"Writing.","tool_calls":[
				{"id":"toolu_1","type":"function","function":{"name":"write","arguments":"{\"path\":\"a.txt\",\"content\":\"x\"}"}},
				{"id":"toolu_2","type":"function","function":{"name":"write","arguments":"{\"path\":\"/etc/passwd\",\"content\":\"x\"}"}}
			]},
			{"role":"tool","tool_call_id":"toolu_1","content":"wrote 1 byte"},
			{"role":"tool","tool_call_id":"toolu_2","content":"Error: outside the workdir"},
			{"role":"user","content":"now list the files"}
		]`),
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("request body on the wire (-want +got):\n%s", diff)
	}
}

func TestRetries(t *testing.T) {
	const ok = `{"text": "fine now"}`
	tests := []struct {
		name       string
		replies    string
		maxRetries int
		wantErr    string // "" for success
		wantReqs   int
	}{
		{"429 then success", `{"fault": {"kind": "rate_limit", "retry_after_ms": 1}}, ` + ok, 0, "", 2},
		{"529 then success", `{"fault": {"kind": "overloaded"}}, ` + ok, 0, "", 2},
		{"500 twice then success", `{"fault": {"kind": "server_error"}}, {"fault": {"status": 503}}, ` + ok, 0, "", 3},
		{"overloaded event before any delta", `{"text": "lost", "fault": {"kind": "overloaded", "after_deltas": 0}}, ` + ok, 0, "", 2},
		{"cut before any delta", `{"text": "lost", "fault": {"kind": "cut", "after_deltas": 0}}, ` + ok, 0, "", 2},
		{"overloaded until the retries run out", `{"fault": {"kind": "overloaded"}}, {"fault": {"kind": "overloaded"}}, {"fault": {"kind": "overloaded"}}, ` + ok, 2,
			"the server is overloaded (503 server_error: The server is overloaded or not ready yet., request req_fake_0003); try again later (gave up after 3 attempts)", 3},
		{"529 then success", `{"fault": {"status": 529}}, ` + ok, 0, "", 2},
		{"retries off", `{"fault": {"kind": "rate_limit"}}, ` + ok, -1, "rate limited (429 rate_limit_exceeded", 1},
		{"server asks to wait too long", `{"fault": {"kind": "rate_limit", "retry_after": 3600}}, ` + ok, 0, "the server asks to wait 1h0m0s", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, `{"replies": [`+tt.replies+`]}`)
			resp, _, err := collect(t, t.Context(), newProvider(t, srv, tt.maxRetries), prompt("hi"))
			if n := len(srv.Requests()); n != tt.wantReqs {
				t.Errorf("%d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantErr == "" {
				if err != nil || len(resp.Blocks) != 1 || resp.Blocks[0].Text != "fine now" {
					t.Fatalf("Stream = %+v, %v; want the second answer", resp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Stream error = %v, want one containing %q", err, tt.wantErr)
			}
			var te *provider.TransientError
			if !errors.As(err, &te) {
				t.Errorf("error %v is not marked transient", err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name     string
		fault    string
		wantIs   error
		wantText []string
	}{
		{"401", `{"kind": "auth"}`, provider.ErrAuth, []string{"OPENAI_API_KEY", "offline demo", "401 invalid_api_key"}},
		{"403", `{"kind": "permission"}`, provider.ErrAuth, []string{"OPENAI_API_KEY"}},
		{"401 echoing the key", `{"kind": "auth", "message": "invalid x-api-key ` + testKey + `"}`, provider.ErrAuth, []string{"invalid x-api-key [redacted]"}},
		{"404", `{"kind": "model_not_found"}`, provider.ErrModelNotFound, []string{`model "gpt-test"`, "check the model name", "ollama pull gpt-test"}},
		{"context too long", `{"kind": "context_too_long"}`, provider.ErrContextTooLong, []string{"maximum context length", "start a new session", "fork"}},
		{"context too long, vLLM words", `{"status": 400, "message": "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."}`, provider.ErrContextTooLong, []string{"8192"}},
		{"other 400", `{"kind": "bad_request", "message": "messages: roles must alternate"}`, nil, []string{"request refused (400 invalid_request_error: messages: roles must alternate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, `{"replies": [{"fault": `+tt.fault+`}, {"text": "not reached"}]}`)
			_, _, err := collect(t, t.Context(), newProvider(t, srv, 0), prompt("hi"))
			if err == nil {
				t.Fatal("Stream succeeded")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests; a permanent error must not be retried", n)
			}
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	// Ten minutes between deltas: only cancellation ends this stream.
	srv := start(t, `{"replies": [{"text": "0123456789", "delta_delay_ms": 600000}]}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	_, err := newProvider(t, srv, 0).Stream(ctx, prompt("hi"), func(provider.Delta) {
		n++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("Stream = %v after %d deltas, want context.Canceled after 1", err, n)
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests; a cancelled stream must not be retried", got)
	}
}

func TestCutHalfWay(t *testing.T) {
	for _, fault := range []string{`{"kind": "cut"}`, `{"kind": "overloaded", "after_deltas": 2}`} {
		t.Run(fault, func(t *testing.T) {
			srv := start(t, `{"replies": [{"text": "a long answer cut in the middle", "fault": `+fault+`}, {"text": "not reached"}]}`)
			resp, deltas, err := collect(t, t.Context(), newProvider(t, srv, 0), prompt("hi"))
			if err == nil {
				t.Fatalf("Stream succeeded with %+v; a cut stream must fail", resp)
			}
			if len(deltas) == 0 || len(resp.Blocks) != 0 {
				t.Errorf("%d deltas, response %+v; want some deltas, then an empty response", len(deltas), resp)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests; a stream that delivered deltas must not be retried", n)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	p, err := openai.New(nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = p.Stream(t.Context(), prompt("hi"), nil)
	if !errors.Is(err, provider.ErrAuth) || !strings.Contains(err.Error(), "set OPENAI_API_KEY") {
		t.Fatalf("Stream without a key = %v, want ErrAuth saying to set OPENAI_API_KEY", err)
	}
}

func TestEnvironment(t *testing.T) {
	srv := start(t, `{"replies": [{"text": "from the environment"}]}`)
	t.Setenv("OPENAI_API_KEY", testKey)
	t.Setenv("OPENAI_BASE_URL", srv.OpenAIURL())
	p, err := openai.New(nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if p.Name() != "openai" {
		t.Errorf("Name = %q", p.Name())
	}
	resp, err := p.Stream(t.Context(), prompt("hi"), nil)
	if err != nil || len(resp.Blocks) != 1 {
		t.Fatalf("Stream = %+v, %v", resp, err)
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestBadInput(t *testing.T) {
	if _, err := openai.New(&openai.Options{BaseURL: "localhost:8080"}); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
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

func TestLocalServer(t *testing.T) {
	// Like Ollama or llama.cpp: no key, no usage chunk, tool calls without
	// ids, finished with "stop".
	t.Setenv("OPENAI_API_KEY", "")
	srv := start(t, `{"replies": [{
		"expect": {"body_contains": ["\"max_tokens\":100"]},
		"tool_calls": [{"name": "read", "input": {"path": "a"}}, {"name": "read", "input": {"path": "b"}}],
		"stop_reason": "end_turn", "omit_usage": true, "omit_tool_ids": true
	}, {
		"text": "cut short", "stop_reason": "max_tokens"
	}]}`)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := openai.New(&openai.Options{BaseURL: srv.OpenAIURL(), HTTPClient: &http.Client{Transport: tr}, MaxTokens: 100})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	resp, err := p.Stream(t.Context(), prompt("read a and b"), nil)
	if err != nil {
		t.Fatalf("Stream: %v (server failures: %v)", err, srv.Failures())
	}
	if resp.StopReason != provider.StopToolUse || resp.Usage != (session.Usage{}) || len(resp.Blocks) != 2 {
		t.Fatalf("response %+v; want two tool calls, tool_use, no usage", resp)
	}
	a, b := resp.Blocks[0], resp.Blocks[1]
	if !strings.HasPrefix(a.ID, "call_") || !strings.HasPrefix(b.ID, "call_") || a.ID == b.ID {
		t.Errorf("generated ids %q and %q; want two distinct call_ ids", a.ID, b.ID)
	}
	if string(a.Input) != `{"path":"a"}` || string(b.Input) != `{"path":"b"}` || a.Name != "read" {
		t.Errorf("calls %s %s / %s %s", a.Name, a.Input, b.Name, b.Input)
	}
	req := prompt("go on")
	req.MaxTokens = 7
	resp, err = p.Stream(t.Context(), req, nil)
	if err != nil || resp.StopReason != provider.StopMaxTokens {
		t.Fatalf("Stream = %+v, %v; want stop reason max_tokens", resp, err)
	}
	if body := string(srv.Requests()[1].Body); !strings.Contains(body, `"max_tokens":7`) {
		t.Errorf("the request's own MaxTokens was not sent: %s", body)
	}
}

func BenchmarkStreamRoundTrip(b *testing.B) {
	srv := start(b, `{"replies": [{
		"text": "I'll write the file now; it holds a short greeting and a trailing newline, nothing more.",
		"tool_calls": [{"id": "toolu_b", "name": "write", "input": {"path": "hello.txt", "content": "Hello from lite-agent\n"}}],
		"chunk_size": 8
	}], "when_done": "repeat_last"}`)
	p := newProvider(b, srv, 0)
	req := prompt("write hello.txt")
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Stream(b.Context(), req, func(provider.Delta) {})
		if err != nil || len(resp.Blocks) != 2 {
			b.Fatalf("Stream = %+v, %v", resp, err)
		}
	}
}
