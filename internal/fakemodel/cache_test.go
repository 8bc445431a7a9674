package fakemodel_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// usageOf reads the usage of an Anthropic stream's message_start event.
func usageOf(t testing.TB, stream string) (input, write, read int) {
	t.Helper()
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, `"message_start"`) {
			continue
		}
		var ev struct {
			Message struct {
				Usage struct {
					Input int `json:"input_tokens"`
					Write int `json:"cache_creation_input_tokens"`
					Read  int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		u := ev.Message.Usage
		return u.Input, u.Write, u.Read
	}
	t.Fatalf("no message_start in %q", stream)
	return
}

// anthropicBody is a Messages API request: tools and system marked for
// caching, and turns user/assistant messages whose last carries a
// breakpoint.
func anthropicBody(system string, turns ...string) string {
	var msgs []string
	for i, text := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		cc := ""
		if i == len(turns)-1 {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":[{"type":"text","text":%q%s}]}`, role, text, cc))
	}
	return fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":true,
		"tools":[{"name":"read","description":%q,"input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
		"system":[{"type":"text","text":%q,"cache_control":{"type":"ephemeral"}}],
		"messages":[%s]}`, strings.Repeat("reads a file. ", 50), system, strings.Join(msgs, ","))
}

// TestAnthropicPromptCache: a request reads the longest prefix an earlier
// request wrote up to a breakpoint, and writes the rest up to its last
// breakpoint; what is not cached is input. A changed system prompt reads
// only the tools' prefix.
func TestAnthropicPromptCache(t *testing.T) {
	srv := start(t, `{"replies":[{"text":"a"}],"when_done":"repeat_last"}`)
	long := strings.Repeat("be careful. ", 100)
	first := anthropicBody(long, "hello")
	_, _, body := post(t, srv, "/v1/messages", first)
	in1, w1, r1 := usageOf(t, body)
	if r1 != 0 || w1 <= in1 || in1+w1+r1 != (len(first)+3)/4 {
		t.Fatalf("first request: input %d, write %d, read %d; want most of it written, summing to %d", in1, w1, r1, (len(first)+3)/4)
	}
	second := anthropicBody(long, "hello", "hi there", "read a.go")
	_, _, body = post(t, srv, "/v1/messages", second)
	in2, w2, r2 := usageOf(t, body)
	if r2 != w1 || w2 <= 0 || in2+w2+r2 != (len(second)+3)/4 {
		t.Fatalf("second request: input %d, write %d, read %d; want the first request's %d written tokens read", in2, w2, r2, w1)
	}
	other := anthropicBody("another system prompt", "hello")
	_, _, body = post(t, srv, "/v1/messages", other)
	_, w3, r3 := usageOf(t, body)
	if r3 <= 0 || r3 >= w1/2 || w3 <= 0 {
		t.Fatalf("changed system prompt: write %d, read %d; want only the tools (< %d) read", w3, r3, w1/2)
	}
	none := strings.ReplaceAll(second, `,"cache_control":{"type":"ephemeral"}`, "")
	_, _, body = post(t, srv, "/v1/messages", none)
	if in, w, r := usageOf(t, body); w != 0 || r != 0 || in != (len(none)+3)/4 {
		t.Fatalf("no breakpoints: input %d, write %d, read %d; want no cache use", in, w, r)
	}
}

// TestOpenAIPromptCache: OpenAI caches by itself a prefix sent before, from
// 1024 tokens on, in steps of 128, and counts it in
// prompt_tokens_details.cached_tokens.
func TestOpenAIPromptCache(t *testing.T) {
	srv := start(t, `{"replies":[{"text":"a"}],"when_done":"repeat_last"}`)
	sys := strings.Repeat("you are an agent. ", 400) // ~1,800 tokens
	body := func(user string) string {
		return fmt.Sprintf(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`, sys, user)
	}
	cached := func(stream string) (prompt, cached int) {
		for _, line := range strings.Split(stream, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || !strings.Contains(data, `"prompt_tokens"`) {
				continue
			}
			var c struct {
				Usage struct {
					Prompt  int `json:"prompt_tokens"`
					Details struct {
						Cached int `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				} `json:"usage"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatal(err)
			}
			return c.Usage.Prompt, c.Usage.Details.Cached
		}
		t.Fatalf("no usage chunk in %q", stream)
		return
	}
	_, _, s1 := post(t, srv, "/v1/chat/completions", body("one"))
	if p, c := cached(s1); c != 0 || p == 0 {
		t.Fatalf("first request: prompt %d, cached %d; want nothing cached", p, c)
	}
	_, _, s2 := post(t, srv, "/v1/chat/completions", body("two"))
	p, c := cached(s2)
	if c < 1024 || c%128 != 0 || c > p {
		t.Fatalf("second request: prompt %d, cached %d; want the system prompt's tokens, a multiple of 128 of at least 1024", p, c)
	}
}

// TestContextWindow: a request over the window is refused with each API's
// own error, and uses no reply.
func TestContextWindow(t *testing.T) {
	srv := start(t, `{"context_window":100,"replies":[{"text":"fits"}]}`)
	big := anthropicBody(strings.Repeat("x", 2000), "hello")
	status, _, body := post(t, srv, "/v1/messages", big)
	want := fmt.Sprintf("prompt is too long: %d tokens > 100 maximum", (len(big)+3)/4)
	if status != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, want) {
		t.Fatalf("anthropic: %d %s; want 400 invalid_request_error %q", status, body, want)
	}
	status, _, body = post(t, srv, "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"`+strings.Repeat("y", 1000)+`"}]}`)
	if status != 400 || !strings.Contains(body, `"code":"context_length_exceeded"`) || !strings.Contains(body, "maximum context length is 100 tokens") {
		t.Fatalf("openai: %d %s; want 400 context_length_exceeded", status, body)
	}
	if srv.Remaining() != 1 {
		t.Fatal("a refused request used a reply")
	}
	status, _, _ = post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 200 {
		t.Fatalf("a request that fits: %d", status)
	}
}

// TestSummaryRule: a summary request is answered by the rule at any point,
// leaving the scripted replies in step.
func TestSummaryRule(t *testing.T) {
	srv := start(t, `{"summary":{"marker":"SUMMARISE-NOW","text":"the summary"},"replies":[{"text":"scripted"}]}`)
	_, _, body := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":"SUMMARISE-NOW please"}]}]}`)
	if streamText(body) != "the summary" || srv.Remaining() != 1 {
		t.Fatalf("summary request answered %q, %d replies left", body, srv.Remaining())
	}
	_, _, body = post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"go on"}]}`)
	if streamText(body) != "scripted" {
		t.Fatalf("next request answered %q", body)
	}
}

// TestThinkingRules: with thinking enabled, a reply's thinking streams with
// a signature; the next request of the tool use must send it back first and
// unchanged, as the API requires.
func TestThinkingRules(t *testing.T) {
	srv := start(t, `{"replies":[{"thinking":"I should read it.","tool_calls":[{"id":"toolu_1","name":"read","input":{"path":"a"}}]},{"text":"done"}],"when_done":"repeat_last"}`)
	first := `{"model":"m","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"read a"}]}`
	_, _, stream := post(t, srv, "/v1/messages", first)
	var thinking, sig strings.Builder
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Delta struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			} `json:"delta"`
		}
		json.Unmarshal([]byte(data), &ev)
		thinking.WriteString(ev.Delta.Thinking)
		sig.WriteString(ev.Delta.Signature)
	}
	if thinking.String() != "I should read it." || sig.Len() == 0 {
		t.Fatalf("stream thinking %q signature %q", thinking.String(), sig.String())
	}
	next := func(assistant string) (int, string) {
		status, _, body := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":2000,"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[
			{"role":"user","content":"read a"},
			{"role":"assistant","content":[`+assistant+`{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"A"}]}]}`)
		return status, body
	}
	if status, body := next(""); status != 400 || !strings.Contains(body, "Expected `thinking`") {
		t.Fatalf("without the thinking block: %d %s", status, body)
	}
	if status, body := next(fmt.Sprintf(`{"type":"thinking","thinking":"I should read it.","signature":%q},`, sig.String()+"x")); status != 400 || !strings.Contains(body, "Invalid `signature`") {
		t.Fatalf("with a changed signature: %d %s", status, body)
	}
	if status, body := next(fmt.Sprintf(`{"type":"thinking","thinking":"I should read it.","signature":%q},`, sig.String())); status != 200 || streamText(body) != "done" {
		t.Fatalf("with the thinking block sent back: %d %s", status, body)
	}
}

// streamText joins the text deltas of an Anthropic stream.
func streamText(stream string) string {
	var b strings.Builder
	for _, line := range strings.Split(stream, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil {
			b.WriteString(ev.Delta.Text)
		}
	}
	return b.String()
}
