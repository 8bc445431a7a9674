package openai

import (
	"encoding/json"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// Reasoning. Chat Completions has no reasoning field of its own; the
// servers that reason put it beside the content, in a message (or a
// stream's delta) field (reasoningFields):
// "reasoning_content" (DeepSeek, vLLM, llama.cpp) or "reasoning" (Ollama,
// OpenRouter, newer vLLM). It is kept as a thinking block without a
// signature. Servers that check it (DeepSeek's thinking mode) require the
// reasoning of the current tool use (the assistant messages since the last
// prompt) back as "reasoning_content", and ignore or refuse older
// reasoning, so only that is sent.

// reasoningOf returns the reasoning text of a message's or delta's
// reasoning fields, read in the order "reasoning_content", "reasoning"; ""
// when there is none (or it is not a string).
func reasoningOf(f reasoningFields) string {
	for _, raw := range []json.RawMessage{f.ReasoningContent, f.Reasoning} {
		if len(raw) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
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
