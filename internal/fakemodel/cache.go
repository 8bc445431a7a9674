package fakemodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
)

// Token counts are estimated, deterministically, from bytes: a request's
// input is a quarter of its body's bytes (at least 1), a reply's output a
// quarter of its text and tool inputs. Prompt-cache prefixes are counted
// the same way, over the canonical JSON (keys sorted, cache_control left
// out) of the blocks the prefix holds, so that moving a breakpoint does not
// change what a prefix is.

// tokens is the estimate for n bytes.
func tokens(n int) int { return (n + 3) / 4 }

// segment is one block of a request's prompt, in the order the provider
// caches it: tools, then system blocks, then each message's content blocks.
type segment struct {
	key        [32]byte // hash of the prefix ending with this segment
	cum        int      // bytes of the prefix ending with this segment
	breakpoint bool     // the block carries cache_control
}

// segmenter builds the prefix chain of a request.
type segmenter struct {
	h   [32]byte
	cum int
	out []segment
}

// add appends one block, tagged with where it stands (so a tool and a
// message with the same JSON are different prefixes).
func (s *segmenter) add(tag string, f *blockFacts) {
	sum := sha256.New()
	sum.Write(s.h[:])
	sum.Write([]byte(tag))
	sum.Write([]byte{0})
	sum.Write(f.canon[:])
	copy(s.h[:], sum.Sum(nil))
	s.cum += f.canonLen
	s.out = append(s.out, segment{key: s.h, cum: s.cum, breakpoint: f.breakpoint})
}

// blockFacts is what the server reads of one content block (or tool, or
// OpenAI message): its canonical JSON for the prompt cache, and the fields
// the expectations and the thinking checks look at, each decoded as the
// struct it is read into would decode it (ok false where that fails).
type blockFacts struct {
	canon      [32]byte // SHA-256 of the canonical JSON
	canonLen   int      // its length
	breakpoint bool     // the block carries cache_control

	sent   sentBlock // as the thinking checks read it
	sentOK bool

	textType bool   // a block of type "text"
	text     string // its text
	textOK   bool   // it decodes as {type, text}

	resultType bool   // a block of type "tool_result"
	toolUseID  string // the call it answers
	resultText string // the text of its content
	resultOK   bool   // it decodes as {type, tool_use_id, content}

	name   string // a tool's name
	nameOK bool
}

// factsOf works out the facts of raw.
func factsOf(raw json.RawMessage) *blockFacts {
	f := &blockFacts{}
	canon, bp := canonical(raw)
	f.canon, f.canonLen, f.breakpoint = sha256.Sum256(canon), len(canon), bp
	f.sentOK = json.Unmarshal(raw, &f.sent) == nil
	var tb struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	f.textOK = json.Unmarshal(raw, &tb) == nil
	f.textType, f.text = tb.Type == "text", tb.Text
	var rb struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
	}
	f.resultOK = json.Unmarshal(raw, &rb) == nil
	if f.resultType = rb.Type == "tool_result"; f.resultType {
		f.toolUseID, f.resultText = rb.ToolUseID, textOf(rb.Content)
	}
	var tool struct {
		Name string `json:"name"`
	}
	f.nameOK = json.Unmarshal(raw, &tool) == nil
	f.name = tool.Name
	return f
}

// memoLimit bounds the blocks a blockMemo remembers; past it, it starts
// again.
const memoLimit = 1 << 16

// contentFacts is what the server reads of a message's content: its
// blocks (a string is one text block, see blocksOf) and whether it is a
// list or a string.
type contentFacts struct {
	blocks    []*blockFacts
	list, str bool
}

// blockMemo remembers the facts of the contents and blocks requests sent:
// a client resends its whole transcript with every request, so each is
// decoded and canonicalised once rather than once per request (which made
// the request of a 500-turn resume, 250 KB, take 21 ms to serve; 8 ms with
// the blocks remembered, about 6 ms with the contents too:
// BenchmarkServeLongRequest). A nil memo remembers nothing. It is safe
// for concurrent use.
type blockMemo struct {
	mu       sync.Mutex
	facts    map[string]*blockFacts
	contents map[string]*contentFacts
}

// of returns the facts of the block raw.
func (m *blockMemo) of(raw json.RawMessage) *blockFacts {
	if m == nil {
		return factsOf(raw)
	}
	return remember(m, &m.facts, raw, factsOf)
}

// content returns the facts of the message content raw.
func (m *blockMemo) content(raw json.RawMessage) *contentFacts {
	read := func(raw json.RawMessage) *contentFacts {
		c := &contentFacts{list: isList(raw), str: isString(raw)}
		for _, b := range blocksOf(raw) {
			c.blocks = append(c.blocks, m.of(b))
		}
		return c
	}
	if m == nil {
		return read(raw)
	}
	return remember(m, &m.contents, raw, read)
}

// remember looks raw up in *facts, working its facts out with f (without
// the lock held) when they are not there.
func remember[T any](m *blockMemo, facts *map[string]*T, raw json.RawMessage, f func(json.RawMessage) *T) *T {
	m.mu.Lock()
	v, ok := (*facts)[string(raw)]
	m.mu.Unlock()
	if ok {
		return v
	}
	v = f(raw)
	m.mu.Lock()
	if *facts == nil || len(*facts) >= memoLimit {
		*facts = map[string]*T{}
	}
	(*facts)[string(raw)] = v
	m.mu.Unlock()
	return v
}

// isList reports whether raw is a JSON array.
func isList(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}

// isString reports whether raw is a JSON string.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '"'
}

// canonical re-encodes a JSON value with sorted keys and no cache_control,
// and reports whether it had one.
func canonical(raw json.RawMessage) ([]byte, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw, false
	}
	bp := false
	if m, ok := v.(map[string]any); ok {
		_, bp = m["cache_control"]
		delete(m, "cache_control")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw, bp
	}
	return b, bp
}

// blocksOf lists a content value's blocks: a string is one text block.
func blocksOf(raw json.RawMessage) []json.RawMessage {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]any{"type": "text", "text": s})
		return []json.RawMessage{b}
	}
	return []json.RawMessage{raw}
}

// cacheUse is what a request read from and wrote to the prompt cache, in
// tokens.
type cacheUse struct{ read, write int }

// anthropicCache applies Anthropic's rule: a request's cached prefix is the
// longest prefix, ending at or before its last cache_control breakpoint,
// that an earlier request wrote; the request writes the prefix up to each
// of its breakpoints. There is no minimum length and no expiry. Called
// with s.mu held.
func (s *Server) anthropicCache(segs []segment) cacheUse {
	last := -1
	for i, g := range segs {
		if g.breakpoint {
			last = i
		}
	}
	if last < 0 {
		return cacheUse{}
	}
	var u cacheUse
	for i := last; i >= 0; i-- {
		if s.written[segs[i].key] {
			u.read = tokens(segs[i].cum)
			break
		}
	}
	u.write = tokens(segs[last].cum) - u.read
	for _, g := range segs {
		if g.breakpoint {
			s.written[g.key] = true
		}
	}
	return u
}

// OpenAI caches prompts of 1024 tokens or more by themselves, in steps of
// 128 tokens.
const (
	openAICacheMin  = 1024
	openAICacheStep = 128
)

// openAICache applies OpenAI's automatic caching: the longest prefix an
// earlier request sent, rounded down to a multiple of 128 tokens, counts
// as cached when it is at least 1024 tokens. Called with s.mu held.
func (s *Server) openAICache(segs []segment) cacheUse {
	var u cacheUse
	for i := len(segs) - 1; i >= 0; i-- {
		if s.seen[segs[i].key] {
			u.read = tokens(segs[i].cum) / openAICacheStep * openAICacheStep
			break
		}
	}
	if u.read < openAICacheMin {
		u.read = 0
	}
	for _, g := range segs {
		s.seen[g.key] = true
	}
	return u
}

// contextError is the message a server gives for a prompt over its
// window, in the format's own words.
func contextError(format string, got, window int) string {
	if format == FormatOpenAI {
		return fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", window, got)
	}
	return fmt.Sprintf("prompt is too long: %d tokens > %d maximum", got, window)
}
