package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/providertest"
	"github.com/lite-agent/lite-agent/session"
)

// TestBodyIsTheSDKsEncoding: the body assembled from kept messages is the
// JSON the SDK makes of the same params, with a system prompt, tools,
// reasoning, images and text that look like the slot the messages go in.
func TestBodyIsTheSDKsEncoding(t *testing.T) {
	p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Model: "m", System: `sys "messages":[0]`,
		Tools: []provider.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"messages":{"type":"array","default":[0]}}}`)}},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: `{"messages":[0]} <&>`}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockThinking, Text: "think"}, {Type: session.BlockToolUse, ID: "c1", Name: "t", Input: json.RawMessage(`{"messages":[0]}`)}}},
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

// BenchmarkEncodeLongTranscript: building and encoding the request body
// of a 500-turn transcript (what is sent), by a provider that has sent the
// same transcript before ("kept") and by a fresh one ("fresh").
// go test -run '^$' -bench EncodeLongTranscript -benchmem ./provider/openai
func BenchmarkEncodeLongTranscript(b *testing.B) {
	req := provider.Request{Model: "m", System: "sys", Messages: providertest.LongTranscript(500)}
	for _, kept := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "kept"}[kept], func(b *testing.B) {
			p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				b.Fatal(err)
			}
			if kept {
				p.params(req)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !kept {
					p.encoded = provider.NewEncoded()
				}
				params, err := p.params(req)
				if err != nil {
					b.Fatal(err)
				}
				sent, ok, err := body(params)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				b.SetBytes(int64(len(sent)))
			}
		})
	}
}
