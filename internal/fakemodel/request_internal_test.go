package fakemodel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// TestParseAnthropicMatchesReference reads requests with parseAnthropic,
// with and without a memo and twice with the same memo, and with the
// reader it replaced, which decoded every block again for each thing it
// read: the views must agree (the prompt-cache keys are hashed
// differently, so only their lengths, breakpoints and which of them are
// equal are compared).
func TestParseAnthropicMatchesReference(t *testing.T) {
	bodies := []string{
		`{"model":"m","stream":true,"system":"be brief","messages":[{"role":"user","content":"hello"}]}`,
		`{"model":"m","stream":true,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		  "tools":[{"name":"read","input_schema":{"type":"object"}},{"name":"edit","cache_control":{"type":"ephemeral"}}],
		  "thinking":{"type":"enabled","budget_tokens":2048},
		  "messages":[
		    {"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},
		    {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}}]},
		    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"file a"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"part 1"},{"type":"text","text":"part 2"}]}]},
		    {"role":"assistant","content":"plain answer"},
		    {"role":"user","content":[{"text":"keys in another order","type":"text","cache_control":{"type":"ephemeral"}}]}]}`,
		// Content that is not what the readers expect.
		`{"model":"m","stream":true,"messages":[
		    {"role":"user","content":null},
		    {"role":"user","content":[{"type":"text","text":7}]},
		    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"kept?"},"a string block"]},
		    {"role":"assistant","content":[{"type":"thinking","thinking":1},null,{"type":"text","text":"x"}]},
		    {"role":"user","content":{"type":"text","text":"an object, not a list"}},
		    {"role":"user","content":[{"type":"text","text":""},{"type":"text","text":"after an empty block"},{"type":"image"},{"type":"text","text":"and one more"}]},
		    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t4","content":[{"type":"image"}]}]}]}`,
		`{"model":"m","stream":true,"tools":[{"name":5}],"messages":[]}`,
		`not json`,
	}
	memo := &blockMemo{}
	for i, body := range bodies {
		want, wantErr := referenceParse([]byte(body))
		for _, m := range []*blockMemo{nil, memo, memo} {
			got, err := parseAnthropic([]byte(body), m)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("body %d: error %v, the reference's %v", i, err, wantErr)
			}
			if err != nil {
				continue
			}
			if d := viewDiff(got, want); d != "" {
				t.Fatalf("body %d (memo %v): %s", i, m != nil, d)
			}
		}
	}
}

// viewDiff describes how two views differ, comparing prompt-cache keys
// only by which of them are equal.
func viewDiff(a, b view) string {
	if len(a.segs) != len(b.segs) {
		return fmt.Sprintf("%d segments, want %d", len(a.segs), len(b.segs))
	}
	for i := range a.segs {
		if a.segs[i].cum != b.segs[i].cum || a.segs[i].breakpoint != b.segs[i].breakpoint {
			return fmt.Sprintf("segment %d: %+v, want %+v", i, a.segs[i], b.segs[i])
		}
		for j := range i {
			if (a.segs[i].key == a.segs[j].key) != (b.segs[i].key == b.segs[j].key) {
				return fmt.Sprintf("segments %d and %d: equal %v, want %v", j, i, a.segs[i].key == a.segs[j].key, !(a.segs[i].key == a.segs[j].key))
			}
		}
	}
	a.segs, b.segs = nil, nil
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("view\n%+v\nwant\n%+v", a, b)
	}
	return ""
}

// referenceSegmenter is segmenter as it was: it hashed each block's
// canonical JSON itself.
type referenceSegmenter struct {
	h   [32]byte
	cum int
	out []segment
}

func (s *referenceSegmenter) add(tag string, raw json.RawMessage) {
	canon, bp := canonical(raw)
	sum := sha256.New()
	sum.Write(s.h[:])
	sum.Write([]byte(tag))
	sum.Write([]byte{0})
	sum.Write(canon)
	copy(s.h[:], sum.Sum(nil))
	s.cum += len(canon)
	s.out = append(s.out, segment{key: s.h, cum: s.cum, breakpoint: bp})
}

// referenceParse is parseAnthropic as it was before blockMemo: every
// block decoded again, by each reader, in every request.
func referenceParse(body []byte) (view, error) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return view{}, fmt.Errorf("request body is not a Messages API request: %v", err)
	}
	v := view{format: FormatAnthropic, model: req.Model, stream: req.Stream, system: textOf(req.System), toolResults: map[string]string{}}
	for _, t := range req.Tools {
		v.tools = append(v.tools, t.Name)
	}
	var raw struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	_ = json.Unmarshal(body, &raw) // the same body decoded above
	v.thinking = raw.Thinking != nil && raw.Thinking.Type == "enabled"
	var sg referenceSegmenter
	for _, t := range raw.Tools {
		sg.add("tool", t)
	}
	for _, b := range blocksOf(raw.System) {
		sg.add("system", b)
	}
	v.lastAssistantN = -1
	for i, m := range raw.Messages {
		blocks := blocksOf(m.Content)
		var sent []sentBlock
		for j, b := range blocks {
			sg.add(m.Role, b)
			var sb sentBlock
			if json.Unmarshal(b, &sb) == nil {
				sb.msg, sb.idx = i, j
				sent = append(sent, sb)
				if sb.Type == "thinking" {
					v.thinkingBlocks = append(v.thinkingBlocks, sb)
				}
			}
		}
		if m.Role == "assistant" {
			v.lastAssistant, v.lastAssistantN = sent, i
		}
	}
	v.segs = sg.out
	for _, m := range req.Messages {
		if m.Role != "user" {
			continue
		}
		if text := textOf(m.Content); text != "" {
			v.lastUser = text
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_result" {
					v.toolResults[b.ToolUseID] = textOf(b.Content)
				}
			}
		}
	}
	return v, nil
}
