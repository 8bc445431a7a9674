package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// params builds the API request for req: the params, each message in
// them the JSON it was encoded to (see messages).
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
	raws, err := p.messages(req.Messages, req.ThinkingBudget > 0)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	msgs := make([]sdk.MessageParam, len(raws))
	for i, raw := range raws {
		msgs[i] = param.Override[sdk.MessageParam](raw)
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

// markCache puts the prompt-cache breakpoints on the tools and the system
// prompt: the last tool (caching every tool) and the system prompt. The
// messages' two breakpoints are put by messages (see marked). Nothing else
// in the request changes turn to turn, so the prefix up to each breakpoint
// is the same bytes.
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
}

// marked returns the indexes of the messages whose last block carries a
// prompt-cache breakpoint (at most 4 in a request, as the API allows, two
// of them here): the last user message (this request's whole transcript)
// and the user message before it (where the previous request's breakpoint
// was, so its cache is found even when many blocks were added since). A
// user message counts only if it has a block to send (sendsABlock mirrors
// what message keeps: the breakpoints are part of a kept message's key,
// so they are decided before the message is converted). -1 is none.
func marked(in []provider.Message) (last, before int) {
	last, before = -1, -1
	for i := len(in) - 1; i >= 0 && before < 0; i-- {
		if in[i].Role != session.RoleUser || !sendsABlock(in[i]) {
			continue
		}
		if last < 0 {
			last = i
		} else {
			before = i
		}
	}
	return last, before
}

// sendsABlock reports whether message converts to at least one block:
// what a user message of the transcript can hold, a tool result or
// non-empty text (other blocks make message an error, or are dropped).
func sendsABlock(m provider.Message) bool {
	for _, b := range m.Blocks {
		if b.Type == session.BlockToolResult || (b.Type == session.BlockText && b.Text != "") {
			return true
		}
	}
	return false
}

// messages maps the transcript to the JSON of its messages, each message
// encoded once (encodeMessage) and kept (provider.Encoded): a message sent
// before is sent as the JSON it was encoded to then. With the prompt cache on, the two
// breakpoints of marked go on their messages' last blocks.
func (p *Provider) messages(in []provider.Message, thinking bool) ([]json.RawMessage, error) {
	last, before := -1, -1
	if p.cache {
		last, before = marked(in)
	}
	gen := p.encoded.Begin()
	out := make([]json.RawMessage, 0, len(in))
	for i, m := range in {
		mark := i == last || i == before
		variant := encoding(thinking, mark)
		if raws, ok := p.encoded.Get(gen, m, variant); ok {
			out = append(out, raws...)
			continue
		}
		raw, ok, err := encodeMessage(i, m, thinking, mark) // the SDK's encoding, written directly
		if err != nil {
			return nil, err
		}
		if !ok {
			p.encoded.Put(gen, m, variant, nil)
			continue
		}
		p.encoded.Put(gen, m, variant, []json.RawMessage{raw})
		out = append(out, raw)
	}
	p.encoded.Trim()
	return out, nil
}

// encoding is the variant of a message's JSON kept in provider.Encoded:
// thinking blocks are sent only with thinking on, and mark puts a cache
// breakpoint on its last block.
func encoding(thinking, mark bool) uint8 {
	var v uint8
	if thinking {
		v |= 1
	}
	if mark {
		v |= 2
	}
	return v
}

// body is the request body of params, whose messages are kept JSON
// (provider.Encoded): the SDK encodes the rest, and the messages' JSON goes in as it
// is, so a kept message costs a copy rather than the SDK's encoding and
// compaction of it again. ok is false if the SDK's encoding is not of the
// shape this relies on ({"max_tokens":N,"messages":[...],...}); the params
// are then sent as they are.
func body(params sdk.MessageNewParams) (b []byte, ok bool, err error) {
	msgs := params.Messages
	params.Messages = []sdk.MessageParam{param.Override[sdk.MessageParam](json.RawMessage("0"))}
	top, err := params.MarshalJSON()
	if err != nil {
		return nil, false, err
	}
	raws := make([]json.RawMessage, len(msgs))
	for j, m := range msgs {
		raw, ok := m.Overrides()
		if raws[j], _ = raw.(json.RawMessage); !ok || raws[j] == nil {
			return nil, false, nil
		}
	}
	b, ok = provider.SpliceMessages(top, `,"messages":[0]`, maxTokensFirst, raws)
	return b, ok, nil
}

// maxTokensFirst is what the SDK's encoding of a request starts with,
// before the messages.
var maxTokensFirst = regexp.MustCompile(`^\{"max_tokens":[0-9]+$`)

// emptySchema is the input schema of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// isObject reports whether b is valid JSON whose value is an object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

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
		// Checked, not decoded: the schema is sent as given, and decoding it
		// into a map on every model call was 1.3% of a one-turn process.
		if !isObject(schema) {
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
