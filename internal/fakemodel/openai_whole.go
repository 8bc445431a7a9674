package fakemodel

import (
	"encoding/json"
	"net/http"
)

// openAICompletion is a whole (non-streamed) chat.completion object, the
// answer to a request with "stream": false.
func openAICompletion(p *plan) []byte {
	msg := map[string]any{"role": "assistant", "content": p.reply.Text, "refusal": nil}
	if p.thinking != "" {
		msg["reasoning_content"] = p.thinking
	}
	if len(p.reply.ToolCalls) > 0 {
		var calls []any
		for i, tc := range p.reply.ToolCalls {
			c := map[string]any{"type": "function", "function": map[string]any{"name": tc.Name, "arguments": p.inputs[i]}}
			if !p.reply.OmitToolIDs {
				c["id"] = p.toolIDs[i]
			}
			calls = append(calls, c)
		}
		msg["tool_calls"] = calls
	}
	b, _ := json.Marshal(map[string]any{
		"id":                 p.messageID,
		"object":             "chat.completion",
		"created":            p.created,
		"model":              p.model,
		"system_fingerprint": "fp_fakemodel",
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": openAIFinishReason(p.stopReason)}},
		"usage": map[string]any{
			"prompt_tokens":     p.usage.InputTokens,
			"completion_tokens": p.usage.OutputTokens,
			"total_tokens":      p.usage.InputTokens + p.usage.OutputTokens,
		},
	})
	return b
}

// writeCompletion answers a non-streaming request whole.
func writeCompletion(w http.ResponseWriter, p *plan, seq int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-request-id", requestID(seq))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAICompletion(p))
}
