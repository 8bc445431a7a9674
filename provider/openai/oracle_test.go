package openai

// The SDK oracle: the request the provider built with the official SDK
// before it wrote its wire code by hand (wire.go), kept to check that code.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// sdkParams builds the SDK's params for req, as the provider did.
func (p *Provider) sdkParams(req provider.Request) (sdk.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return sdk.ChatCompletionNewParams{}, errors.New("openai: no model is set; name one, such as gpt-4.1 (or a local model, such as qwen3 for Ollama)")
	}
	if req.MaxTokens < 0 {
		return sdk.ChatCompletionNewParams{}, fmt.Errorf("openai: MaxTokens %d is negative; use 0 for the default", req.MaxTokens)
	}
	msgs, err := sdkMessages(req.System, req.Messages)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := sdkToolParams(req.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	params := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: sdk.Bool(true)},
	}
	if req.ReasoningEffort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	if maxTokens > 0 {
		// OpenAI's newer models take only max_completion_tokens; the
		// servers that copy the API know max_tokens.
		if p.official {
			params.MaxCompletionTokens = sdk.Int(int64(maxTokens))
		} else {
			params.MaxTokens = sdk.Int(int64(maxTokens))
		}
	}
	return params, nil
}

// message maps the transcript's message i to chat messages (none for an
// assistant message with neither text nor calls); reasoning sends its
// reasoning back as a field.
func sdkMessage(i int, m provider.Message, reasoning bool) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var texts []string
	var calls []sdk.ChatCompletionMessageToolCallUnionParam
	var results []sdk.ChatCompletionMessageParamUnion
	var images []sdk.ChatCompletionContentPartUnionParam
	for j, b := range m.Blocks {
		switch b.Type {
		case session.BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case session.BlockToolUse:
			if m.Role != session.RoleAssistant {
				return nil, fmt.Errorf("openai: message %d (%s), block %d: a tool_use block belongs in an assistant message", i+1, m.Role, j+1)
			}
			args := "{}"
			if len(b.Input) > 0 {
				if !json.Valid(b.Input) {
					return nil, fmt.Errorf("openai: message %d, block %d: tool_use %s has invalid JSON input", i+1, j+1, b.ID)
				}
				args = string(b.Input)
			}
			calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID:       b.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.Name, Arguments: args},
			}})
		case session.BlockToolResult:
			if m.Role != session.RoleUser {
				return nil, fmt.Errorf("openai: message %d (%s), block %d: a tool_result block belongs in a user message", i+1, m.Role, j+1)
			}
			content := b.Text
			if b.IsError {
				// Chat Completions has no error flag for tool results.
				content = "Error: " + content
			}
			results = append(results, sdk.ToolMessage(content, b.ToolUseID))
			images = append(images, sdkImageParts(b)...)
		case session.BlockThinking, session.BlockRedactedThinking:
			// Reasoning goes back below, as a field of the message.
		default:
			return nil, fmt.Errorf("openai: message %d, block %d: block type %q is not supported", i+1, j+1, b.Type)
		}
	}
	text := strings.Join(texts, "\n\n")
	switch m.Role {
	case session.RoleUser:
		out = append(out, results...)
		if len(images) > 0 {
			// Tool messages take text only: the images follow them.
			out = append(out, sdk.UserMessage(images))
		}
		if text != "" {
			out = append(out, sdk.UserMessage(text))
		}
	case session.RoleAssistant:
		if text == "" && len(calls) == 0 {
			return nil, nil
		}
		a := sdk.ChatCompletionAssistantMessageParam{ToolCalls: calls}
		if text != "" {
			a.Content.OfString = sdk.String(text)
		}
		if reasoning {
			a.SetExtraFields(map[string]any{"reasoning_content": reasoningText(m)})
		}
		out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
	default:
		return nil, fmt.Errorf("openai: message %d: role %q is neither %q nor %q", i+1, m.Role, session.RoleUser, session.RoleAssistant)
	}
	return out, nil
}

// toolParams maps tool specs to function tools.
func sdkToolParams(specs []provider.ToolSpec) ([]sdk.ChatCompletionToolUnionParam, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]sdk.ChatCompletionToolUnionParam, len(specs))
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("openai: tool %d has no name", i+1)
		}
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(s.InputSchema) > 0 {
			schema = nil
			if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema == nil {
				return nil, fmt.Errorf("openai: tool %q: the input schema is not a JSON object", s.Name)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: s.Name, Parameters: shared.FunctionParameters(schema)}
		if s.Description != "" {
			fn.Description = sdk.String(s.Description)
		}
		out[i] = sdk.ChatCompletionFunctionTool(fn)
	}
	return out, nil
}

// imageParts is the images of a tool result as a user message's parts
// (data URLs), after a line naming the call they came from.
func sdkImageParts(b session.Block) []sdk.ChatCompletionContentPartUnionParam {
	if len(b.Images) == 0 {
		return nil
	}
	parts := []sdk.ChatCompletionContentPartUnionParam{sdk.TextContentPart(fmt.Sprintf("The images the tool call %s returned:", b.ToolUseID))}
	for _, im := range b.Images {
		url := "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
		parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}))
	}
	return parts
}

// sdkMessages maps the system prompt and the transcript to the SDK's chat
// messages, as the provider did before its wire code.
func sdkMessages(system string, in []provider.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, sdk.SystemMessage(system))
	}
	prompt := lastPrompt(in)
	for i, m := range in {
		msgs, err := sdkMessage(i, m, i > prompt && reasoningText(m) != "")
		if err != nil {
			return nil, err
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// sdkNoStreamOptions is the stream options of a whole request: none.
var sdkNoStreamOptions = sdk.ChatCompletionStreamOptionsParam{}
