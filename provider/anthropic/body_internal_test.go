package anthropic

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

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
		return p.request
	})
}

// checkSameRequest fails unless request and the SDK (the params this
// package built before, marshalled by the SDK with "stream":true set) agree
// on req: the same bytes, or the same error.
func checkSameRequest(t *testing.T, p *Provider, req provider.Request) {
	t.Helper()
	got, err := p.request(req)
	var want []byte
	params, wantErr := sdkParams(p, req)
	if wantErr == nil {
		want, wantErr = sdkBody(params)
	}
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("request %#v:\n got error %v\nwant error %v", req, err, wantErr)
	}
	if string(got) != string(want) {
		t.Fatalf("request %#v:\n got %s\nwant %s", req, got, want)
	}
}

// TestRequestIsTheSDKs: the hand-written body is the SDK's, byte for byte,
// with tools, system, thinking, images, text that looks like the JSON
// around it, and the prompt cache on and off, first encoded and then kept.
func TestRequestIsTheSDKs(t *testing.T) {
	req := provider.Request{Model: "m<&>", System: `sys ,"messages":[0]`, ThinkingBudget: 2048,
		Tools: []provider.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object", "properties":{"messages":{"type":"array","default":[0],"x":"<>"}}}`)}, {Name: "u"}},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: `{"max_tokens":1,"messages":[0]} <&>`}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "t", Input: json.RawMessage(`{"messages":[0]}`)}}},
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "c1", Text: "ok",
				Images: []session.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}}}},
		}}
	for _, noCache := range []bool{false, true} {
		p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1", NoPromptCache: noCache})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // encoded, then kept
			checkSameRequest(t, p, req)
		}
		for _, r := range []provider.Request{
			{Model: "m"},
			{Model: "m", MaxTokens: 10, ThinkingBudget: 1024},
			{Model: "m", ThinkingBudget: 100},
			{Model: ""},
			{Model: "m", MaxTokens: -1},
			{Model: "m", Tools: []provider.ToolSpec{{Name: ""}}},
			{Model: "m", Tools: []provider.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[1]`)}}},
		} {
			checkSameRequest(t, p, r)
		}
	}
}

// TestRandomRequestsAreTheSDKs: random requests of random messages
// (genMessage), sent twice in a growing transcript, encode as the SDK does.
func TestRandomRequestsAreTheSDKs(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 2))
	for n := range 200 {
		p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1", NoPromptCache: n%5 == 4})
		if err != nil {
			t.Fatal(err)
		}
		req := provider.Request{Model: genText(r) + "m", System: genText(r), MaxTokens: r.IntN(3000)}
		if r.IntN(2) == 0 {
			req.ThinkingBudget = 1024 + r.IntN(2000)
		}
		for range r.IntN(3) {
			req.Tools = append(req.Tools, provider.ToolSpec{Name: genText(r) + "t", Description: genText(r)})
		}
		for range 1 + r.IntN(6) {
			req.Messages = append(req.Messages, genMessage(r))
			checkSameRequest(t, p, req)
		}
	}
}

// TestHeadersAreTheSDKs: the request carries the headers the SDK sent that
// the API reads, with the same values, to the same path.
func TestHeadersAreTheSDKs(t *testing.T) {
	got := make(chan *http.Request, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	base := srv.URL + "/proxy/"

	p, err := New(&Options{APIKey: "sk-k", BaseURL: base, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.Stream(t.Context(), provider.Request{Model: "m"}, func(provider.Delta) {})
	mine := <-got

	c := sdk.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(base), option.WithMaxRetries(0), option.WithAPIKey("sk-k"))
	s := c.Messages.NewStreaming(t.Context(), sdk.MessageNewParams{Model: "m", MaxTokens: 1})
	s.Close()
	theirs := <-got

	if mine.Method != theirs.Method || mine.URL.Path != theirs.URL.Path {
		t.Errorf("%s %s, the SDK's %s %s", mine.Method, mine.URL.Path, theirs.Method, theirs.URL.Path)
	}
	for _, h := range []string{"Authorization", "Anthropic-Version", "Content-Type", "Accept", "Anthropic-Beta", "X-Api-Key"} {
		if a, b := fmt.Sprint(mine.Header.Values(h)), fmt.Sprint(theirs.Header.Values(h)); a != b {
			t.Errorf("header %s: %s, the SDK's %s", h, a, b)
		}
	}
}
