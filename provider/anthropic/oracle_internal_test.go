package anthropic

import (
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lite-agent/lite-agent/provider"
)

// sdkParams is the request for req as the SDK's params, built the way this
// package built them before it wrote the body by hand: the oracle that
// request is checked against (TestRequestIsTheSDKs).
func sdkParams(p *Provider, req provider.Request) (sdk.MessageNewParams, error) {
	if req.Model == "" {
		return sdk.MessageNewParams{}, errors.New("anthropic: no model is set; name one, such as claude-sonnet-4-5")
	}
	if req.MaxTokens < 0 {
		return sdk.MessageNewParams{}, fmt.Errorf("anthropic: MaxTokens %d is negative; use 0 for the default", req.MaxTokens)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	thinking := req.ThinkingBudget > 0
	last, before := -1, -1
	if p.cache {
		last, before = marked(req.Messages)
	}
	msgs := []sdk.MessageParam{}
	for i, m := range req.Messages {
		mp, ok, err := sdkMessage(i, m, thinking)
		if err != nil {
			return sdk.MessageNewParams{}, err
		}
		if !ok {
			continue
		}
		if (i == last || i == before) && mp.OfUser != nil {
			u := mp.OfUser
			if c := u.Content[len(u.Content)-1].GetCacheControl(); c != nil {
				*c = sdk.NewCacheControlEphemeralParam()
			}
		}
		msgs = append(msgs, mp)
	}
	tools, err := sdkTools(req.Tools)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(req.Model),
		MaxTokens: int64(maxTokens),
		Messages:  msgs,
		Tools:     tools,
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	if thinking {
		if req.ThinkingBudget < minThinkingBudget {
			return sdk.MessageNewParams{}, fmt.Errorf("anthropic: a thinking budget of %d tokens is below the API's minimum of %d", req.ThinkingBudget, minThinkingBudget)
		}
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(req.ThinkingBudget))
		if params.MaxTokens <= int64(req.ThinkingBudget) {
			params.MaxTokens = int64(req.ThinkingBudget + maxTokens)
		}
	}
	if p.cache {
		cc := sdk.NewCacheControlEphemeralParam()
		if n := len(params.Tools); n > 0 {
			if c := params.Tools[n-1].GetCacheControl(); c != nil {
				*c = cc
			}
		}
		if n := len(params.System); n > 0 {
			params.System[n-1].CacheControl = cc
		}
	}
	return params, nil
}

// sdkTools maps tool specs to the SDK's tool params, each input schema as
// given.
func sdkTools(specs []provider.ToolSpec) ([]sdk.ToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]sdk.ToolUnionParam, len(specs))
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("anthropic: tool %d has no name", i+1)
		}
		schema := s.InputSchema
		if len(schema) == 0 {
			schema = emptySchema
		}
		if !isObject(schema) {
			return nil, fmt.Errorf("anthropic: tool %q: the input schema is not a JSON object", s.Name)
		}
		t := sdk.ToolParam{Name: s.Name, InputSchema: param.Override[sdk.ToolInputSchemaParam](schema)}
		if s.Description != "" {
			t.Description = sdk.String(s.Description)
		}
		out[i] = sdk.ToolUnionParam{OfTool: &t}
	}
	return out, nil
}

// sdkBody is what the SDK sends for params: their encoding with
// "stream":true set last (the SDK's NewStreaming sets it so).
func sdkBody(params sdk.MessageNewParams) ([]byte, error) {
	b, err := params.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b[:len(b)-1], `,"stream":true}`...), nil
}
