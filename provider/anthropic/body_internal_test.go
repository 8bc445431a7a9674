package anthropic

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/providertest"
	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkEncodeLongTranscript: see providertest.BenchEncodeLongTranscript.
// go test -run '^$' -bench EncodeLongTranscript -benchmem ./provider/anthropic
func BenchmarkEncodeLongTranscript(b *testing.B) {
	providertest.BenchEncodeLongTranscript(b, func() func(provider.Request) ([]byte, error) {
		p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
		if err != nil {
			b.Fatal(err)
		}
		return func(req provider.Request) ([]byte, error) {
			params, err := p.params(req)
			if err != nil {
				return nil, err
			}
			sent, ok, err := body(params)
			if err == nil && !ok {
				err = fmt.Errorf("the SDK's encoding has no messages slot")
			}
			return sent, err
		}
	})
}

// TestBodyIsTheSDKsEncoding: the body assembled from kept messages is the
// JSON the SDK makes of the same params, with tools, system, thinking,
// images and text that look like the slot the messages go in.
func TestBodyIsTheSDKsEncoding(t *testing.T) {
	p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Model: "m", System: `sys ,"messages":[0]`, ThinkingBudget: 2048,
		Tools: []provider.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"messages":{"type":"array","default":[0]}}}`)}},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: `{"max_tokens":1,"messages":[0]} <&>`}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "t", Input: json.RawMessage(`{"messages":[0]}`)}}},
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "c1", Text: "ok",
				Images: []session.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}}}},
		}}
	for round := range 2 { // encoded, then kept
		params, err := p.params(req)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := body(params)
		if err != nil || !ok {
			t.Fatalf("round %d: body: ok %v, %v", round, ok, err)
		}
		want, err := params.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		providertest.EqualJSON(t, fmt.Sprintf("round %d: the body", round), got, want)
	}
}
