package openai_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCachedTokensAndReasoningEffort: OpenAI's cached_tokens becomes the
// usage's cache reads (inside its input), and a reasoning effort is sent.
func TestCachedTokensAndReasoningEffort(t *testing.T) {
	srv := start(t, `{"replies": [{"text": "one"}], "when_done": "repeat_last"}`)
	p := newProvider(t, srv, 0)
	req := prompt("hello")
	req.System = strings.Repeat("You are careful. ", 400)
	req.ReasoningEffort = "high"
	if _, _, err := collect(t, t.Context(), p, req); err != nil {
		t.Fatal(err)
	}
	resp, _, err := collect(t, t.Context(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if u := resp.Usage; u.CacheReadTokens < 1024 || u.CacheReadTokens > u.InputTokens || u.CacheWriteTokens != 0 {
		t.Fatalf("usage %+v; want the repeated prompt read from the cache", u)
	}
	var body struct {
		Effort string `json:"reasoning_effort"`
	}
	json.Unmarshal(srv.Requests()[0].Body, &body)
	if body.Effort != "high" {
		t.Fatalf("reasoning_effort %q", body.Effort)
	}
}
