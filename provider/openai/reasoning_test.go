package openai_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/openai"
	"github.com/lite-agent/lite-agent/session"
)

// TestReasoningKeptAndSentBack: reasoning streamed as reasoning_content
// becomes a thinking block (and thinking deltas); it goes back with the
// tool call it came before while that tool use goes on (the fake model
// refuses the request otherwise, as DeepSeek does), and is left out once a
// new prompt starts. A whole (non-streamed) answer keeps it too.
func TestReasoningKeptAndSentBack(t *testing.T) {
	for _, noStream := range []bool{false, true} {
		t.Run(fmt.Sprint("no_stream=", noStream), func(t *testing.T) {
			srv := start(t, `{"replies": [
				{"thinking": "FIRST-REASONING: list the directory", "tool_calls": [{"id": "call_1", "name": "ls", "input": {}}]},
				{"thinking": "SECOND-REASONING: it is listed", "text": "Two files."},
				{"text": "Fine."}
			]}`)
			p, err := openai.New(&openai.Options{APIKey: testKey, BaseURL: srv.OpenAIURL(), NoStream: noStream})
			if err != nil {
				t.Fatal(err)
			}
			req := prompt("what is here?")
			req.Tools = []provider.ToolSpec{{Name: "ls", Description: "List."}}
			r1, deltas, err := collect(t, t.Context(), p, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(r1.Blocks) != 2 || r1.Blocks[0].Type != session.BlockThinking || r1.Blocks[0].Text != "FIRST-REASONING: list the directory" || r1.Blocks[0].Signature != "" {
				t.Fatalf("the reasoning is not kept as an unsigned thinking block first: %+v", r1.Blocks)
			}
			var streamed strings.Builder
			for _, d := range deltas {
				if d.Kind == provider.DeltaThinking {
					streamed.WriteString(d.Text)
				}
			}
			if streamed.String() != r1.Blocks[0].Text {
				t.Fatalf("thinking deltas %q, want the reasoning", streamed.String())
			}

			// Without the reasoning, the tool use cannot go on.
			stripped := req
			stripped.Messages = append(append([]provider.Message(nil), req.Messages...),
				provider.Message{Role: session.RoleAssistant, Blocks: r1.Blocks[1:]},
				provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "call_1", Text: "a.go b.go"}}})
			if _, _, err := collect(t, t.Context(), p, stripped); err == nil || !strings.Contains(err.Error(), "reasoning_content") {
				t.Fatalf("the fake model took a tool use without its reasoning: %v", err)
			}

			req.Messages = append(req.Messages,
				provider.Message{Role: session.RoleAssistant, Blocks: r1.Blocks},
				provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "call_1", Text: "a.go b.go"}}})
			r2, _, err := collect(t, t.Context(), p, req)
			if err != nil {
				t.Fatalf("the tool use with its reasoning: %v (%v)", err, srv.Failures())
			}
			reqs := srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, `"reasoning_content":"FIRST-REASONING: list the directory"`) {
				t.Fatalf("the reasoning did not go back: %s", body)
			}
			req.Messages = append(req.Messages, provider.Message{Role: session.RoleAssistant, Blocks: r2.Blocks},
				provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "and now?"}}})
			if _, _, err := collect(t, t.Context(), p, req); err != nil {
				t.Fatal(err)
			}
			reqs = srv.Requests()
			if body := string(reqs[len(reqs)-1].Body); strings.Contains(body, "REASONING") {
				t.Fatalf("a new prompt still sends the earlier reasoning: %s", body)
			}
		})
	}
}

// TestReasoningField: servers that name the field "reasoning" (Ollama,
// OpenRouter) are read too. The stream is a recording of that shape.
func TestReasoningField(t *testing.T) {
	const stream = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Think"},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"content":"","reasoning":"ing."},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"content":"Hi."},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, stream)
	}))
	defer srv.Close()
	p, err := openai.New(&openai.Options{BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := collect(t, t.Context(), p, prompt("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := []session.Block{{Type: session.BlockThinking, Text: "Thinking."}, {Type: session.BlockText, Text: "Hi."}}
	if fmt.Sprint(resp.Blocks) != fmt.Sprint(want) {
		t.Fatalf("blocks %+v, want %+v", resp.Blocks, want)
	}
}
