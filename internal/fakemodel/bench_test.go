package fakemodel_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// longRequest is an Anthropic Messages request of n tool-using turns, the
// shape lite-agent sends when it resumes a long session: a system block and
// tools with cache breakpoints, then per turn a prompt, an answer calling a
// tool, the tool's result and a final answer, the last message marked too.
func longRequest(n int) []byte {
	type block map[string]any
	cache := map[string]string{"type": "ephemeral"}
	var msgs []map[string]any
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": []block{{"type": "text", "text": fmt.Sprintf("prompt %d: please change file %d", i, i)}}},
			map[string]any{"role": "assistant", "content": []block{
				{"type": "text", "text": "Let me edit it."},
				{"type": "tool_use", "id": id, "name": "edit", "input": map[string]string{"path": "f.go", "old_string": "a", "new_string": "b"}},
			}},
			map[string]any{"role": "user", "content": []block{{"type": "tool_result", "tool_use_id": id, "content": "edited f.go"}}},
			map[string]any{"role": "assistant", "content": []block{{"type": "text", "text": fmt.Sprintf("Done: I changed a to b in f.go for prompt %d, as asked. Anything else?", i)}}},
		)
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": []block{{"type": "text", "text": "one more", "cache_control": cache}}})
	var tools []map[string]any
	for _, name := range []string{"read", "write", "edit", "bash", "grep", "glob", "web_fetch"} {
		tools = append(tools, map[string]any{"name": name, "description": "the " + name + " tool", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]string{"type": "string"}}}})
	}
	tools[len(tools)-1]["cache_control"] = cache
	body, err := json.Marshal(map[string]any{
		"model": "claude-sonnet-4-5", "max_tokens": 8192, "stream": true,
		"system":   []block{{"type": "text", "text": "You are a coding agent.", "cache_control": cache}},
		"tools":    tools,
		"messages": msgs,
	})
	if err != nil {
		panic(err)
	}
	return body
}

// BenchmarkServeLongRequest posts the request of a 500-turn resume (about
// 260 KB) to the server again and again, as the long-session benchmarks of
// whole processes do, and reads the streamed answer: the server's share of
// their wall time.
func BenchmarkServeLongRequest(b *testing.B) {
	srv := start(b, `{"replies": [{"text": "done"}], "when_done": "repeat_last"}`)
	client := httpClient(b)
	body := longRequest(500)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		resp, err := client.Post(srv.URL()+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte("message_stop")) {
			b.Fatalf("status %d, %v: %s", resp.StatusCode, err, out)
		}
	}
	if reqs := srv.Requests(); len(reqs) == 0 || reqs[len(reqs)-1].Format != fakemodel.FormatAnthropic {
		b.Fatal("the server recorded no Anthropic request")
	}
}
