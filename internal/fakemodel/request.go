package fakemodel

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// view is what the expectations look at, read from a request of either
// format.
type view struct {
	format       string
	model        string
	stream       bool
	includeUsage bool // OpenAI: stream_options.include_usage
	system       string
	lastUser     string            // the text of the last user message that has text
	toolResults  map[string]string // tool call id → result text
	tools        []string
	// segs is the request's prompt as the prompt cache sees it.
	segs []segment
	// thinking is set when the request enables extended thinking
	// (Anthropic).
	thinking bool
	// lastAssistant holds the blocks of the last assistant message and
	// thinkingBlocks every thinking block sent (Anthropic), for the checks
	// the API makes on thinking.
	lastAssistant  []sentBlock
	lastAssistantN int // its index among the messages
	thinkingBlocks []sentBlock
	// promptAfter (OpenAI) is set when a user message follows the last
	// assistant message: a new prompt, no longer its tool use.
	promptAfter bool
}

// sentBlock is a content block of a request, as the thinking checks read
// it.
type sentBlock struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
	msg, idx  int
}

// textOf reads message content that is either a string or a list of
// content blocks / parts, keeping the text of "text" blocks.
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, bl := range blocks {
		if bl.Type == "text" {
			texts = append(texts, bl.Text)
		}
	}
	return joinTexts(texts)
}

// parseAnthropic reads a Messages API request body. The body is decoded
// once; its blocks' facts come from memo (see blockMemo).
func parseAnthropic(body []byte, memo *blockMemo) (view, error) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return view{}, fmt.Errorf("request body is not a Messages API request: %v", err)
	}
	v := view{format: FormatAnthropic, model: req.Model, stream: req.Stream, system: textOf(req.System), toolResults: map[string]string{}}
	v.thinking = req.Thinking != nil && req.Thinking.Type == "enabled"
	var sg segmenter
	for i, t := range req.Tools {
		f := memo.of(t)
		if !f.nameOK {
			return view{}, fmt.Errorf("request body is not a Messages API request: tool %d is not an object with a string name", i+1)
		}
		v.tools = append(v.tools, f.name)
		sg.add("tool", f)
	}
	for _, f := range memo.content(req.System).blocks {
		sg.add("system", f)
	}
	v.lastAssistantN = -1
	for i, m := range req.Messages {
		c := memo.content(m.Content)
		// The message's text, as textOf reads it, and its tool results:
		// each only when every block decodes as what it is read into.
		var texts []string
		textOK, resultsOK := c.list || c.str, c.list
		var sent []sentBlock
		for j, f := range c.blocks {
			sg.add(m.Role, f)
			if f.sentOK {
				sb := f.sent
				sb.msg, sb.idx = i, j
				sent = append(sent, sb)
				if sb.Type == "thinking" {
					v.thinkingBlocks = append(v.thinkingBlocks, sb)
				}
			}
			textOK = textOK && f.textOK
			if f.textType {
				texts = append(texts, f.text)
			}
			resultsOK = resultsOK && f.resultOK
		}
		switch m.Role {
		case "assistant":
			v.lastAssistant, v.lastAssistantN = sent, i
		case "user":
			if text := joinTexts(texts); textOK && text != "" {
				v.lastUser = text
			}
			if resultsOK {
				for _, f := range c.blocks {
					if f.resultType {
						v.toolResults[f.toolUseID] = f.resultText
					}
				}
			}
		}
	}
	v.segs = sg.out
	return v, nil
}

// joinTexts joins the texts of a message's text blocks: a newline between
// two only once some text came before.
func joinTexts(texts []string) string {
	var b strings.Builder
	for _, t := range texts {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(t)
	}
	return b.String()
}

// parseOpenAI reads a Chat Completions request body.
func parseOpenAI(body []byte, memo *blockMemo) (view, error) {
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
			Reasoning *string `json:"reasoning_content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return view{}, fmt.Errorf("request body is not a Chat Completions request: %v", err)
	}
	v := view{format: FormatOpenAI, model: req.Model, stream: req.Stream, toolResults: map[string]string{}}
	v.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var raw struct {
		Tools    []json.RawMessage `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &raw) // the same body decoded above
	var sg segmenter
	for _, t := range raw.Tools {
		sg.add("tool", memo.of(t))
	}
	for _, m := range raw.Messages {
		sg.add("message", memo.of(m))
	}
	v.segs = sg.out
	for _, t := range req.Tools {
		v.tools = append(v.tools, t.Function.Name)
	}
	var system []string
	v.lastAssistantN = -1
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, textOf(m.Content))
		case "assistant":
			// As sentBlocks: the reasoning sent back ("reasoning", absent
			// when the field is) first, then the tool calls.
			v.lastAssistant, v.lastAssistantN, v.promptAfter = nil, i, false
			if m.Reasoning != nil {
				v.lastAssistant = append(v.lastAssistant, sentBlock{Type: "reasoning", Thinking: *m.Reasoning})
			}
			for _, tc := range m.ToolCalls {
				v.lastAssistant = append(v.lastAssistant, sentBlock{Type: "tool_use", ID: tc.ID})
			}
		case "user":
			v.promptAfter = true
			if text := textOf(m.Content); text != "" {
				v.lastUser = text
			}
		case "tool":
			v.toolResults[m.ToolCallID] = textOf(m.Content)
		}
	}
	v.system = strings.Join(system, "\n")
	return v, nil
}

// check returns a description of every expectation the request fails.
func (e *Expect) check(v view, body []byte) []string {
	if e == nil {
		return nil
	}
	var fails []string
	if e.Format != "" && e.Format != v.format {
		fails = append(fails, fmt.Sprintf("want the %s format, the request used the %s format", e.Format, v.format))
	}
	if e.Model != "" && e.Model != v.model {
		fails = append(fails, fmt.Sprintf("want model %q, the request asked for %q", e.Model, v.model))
	}
	for _, s := range e.LastUserContains {
		if !strings.Contains(v.lastUser, s) {
			fails = append(fails, fmt.Sprintf("the last user message does not contain %q (it is %q)", s, clip(v.lastUser)))
		}
	}
	for _, s := range e.SystemContains {
		if !strings.Contains(v.system, s) {
			fails = append(fails, fmt.Sprintf("the system prompt does not contain %q (it is %q)", s, clip(v.system)))
		}
	}
	for _, s := range e.BodyContains {
		if !strings.Contains(string(body), s) {
			fails = append(fails, fmt.Sprintf("the request body does not contain %q", s))
		}
	}
	for _, id := range e.ToolResultFor {
		if _, ok := v.toolResults[id]; !ok {
			fails = append(fails, fmt.Sprintf("the request carries no tool result for call %q", id))
		}
	}
	for _, name := range e.Tools {
		if !slices.Contains(v.tools, name) {
			fails = append(fails, fmt.Sprintf("the request does not offer tool %q (it offers %q)", name, v.tools))
		}
	}
	if len(e.Images) > 0 {
		var msgs struct {
			Messages json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(body, &msgs)
		if got := imagesIn(msgs.Messages); !slices.Equal(got, e.Images) {
			fails = append(fails, fmt.Sprintf("the request sends the images %q, want %q", got, e.Images))
		}
	}
	return fails
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	cut := 0
	for i := range s {
		if i > max {
			break
		}
		cut = i
	}
	return s[:cut] + "…"
}
