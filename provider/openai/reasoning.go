package openai

import (
	"encoding/json"

	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// Reasoning. Chat Completions has no reasoning field of its own; the
// servers that reason put it beside the content, in a message (or a
// stream's delta) field the SDK keeps among its extra fields:
// "reasoning_content" (DeepSeek, vLLM, llama.cpp) or "reasoning" (Ollama,
// OpenRouter, newer vLLM). It is kept as a thinking block without a
// signature. Servers that check it (DeepSeek's thinking mode) require the
// reasoning of the current tool use (the assistant messages since the last
// prompt) back as "reasoning_content", and ignore or refuse older
// reasoning, so only that is sent.

// reasoningFields are the fields that carry reasoning, in the order read.
var reasoningFields = []string{"reasoning_content", "reasoning"}

// reasoningOf returns the reasoning text among a message's or delta's
// extra fields, "" when there is none.
func reasoningOf(extra map[string]respjson.Field) string {
	for _, name := range reasoningFields {
		// Extra fields are never Valid (the SDK has no type for them):
		// their raw JSON is what there is.
		f, ok := extra[name]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// lastPrompt is the index of the last user message with text in the
// transcript (the prompt the current tool use answers), -1 if none.
func lastPrompt(in []provider.Message) int {
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Role != session.RoleUser {
			continue
		}
		for _, b := range in[i].Blocks {
			if b.Type == session.BlockText && b.Text != "" {
				return i
			}
		}
	}
	return -1
}

// reasoningText joins a message's unsigned thinking blocks: the reasoning
// this provider kept (a signed block is Anthropic's, meaningless here).
func reasoningText(m provider.Message) string {
	var s string
	for _, b := range m.Blocks {
		if b.Type == session.BlockThinking && b.Signature == "" {
			s += b.Text
		}
	}
	return s
}
