package fakemodel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
func (s *segmenter) add(tag string, raw json.RawMessage) {
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
