package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// request builds the whole JSON body of the API request for req, by hand
// rather than through the SDK's params (see the package doc for why): the
// SDK's field order and escaping, each message the JSON it was encoded to
// and kept (see messages), and "stream":true last, where the SDK sets it.
// The bytes are the same for the same request, so the prompt cache finds
// its prefixes. With the prompt cache on, the last tool (caching every
// tool) and the system prompt carry a breakpoint; the messages' two are put
// by messages (see marked). TestRequestIsTheSDKs compares it with the SDK's
// encoding.
func (p *Provider) request(req provider.Request) ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("anthropic: no model is set; name one, such as claude-sonnet-4-5")
	}
	if req.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: MaxTokens %d is negative; use 0 for the default", req.MaxTokens)
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.maxTokens
	}
	if req.ThinkingBudget > 0 {
		if req.ThinkingBudget < minThinkingBudget {
			return nil, fmt.Errorf("anthropic: a thinking budget of %d tokens is below the API's minimum of %d", req.ThinkingBudget, minThinkingBudget)
		}
		if maxTokens <= req.ThinkingBudget {
			// The budget counts toward max_tokens, which must exceed it.
			maxTokens += req.ThinkingBudget
		}
	}
	if err := checkTools(req.Tools); err != nil {
		return nil, err
	}
	raws, err := p.messages(req.Messages, req.ThinkingBudget > 0)
	if err != nil {
		return nil, err
	}
	size := 256 + len(req.Model) + len(req.System)
	for _, r := range raws {
		size += len(r) + 1
	}
	for _, t := range req.Tools {
		size += 96 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	out := make([]byte, 0, size)
	out = append(out, `{"max_tokens":`...)
	out = strconv.AppendInt(out, int64(maxTokens), 10)
	out = append(out, `,"messages":[`...)
	for i, r := range raws {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	out = append(out, `],"model":`...)
	out = appendString(out, req.Model)
	if req.System != "" {
		out = append(out, `,"system":[{"text":`...)
		out = appendString(out, req.System)
		out = append(out, ',')
		if p.cache {
			out = append(out, cacheControl...)
		}
		out = append(out, `"type":"text"}]`...)
	}
	if req.ThinkingBudget > 0 {
		out = append(out, `,"thinking":{"budget_tokens":`...)
		out = strconv.AppendInt(out, int64(req.ThinkingBudget), 10)
		out = append(out, `,"type":"enabled"}`...)
	}
	if len(req.Tools) > 0 {
		out = append(out, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				out = append(out, ',')
			}
			schema := t.InputSchema
			if len(schema) == 0 {
				schema = emptySchema
			}
			out = append(out, `{"input_schema":`...)
			out = appendRaw(out, schema)
			out = append(out, `,"name":`...)
			out = appendString(out, t.Name)
			if t.Description != "" {
				out = append(out, `,"description":`...)
				out = appendString(out, t.Description)
			}
			if p.cache && i == len(req.Tools)-1 {
				// The last tool's breakpoint caches every tool.
				out = append(out, `,"cache_control":{"type":"ephemeral"}`...)
			}
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	return append(out, `,"stream":true}`...), nil
}

// minThinkingBudget is the smallest thinking budget the API takes.
const minThinkingBudget = 1024

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
	r := p.encoded.Begin(in)
	out := make([]json.RawMessage, 0, len(in))
	var buf []byte // each missed message is encoded here, then kept (a copy)
	for i, m := range in {
		mark := i == last || i == before
		variant := encoding(thinking, mark)
		if raws, ok := r.Get(variant); ok {
			out = append(out, raws...)
			continue
		}
		raw, ok, err := encodeMessage(buf[:0], i, m, thinking, mark) // the SDK's encoding, written directly
		if err != nil {
			return nil, err
		}
		if !ok {
			r.Put(variant)
			continue
		}
		buf = raw
		out = append(out, r.Put(variant, raw)...)
	}
	r.Done()
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

// emptySchema is the input schema of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// isObject reports whether b is valid JSON whose value is an object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// checkTools refuses tools the API would: one with no name, or whose input
// schema is not a JSON object. The schema is checked, not decoded: it is
// sent as given, and decoding it into a map on every model call was 1.3% of
// a one-turn process.
func checkTools(specs []provider.ToolSpec) error {
	for i, s := range specs {
		if s.Name == "" {
			return fmt.Errorf("anthropic: tool %d has no name", i+1)
		}
		if len(s.InputSchema) > 0 && !isObject(s.InputSchema) {
			return fmt.Errorf("anthropic: tool %q: the input schema is not a JSON object", s.Name)
		}
	}
	return nil
}
