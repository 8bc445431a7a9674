package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/providertest"
	"github.com/lite-agent/lite-agent/session"
)

// TestBodyIsTheSDKs: the hand-written request body is the JSON the
// official SDK made of the params the provider built with it before
// (oracle_test.go), streamed (the SDK set "stream":true on the body) and
// whole, to the official API (max_completion_tokens) and to a local server
// (max_tokens), with a system prompt, tools, reasoning, images, a tool
// error and text that looks like the slot the messages go in; for
// messages encoded, then kept. The SDK's key order differs from struct
// order in places, so the JSON is compared as values, not bytes.
func TestBodyIsTheSDKs(t *testing.T) {
	req := provider.Request{Model: "m", System: `sys "messages":[0]`, ReasoningEffort: "high",
		Tools: []provider.ToolSpec{
			{Name: "t", Description: "d", InputSchema: json.RawMessage(` {"type":"object","properties":{"messages":{"type":"array","default":[0]}}}`)},
			{Name: "bare"},
		},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: `{"messages":[0]} <&>`}, {Type: session.BlockText, Text: "more"}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "old answer"}}},
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "next"}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockThinking, Text: "think"}, {Type: session.BlockToolUse, ID: "c1", Name: "t", Input: json.RawMessage(`{"messages":[0]}`)}, {Type: session.BlockToolUse, ID: "c2", Name: "bare"}}},
			{Role: session.RoleUser, Blocks: []session.Block{
				{Type: session.BlockToolResult, ToolUseID: "c1", Text: "ok", Images: []session.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}},
				{Type: session.BlockToolResult, ToolUseID: "c2", Text: "", IsError: true},
				{Type: session.BlockToolResult, ToolUseID: "c3", Text: ""},
			}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockThinking, Text: "only thinking"}}},
		}}
	for _, base := range []string{"https://api.openai.com/v1", "http://127.0.0.1:1/v1"} {
		for _, maxTokens := range []int{0, 77} {
			p, err := New(&Options{APIKey: "k", BaseURL: base, MaxTokens: maxTokens})
			if err != nil {
				t.Fatal(err)
			}
			for round := range 2 { // encoded, then kept
				for _, stream := range []bool{true, false} {
					what := fmt.Sprintf("%s, max tokens %d, round %d, stream %v", base, maxTokens, round, stream)
					c, err := p.params(req)
					if err != nil {
						t.Fatal(err)
					}
					c.req.Stream = stream
					if !stream {
						c.req.StreamOptions = nil
					}
					got, err := c.body()
					if err != nil {
						t.Fatal(err)
					}
					params, err := p.sdkParams(req)
					if err != nil {
						t.Fatal(err)
					}
					if !stream {
						params.StreamOptions = sdkNoStreamOptions
					}
					want, err := params.MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					if stream {
						var m map[string]any
						if err := json.Unmarshal(want, &m); err != nil {
							t.Fatal(err)
						}
						m["stream"] = true
						if want, err = json.Marshal(m); err != nil {
							t.Fatal(err)
						}
					}
					providertest.EqualJSON(t, what, got, want)
				}
			}
		}
	}
}

// BenchmarkEncodeLongTranscript: see providertest.BenchEncodeLongTranscript.
// go test -run '^$' -bench EncodeLongTranscript -benchmem ./provider/openai
func BenchmarkEncodeLongTranscript(b *testing.B) {
	providertest.BenchEncodeLongTranscript(b, func() func(provider.Request) ([]byte, error) {
		p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
		if err != nil {
			b.Fatal(err)
		}
		return func(req provider.Request) ([]byte, error) {
			c, err := p.params(req)
			if err != nil {
				return nil, err
			}
			c.req.Stream = true
			return c.body()
		}
	})
}
