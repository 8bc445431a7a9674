package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The Anthropic Messages API streaming format: server-sent events, each
// with an "event:" line naming its type and a "data:" line holding the
// same type in a JSON object.

// anthropicFrames builds the events of a streamed message.
func anthropicFrames(p *plan) []frame {
	var fs []frame
	add := func(kind int, event string, data any) {
		fs = append(fs, frame{kind: kind, data: sse(event, data)})
	}
	add(frameHead, "message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id":            p.messageID,
			"type":          "message",
			"role":          "assistant",
			"model":         p.model,
			"content":       []any{},
			"stop_reason":   nil,
			"stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                p.usage.InputTokens,
				"cache_creation_input_tokens": p.usage.CacheCreationInputTokens,
				"cache_read_input_tokens":     p.usage.CacheReadInputTokens,
				"output_tokens":               1,
			},
		},
	})
	add(frameHead, "ping", map[string]any{"type": "ping"})
	index := 0
	if p.thinking != "" {
		add(frameHead, "content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""},
		})
		for _, piece := range split(p.thinking, p.chunk) {
			add(frameDelta, "content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "thinking_delta", "thinking": piece},
			})
		}
		add(frameDelta, "content_block_delta", map[string]any{
			"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "signature_delta", "signature": signature(p.thinking)},
		})
		add(frameHead, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if p.reply.Text != "" {
		add(frameHead, "content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""},
		})
		for _, piece := range split(p.reply.Text, p.chunk) {
			add(frameDelta, "content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece},
			})
		}
		add(frameHead, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, tc := range p.reply.ToolCalls {
		add(frameHead, "content_block_start", map[string]any{
			"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": p.toolIDs[i], "name": tc.Name, "input": map[string]any{}},
		})
		// The real API opens every tool input with an empty fragment.
		pieces := append([]string{""}, split(p.inputs[i], p.chunk)...)
		for _, piece := range pieces {
			add(frameDelta, "content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": piece},
			})
		}
		add(frameHead, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	add(frameTail, "message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": p.stopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": p.usage.OutputTokens},
	})
	add(frameTail, "message_stop", map[string]any{"type": "message_stop"})
	return fs
}

// anthropicErrorType is the error type the Messages API uses for a fault
// kind.
func anthropicErrorType(kind string) string {
	switch kind {
	case FaultRateLimit:
		return "rate_limit_error"
	case FaultOverloaded:
		return "overloaded_error"
	case FaultServerError:
		return "api_error"
	case FaultAuth:
		return "authentication_error"
	case FaultPermission:
		return "permission_error"
	case FaultModelNotFound:
		return "not_found_error"
	default:
		return "invalid_request_error"
	}
}

// anthropicErrorMessage is the message the Messages API gives for a fault
// kind.
func anthropicErrorMessage(kind, model string) string {
	switch kind {
	case FaultRateLimit:
		return "This request would exceed the rate limit for your organization. Please retry after the time in the retry-after header."
	case FaultOverloaded:
		return "Overloaded"
	case FaultServerError:
		return "Internal server error"
	case FaultAuth:
		return "invalid x-api-key"
	case FaultPermission:
		return "Your API key does not have permission to use the specified resource."
	case FaultModelNotFound:
		return "model: " + model
	case FaultContextTooLong:
		return "prompt is too long: 215317 tokens > 200000 maximum"
	default:
		return "invalid request"
	}
}

// anthropicErrorBody is an error response body or error event.
func anthropicErrorBody(errType, message, requestID string) []byte {
	return marshalPlain(map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": errType, "message": message},
		"request_id": requestID,
	})
}

// sse encodes one server-sent event.
func sse(event string, data any) []byte {
	b, err := json.Marshal(data)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: encode %s event: %v", event, err))
	}
	out := make([]byte, 0, len(event)+len(b)+16)
	if event != "" {
		out = append(out, "event: "...)
		out = append(out, event...)
		out = append(out, '\n')
	}
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, '\n', '\n')
}

// marshalPlain encodes v as JSON without escaping <, > and &, as the real
// APIs write their error messages ("… tokens > 200000 maximum").
func marshalPlain(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // maps of strings always encode
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
