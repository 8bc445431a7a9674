package liteagent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestRequestPrefixStable: each request of a tool-using session repeats
// the previous one byte for byte (tools, system prompt, then every
// message), apart from where the cache breakpoints sit, so the provider's
// prompt cache finds it.
func TestRequestPrefixStable(t *testing.T) {
	var replies []fakemodel.Reply
	for i := range 3 {
		replies = append(replies,
			fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("toolu_%d", i), Name: "ls", Input: []byte(`{"path":"."}`)}}},
			fakemodel.Reply{Text: fmt.Sprintf("answer %d", i)})
	}
	srv, p := startModel(t, "anthropic", replies...)
	a := newAgent(t, p, liteagent.Options{})
	for i := range 3 {
		if _, err := a.Send(t.Context(), fmt.Sprintf("turn %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	type body struct {
		Tools    json.RawMessage   `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []json.RawMessage `json:"messages"`
	}
	strip := func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`,"cache_control":{"type":"ephemeral"}`), nil)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	for i := 1; i < len(reqs); i++ {
		var prev, next body
		if json.Unmarshal(reqs[i-1].Body, &prev) != nil || json.Unmarshal(reqs[i].Body, &next) != nil {
			t.Fatal("bodies do not decode")
		}
		if !bytes.Equal(strip(prev.Tools), strip(next.Tools)) || !bytes.Equal(strip(prev.System), strip(next.System)) {
			t.Fatalf("request %d: the tools or the system prompt changed", i+1)
		}
		if len(next.Messages) <= len(prev.Messages) {
			t.Fatalf("request %d has %d messages after %d", i+1, len(next.Messages), len(prev.Messages))
		}
		for j, m := range prev.Messages {
			if !bytes.Equal(strip(m), strip(next.Messages[j])) {
				t.Fatalf("request %d, message %d differs from the previous request's:\n%s\n%s", i+1, j, m, next.Messages[j])
			}
		}
		if !bytes.Contains(reqs[i].Body, []byte("cache_control")) {
			t.Fatalf("request %d carries no cache breakpoint", i+1)
		}
	}
}
