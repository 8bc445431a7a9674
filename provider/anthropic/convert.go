package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// params builds the API request for req.
func (p *Provider) params(req provider.Request) (sdk.MessageNewParams, error) {
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
	msgs, err := messages(req.Messages, req.ThinkingBudget > 0)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	tools, err := toolParams(req.Tools)
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
	if req.ThinkingBudget > 0 {
		if req.ThinkingBudget < minThinkingBudget {
			return sdk.MessageNewParams{}, fmt.Errorf("anthropic: a thinking budget of %d tokens is below the API's minimum of %d", req.ThinkingBudget, minThinkingBudget)
		}
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(req.ThinkingBudget))
		if params.MaxTokens <= int64(req.ThinkingBudget) {
			// The budget counts toward max_tokens, which must exceed it.
			params.MaxTokens = int64(req.ThinkingBudget + maxTokens)
		}
	}
	if p.cache {
		markCache(&params)
	}
	return params, nil
}

// minThinkingBudget is the smallest thinking budget the API takes.
const minThinkingBudget = 1024

// markCache puts the prompt-cache breakpoints (at most 4, as the API
// allows) where successive requests of a session share their prefix: the
// last tool (caching every tool), the system prompt, the last user message
// (this request's whole transcript) and the user message before it (where
// the previous request's breakpoint was, so its cache is found even when
// many blocks were added since). Nothing else in the request changes turn
// to turn, so the prefix up to each breakpoint is the same bytes.
func markCache(params *sdk.MessageNewParams) {
	cc := sdk.NewCacheControlEphemeralParam()
	if n := len(params.Tools); n > 0 {
		if c := params.Tools[n-1].GetCacheControl(); c != nil {
			*c = cc
		}
	}
	if n := len(params.System); n > 0 {
		params.System[n-1].CacheControl = cc
	}
	marked := 0
	for i := len(params.Messages) - 1; i >= 0 && marked < 2; i-- {
		u := params.Messages[i].OfUser
		if u == nil || len(u.Content) == 0 {
			continue
		}
		if c := u.Content[len(u.Content)-1].GetCacheControl(); c != nil {
			*c = cc
			marked++
		}
	}
}

// messages maps the transcript to message params. Empty text blocks are
// dropped (the API refuses them), and so are messages left with no
// blocks. In a user message, tool results go first, as the API requires.
//
// Thinking blocks are sent back, first in their message and unchanged, when
// thinking is on (the API requires those of the current tool use); without
// it they are left out.
func messages(in []provider.Message, thinking bool) ([]sdk.MessageParam, error) {
	out := make([]sdk.MessageParam, 0, len(in))
	for i, m := range in {
		var results, others []sdk.ContentBlockParamUnion
		for j, b := range m.Blocks {
			switch b.Type {
			case session.BlockThinking, session.BlockRedactedThinking:
				if !thinking || m.Role != session.RoleAssistant || (b.Type == session.BlockThinking && b.Signature == "") {
					continue // unsigned: another provider's reasoning, which the API would refuse
				}
				if b.Type == session.BlockThinking {
					others = append(others, sdk.NewThinkingBlock(b.Signature, b.Text))
				} else {
					others = append(others, sdk.NewRedactedThinkingBlock(b.Text))
				}
			case session.BlockText:
				if b.Text != "" {
					others = append(others, sdk.NewTextBlock(b.Text))
				}
			case session.BlockToolUse:
				if m.Role != session.RoleAssistant {
					return nil, fmt.Errorf("anthropic: message %d (%s), block %d: a tool_use block belongs in an assistant message", i+1, m.Role, j+1)
				}
				input := b.Input
				if len(input) == 0 {
					input = json.RawMessage("{}")
				}
				if !json.Valid(input) {
					return nil, fmt.Errorf("anthropic: message %d, block %d: tool_use %s has invalid JSON input", i+1, j+1, b.ID)
				}
				others = append(others, sdk.NewToolUseBlock(b.ID, input, b.Name))
			case session.BlockToolResult:
				if m.Role != session.RoleUser {
					return nil, fmt.Errorf("anthropic: message %d (%s), block %d: a tool_result block belongs in a user message", i+1, m.Role, j+1)
				}
				tr := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
				if b.Text != "" {
					tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Text}}}
				}
				for _, im := range b.Images {
					src := sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(im.Data), MediaType: sdk.Base64ImageSourceMediaType(im.MediaType)}
					tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &src}}})
				}
				if b.IsError {
					tr.IsError = sdk.Bool(true)
				}
				results = append(results, sdk.ContentBlockParamUnion{OfToolResult: &tr})
			default:
				return nil, fmt.Errorf("anthropic: message %d, block %d: block type %q is not supported", i+1, j+1, b.Type)
			}
		}
		blocks := append(results, others...)
		if len(blocks) == 0 {
			continue
		}
		switch m.Role {
		case session.RoleUser:
			out = append(out, sdk.NewUserMessage(blocks...))
		case session.RoleAssistant:
			out = append(out, sdk.NewAssistantMessage(blocks...))
		default:
			return nil, fmt.Errorf("anthropic: message %d: role %q is neither %q nor %q", i+1, m.Role, session.RoleUser, session.RoleAssistant)
		}
	}
	return out, nil
}

// emptySchema is the input schema of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolParams maps tool specs to tool params, sending each input schema as
// given.
func toolParams(specs []provider.ToolSpec) ([]sdk.ToolUnionParam, error) {
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
		var obj map[string]any
		if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("anthropic: tool %q: the input schema is not a JSON object", s.Name)
		}
		t := sdk.ToolParam{
			Name:        s.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
		}
		if s.Description != "" {
			t.Description = sdk.String(s.Description)
		}
		out[i] = sdk.ToolUnionParam{OfTool: &t}
	}
	return out, nil
}
