package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

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
func (p *Provider) whole(ctx context.Context, params sdk.ChatCompletionNewParams, model string, emit func(provider.Delta)) (provider.Response, error) {
	var failed *failure
	params.StreamOptions = sdk.ChatCompletionStreamOptionsParam{}
	params, opts := request(params)
	c, err := p.client.Chat.Completions.New(ctx, params, append(opts, option.WithMiddleware(captureFailure(&failed)))...)
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, failed, model)
	}
	resp := provider.Response{Model: c.Model, Usage: session.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}}
	if len(c.Choices) == 0 {
		resp.StopReason = stopReason("stop", false)
		return resp, nil
	}
	ch := c.Choices[0]
	if r := reasoningOf(ch.Message.JSON.ExtraFields); r != "" {
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

// captureFailure keeps an error response's status, headers and body in
// *failed, for explain: the SDK cannot decode every server's error body.
func captureFailure(failed **failure) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil && res != nil && res.StatusCode >= 400 {
			body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			_ = res.Body.Close()
			res.Body = io.NopCloser(bytes.NewReader(body))
			*failed = &failure{status: res.StatusCode, header: res.Header, body: body}
		}
		return res, err
	}
}
