package openai

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// emptyAnswer reports a streamed answer with no text and no tool call:
// what servers that cannot stream tool calls send back (some llama.cpp and
// vLLM builds). Such an answer is asked again without streaming.
func emptyAnswer(r provider.Response) bool {
	for _, b := range r.Blocks {
		if b.Type == session.BlockToolUse || b.Text != "" {
			return false
		}
	}
	return true
}

// whole sends one request without streaming and turns the completion into
// a response, emitting its text and tool inputs as one delta each.
func (p *Provider) whole(ctx context.Context, c call, model string, emit func(provider.Delta)) (provider.Response, error) {
	res, failed, err := p.send(ctx, c, false)
	if err == nil && failed != nil {
		return provider.Response{}, p.explain(nil, failed, model)
	}
	var cp completion
	if err == nil {
		err = json.NewDecoder(res.Body).Decode(&cp)
		_ = res.Body.Close()
		if err != nil {
			err = fmt.Errorf("openai: decode the completion: %w", err)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, nil, model)
	}
	resp := provider.Response{Model: cp.Model, Usage: session.Usage{InputTokens: cp.Usage.PromptTokens, OutputTokens: cp.Usage.CompletionTokens}}
	if len(cp.Choices) == 0 {
		resp.StopReason = stopReason("stop", false)
		return resp, nil
	}
	ch := cp.Choices[0]
	if r := reasoningOf(ch.Message.reasoningFields); r != "" {
		resp.Blocks = append(resp.Blocks, session.Block{Type: session.BlockThinking, Text: r})
		emit(provider.Delta{Index: 0, Kind: provider.DeltaThinking, Text: r})
	}
	if text := ch.Message.Content; text != "" {
		i := len(resp.Blocks)
		resp.Blocks = append(resp.Blocks, session.Block{Type: session.BlockText, Text: text})
		emit(provider.Delta{Index: i, Kind: provider.DeltaText, Text: text})
	}
	for _, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		i := len(resp.Blocks)
		resp.Blocks = append(resp.Blocks, session.Block{Type: session.BlockToolUse, ID: id, Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments)})
		emit(provider.Delta{Index: i, Kind: provider.DeltaToolInput, Name: tc.Function.Name})
		emit(provider.Delta{Index: i, Kind: provider.DeltaToolInput, Text: tc.Function.Arguments})
	}
	resp.StopReason = stopReason(ch.FinishReason, len(ch.Message.ToolCalls) > 0)
	return resp, nil
}
