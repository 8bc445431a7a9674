package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// The request is written by hand rather than with the official SDK: its
// package initialisers cost about 1.1 ms of every process start
// (GODEBUG=inittrace=1: openai-go/v3 0.60 ms, responses 0.32, live 0.14,
// realtime 0.06) even for users of another provider, and it linked about
// 7 MB of code into lite-agent. The SDK stays in the tests as the oracle
// this encoding is checked against (oracle_test.go, TestBodyIsTheSDKs).

// chatRequest is a Chat Completions request without its messages, which
// are kept as JSON (provider.Encoded) and go first (see body).
type chatRequest struct {
	Model               string         `json:"model"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
}

// streamOptions asks for a final usage chunk.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatTool is a function tool.
type chatTool struct {
	Function chatFunction `json:"function"`
	Type     string       `json:"type"`
}

// chatFunction is a function tool's definition.
type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// chatMessage is one message of a request. Content is a string or a
// []contentPart; nil leaves it out.
type chatMessage struct {
	Content          any            `json:"content,omitempty"`
	Role             string         `json:"role"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string         `json:"tool_call_id,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

// chatToolCall is a tool call an assistant message made.
type chatToolCall struct {
	ID       string           `json:"id"`
	Function chatCallFunction `json:"function"`
	Type     string           `json:"type"`
}

// chatCallFunction is the function a tool call calls.
type chatCallFunction struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

// contentPart is a part of a user message: text or an image.
type contentPart struct {
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
	Type     string    `json:"type"`
}

// imageURL is an image part's address (here a data URL).
type imageURL struct {
	URL string `json:"url"`
}

// call is a request ready to send: its messages as JSON and the rest.
type call struct {
	messages []json.RawMessage
	req      chatRequest
}

// params builds the API request for req.
func (p *Provider) params(req provider.Request) (call, error) {
	if req.Model == "" {
		return call{}, errors.New("openai: no model is set; name one, such as gpt-4.1 (or a local model, such as qwen3 for Ollama)")
	}
	if req.MaxTokens < 0 {
		return call{}, fmt.Errorf("openai: MaxTokens %d is negative; use 0 for the default", req.MaxTokens)
	}
	msgs, err := p.messages(req.System, req.Messages)
	if err != nil {
		return call{}, err
	}
	tools, err := toolParams(req.Tools)
	if err != nil {
		return call{}, err
	}
	c := call{messages: msgs, req: chatRequest{
		Model:           req.Model,
		Tools:           tools,
		ReasoningEffort: req.ReasoningEffort,
		StreamOptions:   &streamOptions{IncludeUsage: true},
	}}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	if maxTokens > 0 {
		// OpenAI's newer models take only max_completion_tokens; the
		// servers that copy the API know max_tokens.
		if p.official {
			c.req.MaxCompletionTokens = maxTokens
		} else {
			c.req.MaxTokens = maxTokens
		}
	}
	return c, nil
}

// body is the request's JSON: its messages' kept JSON first, then the rest.
func (c call) body() ([]byte, error) {
	rest, err := json.Marshal(c.req)
	if err != nil {
		return nil, fmt.Errorf("openai: encode the request: %w", err)
	}
	n := len(rest) + 16
	for _, m := range c.messages {
		n += len(m) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"messages":[`)
	for i, m := range c.messages {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteString("],")
	b.Write(rest[1:]) // rest is never empty: it has a model
	return b.Bytes(), nil
}

// messages maps the system prompt and the transcript to chat messages
// (reasoning: see reasoning.go), each transcript message encoded once and
// kept (provider.Encoded): one sent before is sent as the JSON it was
// encoded to then. A user message's tool results become "tool" messages,
// sent first (they must follow the assistant message that made the
// calls), then its text as a user message. Text blocks of one message are
// joined by blank lines; empty ones are dropped.
func (p *Provider) messages(system string, in []provider.Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(in)+1)
	if system != "" {
		raw, err := json.Marshal(chatMessage{Role: "system", Content: system})
		if err != nil {
			return nil, fmt.Errorf("openai: the system prompt: %w", err)
		}
		out = append(out, raw)
	}
	prompt := lastPrompt(in)
	r := p.encoded.Begin(in)
	for i, m := range in {
		reasoning := i > prompt && reasoningText(m) != ""
		var variant uint8
		if reasoning {
			variant = 1
		}
		raws, ok := r.Get(variant)
		if !ok {
			msgs, err := message(i, m, reasoning)
			if err != nil {
				return nil, err
			}
			raws = make([]json.RawMessage, len(msgs))
			for j, mp := range msgs {
				if raws[j], err = json.Marshal(mp); err != nil {
					return nil, fmt.Errorf("openai: message %d: %w", i+1, err)
				}
			}
			raws = r.Put(variant, raws...)
		}
		out = append(out, raws...)
	}
	r.Done()
	return out, nil
}

// message maps the transcript's message i to chat messages (none for an
// assistant message with neither text nor calls); reasoning sends its
// reasoning back as a field.
func message(i int, m provider.Message, reasoning bool) ([]chatMessage, error) {
	var out []chatMessage
	var texts []string
	var calls []chatToolCall
	var results []chatMessage
	var images []contentPart
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
			calls = append(calls, chatToolCall{ID: b.ID, Type: "function", Function: chatCallFunction{Name: b.Name, Arguments: args}})
		case session.BlockToolResult:
			if m.Role != session.RoleUser {
				return nil, fmt.Errorf("openai: message %d (%s), block %d: a tool_result block belongs in a user message", i+1, m.Role, j+1)
			}
			content := b.Text
			if b.IsError {
				// Chat Completions has no error flag for tool results.
				content = "Error: " + content
			}
			results = append(results, chatMessage{Role: "tool", Content: content, ToolCallID: b.ToolUseID})
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
			out = append(out, chatMessage{Role: "user", Content: images})
		}
		if text != "" {
			out = append(out, chatMessage{Role: "user", Content: text})
		}
	case session.RoleAssistant:
		if text == "" && len(calls) == 0 {
			return nil, nil
		}
		a := chatMessage{Role: "assistant", ToolCalls: calls}
		if text != "" {
			a.Content = text
		}
		if reasoning {
			a.ReasoningContent = reasoningText(m)
		}
		out = append(out, a)
	default:
		return nil, fmt.Errorf("openai: message %d: role %q is neither %q nor %q", i+1, m.Role, session.RoleUser, session.RoleAssistant)
	}
	return out, nil
}

// toolParams maps tool specs to function tools.
func toolParams(specs []provider.ToolSpec) ([]chatTool, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := make([]chatTool, len(specs))
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("openai: tool %d has no name", i+1)
		}
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if len(s.InputSchema) > 0 {
			t := bytes.TrimSpace(s.InputSchema)
			if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
				return nil, fmt.Errorf("openai: tool %q: the input schema is not a JSON object", s.Name)
			}
			schema = json.RawMessage(t)
		}
		out[i] = chatTool{Type: "function", Function: chatFunction{Name: s.Name, Description: s.Description, Parameters: schema}}
	}
	return out, nil
}

// imageParts is the images of a tool result as a user message's parts
// (data URLs), after a line naming the call they came from.
func imageParts(b session.Block) []contentPart {
	if len(b.Images) == 0 {
		return nil
	}
	parts := []contentPart{{Type: "text", Text: fmt.Sprintf("The images the tool call %s returned:", b.ToolUseID)}}
	for _, im := range b.Images {
		url := "data:" + im.MediaType + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
		parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: url}})
	}
	return parts
}
