package fakemodel

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// Extended thinking (Anthropic format). A reply's Thinking is streamed, when
// the request enables thinking, as a thinking block before the text: its
// text in thinking_delta events, then its signature in a signature_delta.
// The signature is derived from the text, so the server can check that a
// thinking block sent back is the one it wrote. As the API does, the server
// refuses (400 invalid_request_error) a request that sends a thinking block
// whose signature does not match, and, with thinking enabled, one whose
// last assistant message holds tool calls the server made after thinking
// but does not start with that thinking block.

// Signature is the signature the server gives a thinking block of this
// text, for tests that check a block came back unchanged.
func Signature(thinking string) string { return signature(thinking) }

// signature is the signature of a thinking block's text.
func signature(thinking string) string {
	sum := sha256.Sum256([]byte("fakemodel thinking\x00" + thinking))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// checkThinking returns the API's complaint about the thinking blocks of a
// request, "" when there is none. Called with s.mu held.
func (s *Server) checkThinking(v view) string {
	if v.format == FormatOpenAI {
		return s.checkReasoning(v)
	}
	for _, b := range v.thinkingBlocks {
		if b.Signature != signature(b.Thinking) {
			return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", b.msg, b.idx)
		}
	}
	if !v.thinking {
		return ""
	}
	for _, b := range v.lastAssistant {
		want, ok := s.thought[b.ID]
		if b.Type != "tool_use" || !ok {
			continue
		}
		first := "nothing"
		if len(v.lastAssistant) > 0 {
			first = v.lastAssistant[0].Type
			if first == "thinking" && v.lastAssistant[0].Signature == want {
				return ""
			}
		}
		return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with the thinking block that preceded its tool_use blocks; send the thinking blocks of the current tool use back unchanged, or disable `thinking`.", v.lastAssistantN, first)
	}
	return ""
}

// Reasoning (OpenAI format). A reply's Thinking is streamed as the
// "reasoning_content" of the deltas before the content, as DeepSeek, vLLM
// and llama.cpp send it (in a whole answer: the message's
// "reasoning_content"). As DeepSeek's thinking mode does, the server
// refuses a request whose last assistant message holds tool calls it made
// after reasoning, with no prompt after it (the tool use goes on), unless
// that message carries the same reasoning back as "reasoning_content".

// checkReasoning is checkThinking for the OpenAI format. Called with s.mu
// held.
func (s *Server) checkReasoning(v view) string {
	if v.promptAfter {
		return ""
	}
	for _, b := range v.lastAssistant {
		want, ok := s.thought[b.ID]
		if b.Type != "tool_use" || !ok {
			continue
		}
		if r := v.lastAssistant[0]; r.Type == "reasoning" && signature(r.Thinking) == want {
			return ""
		}
		return fmt.Sprintf("messages[%d]: the assistant message that made tool calls after reasoning must carry that reasoning back unchanged as `reasoning_content` while its tool use goes on", v.lastAssistantN)
	}
	return ""
}
