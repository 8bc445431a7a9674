package fakemodel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start runs a server for the script given as JSON, closed at the end of
// the test.
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

// httpClient is a client whose idle connections are closed with the test,
// so no goroutine outlives it.
func httpClient(t testing.TB) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func anthropicClient(t testing.TB, srv *fakemodel.Server) anthropic.Client {
	t.Helper()
	return anthropic.NewClient(
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(srv.URL()),
		aoption.WithAPIKey("test-key"),
		aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(httpClient(t)),
	)
}

func openAIClient(t testing.TB, srv *fakemodel.Server) openai.Client {
	t.Helper()
	return openai.NewClient(
		ooption.WithBaseURL(srv.OpenAIURL()),
		ooption.WithAPIKey("test-key"),
		ooption.WithMaxRetries(0),
		ooption.WithHTTPClient(httpClient(t)),
	)
}

func anthropicParams(prompt string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
	}
}

func openAIParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

const textAndTool = `{"replies": [{
	"text": "Let me write that file for you.",
	"tool_calls": [{"id": "toolu_1", "name": "write", "input": {"path": "a.txt", "content": "hi\n"}}],
	"usage": {"input_tokens": 42, "output_tokens": 7}
}]}`

func TestAnthropicStreamParsedBySDK(t *testing.T) {
	srv := start(t, textAndTool)
	client := anthropicClient(t, srv)
	stream := client.Messages.NewStreaming(t.Context(), anthropicParams("write a.txt"))
	defer stream.Close()
	var msg anthropic.Message
	textDeltas, jsonDeltas := 0, 0
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
		if ev.Type == "content_block_delta" {
			switch ev.Delta.Type {
			case "text_delta":
				textDeltas++
			case "input_json_delta":
				jsonDeltas++
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if textDeltas < 2 || jsonDeltas < 2 {
		t.Errorf("got %d text and %d JSON deltas; want several of each", textDeltas, jsonDeltas)
	}
	if len(msg.Content) != 2 {
		t.Fatalf("got %d content blocks, want 2: %s", len(msg.Content), msg.RawJSON())
	}
	if got := msg.Content[0].Text; got != "Let me write that file for you." {
		t.Errorf("text = %q", got)
	}
	tu := msg.Content[1]
	if tu.Type != "tool_use" || tu.ID != "toolu_1" || tu.Name != "write" {
		t.Errorf("tool block = %s %s %s, want tool_use toolu_1 write", tu.Type, tu.ID, tu.Name)
	}
	var input map[string]string
	if err := json.Unmarshal(tu.Input, &input); err != nil {
		t.Fatalf("tool input %q: %v", tu.Input, err)
	}
	if diff := cmp.Diff(map[string]string{"path": "a.txt", "content": "hi\n"}, input); diff != "" {
		t.Errorf("tool input (-want +got):\n%s", diff)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens != 42 || msg.Usage.OutputTokens != 7 || msg.Model != "claude-test" {
		t.Errorf("stop %q, usage %d/%d, model %q; want tool_use, 42/7, claude-test", msg.StopReason, msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Model)
	}
}

func TestOpenAIStreamParsedBySDK(t *testing.T) {
	srv := start(t, textAndTool)
	client := openAIClient(t, srv)
	stream := client.Chat.Completions.NewStreaming(t.Context(), openAIParams("write a.txt"))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	contentChunks, argChunks := 0, 0
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				contentChunks++
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					argChunks++
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if contentChunks < 2 || argChunks < 2 {
		t.Errorf("got %d content and %d argument chunks; want several of each", contentChunks, argChunks)
	}
	if len(acc.Choices) != 1 {
		t.Fatalf("got %d choices, want 1", len(acc.Choices))
	}
	ch := acc.Choices[0]
	if ch.Message.Content != "Let me write that file for you." || ch.FinishReason != "tool_calls" {
		t.Errorf("content %q, finish %q", ch.Message.Content, ch.FinishReason)
	}
	if len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("got %d tool calls, want 1", len(ch.Message.ToolCalls))
	}
	tc := ch.Message.ToolCalls[0]
	if tc.ID != "toolu_1" || tc.Function.Name != "write" || tc.Function.Arguments != `{"content":"hi\n","path":"a.txt"}` {
		t.Errorf("tool call = %s %s %s", tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	if acc.Usage.PromptTokens != 42 || acc.Usage.CompletionTokens != 7 || acc.Model != "gpt-test" {
		t.Errorf("usage %d/%d model %q; want 42/7 gpt-test", acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Model)
	}
}

// rawStream posts body to path and returns the status and response body.
func post(t testing.TB, srv *fakemodel.Server, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return res.StatusCode, res.Header, string(b)
}

func TestOpenAIWithoutUsageOrIDs(t *testing.T) {
	srv := start(t, `{"replies": [{"tool_calls": [{"name": "read", "input": {"path": "x"}}], "omit_usage": true, "omit_tool_ids": true}]}`)
	status, _, body := post(t, srv, "/v1/chat/completions",
		`{"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hi"}]}`)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if strings.Contains(body, `"usage"`) || strings.Contains(body, `"id":"call_`) {
		t.Errorf("the stream has usage or tool ids:\n%s", body)
	}
	if !strings.Contains(body, `"finish_reason":"tool_calls"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("the stream lacks its finish reason or [DONE]:\n%s", body)
	}
}

func TestExpectations(t *testing.T) {
	anthropicBody := `{"model": "claude-x", "stream": true, "max_tokens": 10,
		"system": [{"type": "text", "text": "You are a coding agent."}],
		"tools": [{"name": "write", "input_schema": {"type": "object"}}],
		"messages": [
			{"role": "user", "content": "please greet"},
			{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "write", "input": {}}]},
			{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
		]}`
	openAIBody := `{"model": "gpt-x", "stream": true,
		"tools": [{"type": "function", "function": {"name": "write", "parameters": {}}}],
		"messages": [
			{"role": "system", "content": "You are a coding agent."},
			{"role": "user", "content": [{"type": "text", "text": "please greet"}]},
			{"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "write", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "t1", "content": "ok"}
		]}`
	tests := []struct {
		name     string
		expect   string
		path     string
		body     string
		wantFail string // "" when the expectations hold
	}{
		{"anthropic all hold", `{"format": "anthropic", "model": "claude-x", "last_user_contains": ["greet"], "system_contains": ["coding agent"], "body_contains": ["\"max_tokens\": 10"], "tool_result_for": ["t1"], "tools": ["write"]}`, "/v1/messages", anthropicBody, ""},
		{"openai all hold", `{"format": "openai", "model": "gpt-x", "last_user_contains": ["greet"], "system_contains": ["coding agent"], "tool_result_for": ["t1"], "tools": ["write"]}`, "/v1/chat/completions", openAIBody, ""},
		{"wrong format", `{"format": "openai"}`, "/v1/messages", anthropicBody, "want the openai format"},
		{"wrong model", `{"model": "claude-y"}`, "/v1/messages", anthropicBody, `want model "claude-y"`},
		{"last user", `{"last_user_contains": ["farewell"]}`, "/v1/chat/completions", openAIBody, `does not contain "farewell"`},
		{"system", `{"system_contains": ["poet"]}`, "/v1/messages", anthropicBody, `system prompt does not contain "poet"`},
		{"body", `{"body_contains": ["temperature"]}`, "/v1/chat/completions", openAIBody, `body does not contain "temperature"`},
		{"tool result", `{"tool_result_for": ["t2"]}`, "/v1/messages", anthropicBody, `no tool result for call "t2"`},
		{"tools", `{"tools": ["bash"]}`, "/v1/chat/completions", openAIBody, `does not offer tool "bash"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, `{"replies": [{"name": "checked", "text": "ok", "expect": `+tt.expect+`}]}`)
			status, _, body := post(t, srv, tt.path, tt.body)
			fails := srv.Failures()
			if tt.wantFail == "" {
				if status != 200 || len(fails) != 0 || srv.Err() != nil {
					t.Fatalf("status %d, failures %q, body %s", status, fails, body)
				}
				return
			}
			if msg := errorMessage(t, body); status != 400 || !strings.Contains(msg, tt.wantFail) || !strings.Contains(msg, `reply 1 ("checked")`) {
				t.Errorf("status %d, body %s; want 400 naming reply 1 and %q", status, body, tt.wantFail)
			}
			if len(fails) != 1 || !strings.Contains(fails[0], tt.wantFail) {
				t.Errorf("failures %q; want one containing %q", fails, tt.wantFail)
			}
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Failure == "" || reqs[0].Status != 400 {
				t.Errorf("logged requests %+v; want one failed with 400", reqs)
			}
		})
	}
}

func TestFaultsDecodedBySDK(t *testing.T) {
	tests := []struct {
		fault         string
		anthStatus    int
		anthType      string
		openAIStatus  int
		openAICode    string
		retryAfter    string
		retryAfterMS  string
		wantInMessage string
	}{
		{`{"kind": "rate_limit", "retry_after": 3}`, 429, "rate_limit_error", 429, "rate_limit_exceeded", "3", "", "rate limit"},
		{`{"kind": "rate_limit", "retry_after_ms": 1500}`, 429, "rate_limit_error", 429, "rate_limit_exceeded", "2", "1500", "rate limit"},
		{`{"kind": "overloaded"}`, 529, "overloaded_error", 503, "", "", "", "verloaded"},
		{`{"kind": "server_error"}`, 500, "api_error", 500, "", "", "", "rror"},
		{`{"kind": "auth"}`, 401, "authentication_error", 401, "invalid_api_key", "", "", "api key|api-key"},
		{`{"kind": "model_not_found"}`, 404, "not_found_error", 404, "model_not_found", "", "", "the-model"},
		{`{"kind": "context_too_long"}`, 400, "invalid_request_error", 400, "context_length_exceeded", "", "", "too long|context length"},
		{`{"status": 502, "message": "bad gateway"}`, 502, "api_error", 502, "", "", "", "bad gateway"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			srv := start(t, `{"replies": [{"fault": `+tt.fault+`}, {"fault": `+tt.fault+`}]}`)
			var raw *http.Response
			ac := anthropicClient(t, srv)
			params := anthropicParams("hi")
			params.Model = "the-model"
			stream := ac.Messages.NewStreaming(t.Context(), params, aoption.WithResponseInto(&raw))
			stream.Next()
			var aerr *anthropic.Error
			if !errors.As(stream.Err(), &aerr) {
				t.Fatalf("anthropic error = %v, want *anthropic.Error", stream.Err())
			}
			stream.Close()
			if aerr.StatusCode != tt.anthStatus || string(aerr.Type()) != tt.anthType || !containsAny(aerr.Message, tt.wantInMessage) {
				t.Errorf("anthropic: %d %s %q; want %d %s with %q", aerr.StatusCode, aerr.Type(), aerr.Message, tt.anthStatus, tt.anthType, tt.wantInMessage)
			}
			if got := aerr.Response.Header.Get("retry-after"); got != tt.retryAfter {
				t.Errorf("anthropic retry-after = %q, want %q", got, tt.retryAfter)
			}
			if got := aerr.Response.Header.Get("retry-after-ms"); got != tt.retryAfterMS {
				t.Errorf("anthropic retry-after-ms = %q, want %q", got, tt.retryAfterMS)
			}

			oc := openAIClient(t, srv)
			oparams := openAIParams("hi")
			oparams.Model = "the-model"
			ostream := oc.Chat.Completions.NewStreaming(t.Context(), oparams)
			ostream.Next()
			var oerr *openai.Error
			if !errors.As(ostream.Err(), &oerr) {
				t.Fatalf("openai error = %v, want *openai.Error", ostream.Err())
			}
			ostream.Close()
			if oerr.StatusCode != tt.openAIStatus || oerr.Code != tt.openAICode || !containsAny(oerr.Message, tt.wantInMessage) {
				t.Errorf("openai: %d %q %q; want %d %q with %q", oerr.StatusCode, oerr.Code, oerr.Message, tt.openAIStatus, tt.openAICode, tt.wantInMessage)
			}
		})
	}
}

// errorMessage reads error.message from an error body of either format.
func errorMessage(t testing.TB, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return e.Error.Message
}

// containsAny reports whether s contains one of the |-separated subs,
// ignoring case.
func containsAny(s, subs string) bool {
	for sub := range strings.SplitSeq(subs, "|") {
		if strings.Contains(strings.ToLower(s), strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

func TestFaultsInStream(t *testing.T) {
	tests := []struct {
		name      string
		fault     string
		wantTexts int // text deltas before the failure
	}{
		{"cut half-way", `{"kind": "cut"}`, 4},
		{"cut after 1", `{"kind": "cut", "after_deltas": 1}`, 1},
		{"overloaded event after 2", `{"kind": "overloaded", "after_deltas": 2}`, 2},
		{"error event before any delta", `{"kind": "server_error", "after_deltas": 0}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 8 text deltas of 5 characters.
			reply := `{"text": "0123456789012345678901234567890123456789", "fault": ` + tt.fault + `}`
			srv := start(t, `{"replies": [`+reply+`, `+reply+`]}`)

			ac := anthropicClient(t, srv)
			stream := ac.Messages.NewStreaming(t.Context(), anthropicParams("hi"))
			texts := 0
			for stream.Next() {
				if stream.Current().Delta.Type == "text_delta" {
					texts++
				}
			}
			stream.Close()
			if stream.Err() == nil || texts != tt.wantTexts {
				t.Errorf("anthropic: %d text deltas, err %v; want %d and an error", texts, stream.Err(), tt.wantTexts)
			}

			oc := openAIClient(t, srv)
			ostream := oc.Chat.Completions.NewStreaming(t.Context(), openAIParams("hi"))
			texts = 0
			for ostream.Next() {
				for _, c := range ostream.Current().Choices {
					if c.Delta.Content != "" {
						texts++
					}
				}
			}
			ostream.Close()
			if ostream.Err() == nil || texts != tt.wantTexts {
				t.Errorf("openai: %d text deltas, err %v; want %d and an error", texts, ostream.Err(), tt.wantTexts)
			}
		})
	}
}

func TestScriptEnd(t *testing.T) {
	tests := []struct {
		name       string
		whenDone   string
		wantStatus int
		wantText   string
	}{
		{"error", `"error"`, 400, "the script ran out"},
		{"default is error", `""`, 400, "the script ran out"},
		{"repeat last", `"repeat_last"`, 200, `"text":"secon"`},
	}
	body := `{"model": "m", "stream": true, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, `{"replies": [{"text": "first"}, {"text": "second"}], "when_done": `+tt.whenDone+`}`)
			for range 2 {
				if status, _, b := post(t, srv, "/v1/messages", body); status != 200 {
					t.Fatalf("status %d: %s", status, b)
				}
			}
			if srv.Remaining() != 0 {
				t.Errorf("Remaining = %d, want 0", srv.Remaining())
			}
			status, _, b := post(t, srv, "/v1/messages", body)
			if status != tt.wantStatus || !strings.Contains(b, tt.wantText) {
				t.Errorf("third request: %d %s; want %d with %q", status, b, tt.wantStatus, tt.wantText)
			}
			if tt.wantStatus != 200 && srv.Err() == nil {
				t.Error("running out of script was not recorded as a failure")
			}
		})
	}
}

func TestRefusedRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantMsg                  string
	}{
		{"not streaming", "POST", "/v1/messages", `{"model": "m", "messages": []}`, 400, `send "stream": true`},
		{"not JSON", "POST", "/v1/chat/completions", `{"model": `, 400, "not a Chat Completions request"},
		{"unknown path", "POST", "/v1/complete", `{}`, 404, "use POST /v1/messages (Anthropic) or POST /v1/chat/completions (OpenAI)"},
		{"wrong method", "GET", "/v1/messages", ``, 405, "no endpoint GET /v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := start(t, `{"replies": [{"text": "kept for a proper request"}]}`)
			req, err := http.NewRequestWithContext(t.Context(), tt.method, srv.URL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			res, err := httpClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if msg := errorMessage(t, string(b)); res.StatusCode != tt.wantStatus || !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("%d %q; want %d with %q", res.StatusCode, msg, tt.wantStatus, tt.wantMsg)
			}
			if srv.Remaining() != 1 {
				t.Errorf("a refused request used a reply")
			}
		})
	}
}

func TestRequestLog(t *testing.T) {
	script, err := fakemodel.ParseScript([]byte(`{"replies": [{"text": "a"}, {"fault": {"kind": "auth"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	srv, err := fakemodel.StartWithOptions(script, &fakemodel.Options{Log: &buf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	post(t, srv, "/v1/messages", `{"model": "m1", "stream": true, "messages": [{"role": "user", "content": "one"}]}`)
	post(t, srv, "/v1/chat/completions", `{"model": "m2", "stream": true, "messages": [{"role": "user", "content": "two"}]}`)
	post(t, srv, "/nowhere", `not json`)

	want := []fakemodel.Request{
		{Seq: 1, Method: "POST", Path: "/v1/messages", Format: "anthropic", Model: "m1", Reply: 1, Status: 200},
		{Seq: 2, Method: "POST", Path: "/v1/chat/completions", Format: "openai", Model: "m2", Reply: 2, Status: 401},
		{Seq: 3, Method: "POST", Path: "/nowhere", Status: 404},
	}
	// strip leaves out what is not compared: times and bodies.
	strip := func(rs []fakemodel.Request) []fakemodel.Request {
		out := make([]fakemodel.Request, len(rs))
		for i, r := range rs {
			r.Time, r.Body = time.Time{}, nil
			out[i] = r
		}
		return out
	}
	reqs := srv.Requests()
	if diff := cmp.Diff(want, strip(reqs)); diff != "" {
		t.Errorf("Requests (-want +got):\n%s", diff)
	}
	if len(reqs) == 3 && (!strings.Contains(string(reqs[0].Body), `"content": "one"`) || string(reqs[2].Body) != `"not json"`) {
		t.Errorf("bodies: %s / %s", reqs[0].Body, reqs[2].Body)
	}

	var logged []fakemodel.Request
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var r fakemodel.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		logged = append(logged, r)
	}
	if diff := cmp.Diff(strip(reqs), strip(logged)); diff != "" {
		t.Errorf("JSON Lines log differs from Requests (-mem +log):\n%s", diff)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func TestCancelDuringDeltaDelay(t *testing.T) {
	// An hour between deltas: only cancellation can end this stream.
	srv := start(t, `{"replies": [{"text": "0123456789", "delta_delay_ms": 3600000}]}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := anthropicClient(t, srv)
	stream := client.Messages.NewStreaming(ctx, anthropicParams("hi"))
	texts := 0
	for stream.Next() {
		if stream.Current().Delta.Type == "text_delta" {
			texts++
			cancel()
		}
	}
	stream.Close()
	if texts != 1 || !errors.Is(stream.Err(), context.Canceled) {
		t.Errorf("%d deltas, err %v; want 1 and context.Canceled", texts, stream.Err())
	}
	if err := srv.Close(); err != nil { // returns only once the handler has
		t.Errorf("Close: %v", err)
	}
}

func TestCancelDuringFirstByteDelay(t *testing.T) {
	// An hour before the first byte: only cancellation ends this request.
	srv := start(t, `{"replies": [{"text": "late", "delay_ms": 3600000}]}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// The request is logged before the delay starts.
		for len(srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	client := openAIClient(t, srv)
	stream := client.Chat.Completions.NewStreaming(ctx, openAIParams("hi"))
	got := stream.Next()
	stream.Close()
	if got || !errors.Is(stream.Err(), context.Canceled) {
		t.Errorf("Next = %v, err %v; want false and context.Canceled", got, stream.Err())
	}
}

func TestParseScript(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr string // "" for a valid script
	}{
		{"minimal", `{"replies": [{"text": "hi"}]}`, ""},
		{"empty", `{"replies": []}`, ""},
		{"every fault", `{"replies": [{"fault": {"kind": "rate_limit"}}, {"fault": {"kind": "cut", "after_deltas": 2}}, {"fault": {"status": 503}}]}`, ""},
		{"unknown field", `{"replies": [{"txt": "hi"}]}`, `unknown field "txt"`},
		{"two objects", `{"replies": []} {}`, "one JSON object"},
		{"when_done", `{"replies": [{"text": "a"}], "when_done": "loop"}`, `when_done "loop" is unknown`},
		{"repeat nothing", `{"replies": [], "when_done": "repeat_last"}`, "needs at least one reply"},
		{"tool without name", `{"replies": [{"tool_calls": [{"input": {}}]}]}`, "reply 1: tool call 1 has no name"},
		{"input not object", `{"replies": [{"tool_calls": [{"name": "t", "input": [1]}]}]}`, "input must be a JSON object"},
		{"fault without kind", `{"replies": [{"name": "x", "fault": {}}]}`, `reply 1 ("x"): fault needs a kind`},
		{"fault kind", `{"replies": [{"fault": {"kind": "meltdown"}}]}`, `fault kind "meltdown" is unknown`},
		{"fault status", `{"replies": [{"fault": {"status": 200}}]}`, "not an HTTP error status"},
		{"negative delay", `{"replies": [{"delay_ms": -1}]}`, "must not be negative"},
		{"expect format", `{"replies": [{"expect": {"format": "gemini"}}]}`, `expect format "gemini" is unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fakemodel.ParseScript([]byte(tt.script))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseScript: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseScript error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := fakemodel.Start(nil); err == nil {
		t.Error("Start(nil) succeeded")
	}
}

func TestExampleScriptLoads(t *testing.T) {
	s, err := fakemodel.LoadScript("testdata/example.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Replies) < 5 {
		t.Errorf("the example has %d replies; it should show every feature", len(s.Replies))
	}
	if _, err := fakemodel.LoadScript("testdata/missing.json"); err == nil {
		t.Error("loading a missing file succeeded")
	}
}

func TestDemoScript(t *testing.T) {
	s := fakemodel.DemoScript()
	if s.WhenDone != fakemodel.WhenDoneRepeatLast || len(s.Replies) != 3 {
		t.Fatalf("demo: when_done %q, %d replies; want repeat_last and 3", s.WhenDone, len(s.Replies))
	}
	call := s.Replies[0].ToolCalls
	if len(call) != 1 || call[0].Name != "write" {
		t.Fatalf("demo turn 1 calls %+v, want one write", call)
	}
	var input map[string]string
	if err := json.Unmarshal(call[0].Input, &input); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"path": "hello.txt", "content": "Hello from lite-agent\n"}, input); diff != "" {
		t.Errorf("demo write input (-want +got):\n%s", diff)
	}
	if !strings.Contains(s.Replies[2].Text, "hello.txt") {
		t.Errorf("demo turn 2 does not mention hello.txt: %q", s.Replies[2].Text)
	}
	s.Replies[0].Text = "changed"
	if fakemodel.DemoScript().Replies[0].Text == "changed" {
		t.Error("DemoScript returns shared state")
	}
}
