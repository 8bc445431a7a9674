package openai

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// params builds the API request for req.
func (p *Provider) params(req provider.Request) (sdk.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return sdk.ChatCompletionNewParams{}, errors.New("openai: no model is set; name one, such as gpt-4.1 (or a local model, such as qwen3 for Ollama)")
	}
	if req.MaxTokens < 0 {
		return sdk.ChatCompletionNewParams{}, fmt.Errorf("openai: MaxTokens %d is negative; use 0 for the default", req.MaxTokens)
	}
	msgs, err := p.messages(req.System, req.Messages)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := toolParams(req.Tools)
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

// messages maps the system prompt and the transcript to chat messages
// (reasoning: see reasoning.go), each transcript message encoded once and
// kept (provider.Encoded): one sent before is sent as the JSON it was
// encoded to then. A
// user message's tool results become "tool" messages, sent first (they
// must follow the assistant message that made the calls), then its text
// as a user message. Text blocks of one message are joined by blank
// lines; empty ones are dropped.
func (p *Provider) messages(system string, in []provider.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	out := make([]sdk.ChatCompletionMessageParamUnion, 0, len(in)+1)
	if system != "" {
		out = append(out, sdk.SystemMessage(system))
	}
	prompt := lastPrompt(in)
	gen := p.encoded.Begin()
	for i, m := range in {
		reasoning := i > prompt && reasoningText(m) != ""
		var variant uint8
		if reasoning {
			variant = 1
		}
		raws, ok := p.encoded.Get(gen, m, variant)
		if !ok {
			msgs, err := message(i, m, reasoning)
			if err != nil {
				return nil, err
			}
			raws = make([]json.RawMessage, len(msgs))
			for j, mp := range msgs {
				if raws[j], err = mp.MarshalJSON(); err != nil { // the SDK's encoding, already compact
					return nil, fmt.Errorf("openai: message %d: %w", i+1, err)
				}
			}
			p.encoded.Put(gen, m, variant, raws)
		}
		for _, raw := range raws {
			out = append(out, param.Override[sdk.ChatCompletionMessageParamUnion](raw))
		}
	}
	p.encoded.Trim()
	return out, nil
}

// message maps the transcript's message i to chat messages (none for an
// assistant message with neither text nor calls); reasoning sends its
// reasoning back as a field.
func message(i int, m provider.Message, reasoning bool) ([]sdk.ChatCompletionMessageParamUnion, error) {
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
			images = append(images, imageParts(b)...)
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
func toolParams(specs []provider.ToolSpec) ([]sdk.ChatCompletionToolUnionParam, error) {
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
func imageParts(b session.Block) []sdk.ChatCompletionContentPartUnionParam {
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

// body is the request body of params, whose messages are kept JSON
// (provider.Encoded): the SDK encodes the rest, and the messages' JSON goes
// in as it is. ok is false if the SDK's encoding is not of the shape this
// relies on ({"messages":[...],...}); the params are then sent as they are.
func body(params sdk.ChatCompletionNewParams) (b []byte, ok bool, err error) {
	raws := make([]json.RawMessage, len(params.Messages))
	for i, m := range params.Messages {
		raw, ok := m.Overrides()
		if raws[i], _ = raw.(json.RawMessage); !ok || raws[i] == nil {
			if m.OfSystem == nil {
				return nil, false, nil
			}
			if raws[i], err = m.MarshalJSON(); err != nil { // the system prompt, encoded each time
				return nil, false, err
			}
		}
	}
	params.Messages = []sdk.ChatCompletionMessageParamUnion{param.Override[sdk.ChatCompletionMessageParamUnion](json.RawMessage("0"))}
	top, err := params.MarshalJSON()
	if err != nil {
		return nil, false, err
	}
	b, ok = provider.SpliceMessages(top, `"messages":[0]`, messagesFirst, raws)
	return b, ok, nil
}

// messagesFirst is what the SDK's encoding of a request has before its
// messages.
var messagesFirst = regexp.MustCompile(`^\{$`)

// request is what to send for params: the body assembled from the kept
// JSON of its messages, given to the SDK as the request body beside the
// params it reads for itself (the model), or params as they are when that
// cannot be done.
func request(params sdk.ChatCompletionNewParams) (sdk.ChatCompletionNewParams, []option.RequestOption) {
	b, ok, err := body(params)
	if err != nil || !ok {
		return params, nil
	}
	return sdk.ChatCompletionNewParams{Model: params.Model}, []option.RequestOption{option.WithRequestBody("application/json", b)}
}
