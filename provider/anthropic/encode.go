package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// encodeMessage returns the JSON of the transcript's message i as a
// message param, byte for byte what the SDK encodes it to (its encoder
// walks the params by reflection: the first call of a resumed 500-turn
// session spent most of its CPU there). ok is false for a message left
// with no blocks. Empty text blocks are dropped (the API refuses them). In
// a user message, tool results go first, as the API requires. With mark,
// the message's last block carries a prompt-cache breakpoint.
//
// Thinking blocks are sent back, in their place and unchanged, when
// thinking is on (the API requires those of the current tool use); without
// it they are left out. TestEncodeMessageIsTheSDKs and
// FuzzEncodeMessageIsTheSDKs compare it with the SDK's encoding.
//
// The JSON is appended to dst (a buffer the caller reuses), and the
// result is dst extended.
func encodeMessage(dst []byte, i int, m provider.Message, thinking, mark bool) (json.RawMessage, bool, error) {
	if err := checkBlocks(i, m); err != nil {
		return nil, false, err
	}
	sends := func(b *session.Block) bool {
		switch b.Type {
		case session.BlockThinking, session.BlockRedactedThinking:
			return thinking && m.Role == session.RoleAssistant && (b.Type != session.BlockThinking || b.Signature != "")
		case session.BlockText:
			return b.Text != ""
		}
		return true
	}
	// The last block sent (for the breakpoint): the last of the others, or
	// the last result when there are none.
	lastResult, lastOther, n := -1, -1, 0
	for j := range m.Blocks {
		b := &m.Blocks[j]
		if !sends(b) {
			continue
		}
		n++
		if b.Type == session.BlockToolResult {
			lastResult = j
		} else {
			lastOther = j
		}
	}
	if n == 0 {
		return nil, false, nil
	}
	if m.Role != session.RoleUser && m.Role != session.RoleAssistant {
		return nil, false, fmt.Errorf("anthropic: message %d: role %q is neither %q nor %q", i+1, m.Role, session.RoleUser, session.RoleAssistant)
	}
	markAt := -1
	if mark && m.Role == session.RoleUser {
		markAt = lastOther
		if markAt < 0 {
			markAt = lastResult
		}
	}
	out := append(dst, `{"content":[`...)
	first := true
	for pass := range 2 { // tool results, then the others
		for j := range m.Blocks {
			b := &m.Blocks[j]
			if (b.Type == session.BlockToolResult) != (pass == 0) || !sends(b) {
				continue
			}
			if !first {
				out = append(out, ',')
			}
			first = false
			out = appendBlock(out, b, j == markAt)
		}
	}
	out = append(out, `],"role":`...)
	out = appendString(out, m.Role)
	return append(out, '}'), true, nil
}

// checkBlocks refuses what the API does not take: a block in the wrong
// role's message, tool input that is not JSON, an unknown block type.
func checkBlocks(i int, m provider.Message) error {
	for j := range m.Blocks {
		b := &m.Blocks[j]
		switch b.Type {
		case session.BlockThinking, session.BlockRedactedThinking, session.BlockText:
		case session.BlockToolUse:
			if m.Role != session.RoleAssistant {
				return fmt.Errorf("anthropic: message %d (%s), block %d: a tool_use block belongs in an assistant message", i+1, m.Role, j+1)
			}
			if len(b.Input) > 0 && !json.Valid(b.Input) {
				return fmt.Errorf("anthropic: message %d, block %d: tool_use %s has invalid JSON input", i+1, j+1, b.ID)
			}
		case session.BlockToolResult:
			if m.Role != session.RoleUser {
				return fmt.Errorf("anthropic: message %d (%s), block %d: a tool_result block belongs in a user message", i+1, m.Role, j+1)
			}
		default:
			return fmt.Errorf("anthropic: message %d, block %d: block type %q is not supported", i+1, j+1, b.Type)
		}
	}
	return nil
}

// cacheControl is a prompt-cache breakpoint as the SDK encodes it.
const cacheControl = `"cache_control":{"type":"ephemeral"},`

// appendBlock appends the JSON of a block that is sent, with the SDK's
// field order.
func appendBlock(out []byte, b *session.Block, mark bool) []byte {
	switch b.Type {
	case session.BlockThinking:
		out = append(out, `{"signature":`...)
		out = appendString(out, b.Signature)
		out = append(out, `,"thinking":`...)
		out = appendString(out, b.Text)
		return append(out, `,"type":"thinking"}`...)
	case session.BlockRedactedThinking:
		out = append(out, `{"data":`...)
		out = appendString(out, b.Text)
		return append(out, `,"type":"redacted_thinking"}`...)
	case session.BlockText:
		out = append(out, `{"text":`...)
		out = appendString(out, b.Text)
		out = append(out, ',')
		if mark {
			out = append(out, cacheControl...)
		}
		return append(out, `"type":"text"}`...)
	case session.BlockToolUse:
		out = append(out, `{"id":`...)
		out = appendString(out, b.ID)
		out = append(out, `,"input":`...)
		if len(b.Input) == 0 {
			out = append(out, `{}`...)
		} else {
			out = appendRaw(out, b.Input)
		}
		out = append(out, `,"name":`...)
		out = appendString(out, b.Name)
		return append(out, `,"type":"tool_use"}`...)
	}
	// A tool result.
	out = append(out, `{"tool_use_id":`...)
	out = appendString(out, b.ToolUseID)
	out = append(out, ',')
	if b.IsError {
		out = append(out, `"is_error":true,`...)
	}
	if mark {
		out = append(out, cacheControl...)
	}
	if b.Text != "" || len(b.Images) > 0 {
		out = append(out, `"content":[`...)
		if b.Text != "" {
			out = append(out, `{"text":`...)
			out = appendString(out, b.Text)
			out = append(out, `,"type":"text"}`...)
		}
		for k, im := range b.Images {
			if k > 0 || b.Text != "" {
				out = append(out, ',')
			}
			out = append(out, `{"source":{"data":"`...)
			out = base64.StdEncoding.AppendEncode(out, im.Data)
			out = append(out, '"', ',')
			if im.MediaType != "" {
				out = append(out, `"media_type":`...)
				out = appendString(out, im.MediaType)
				out = append(out, ',')
			}
			out = append(out, `"type":"base64"},"type":"image"}`...)
		}
		out = append(out, `],`...)
	}
	return append(out, `"type":"tool_result"}`...)
}

// appendRaw appends valid JSON as the SDK's encoder passes a raw message
// on: compacted, with <, >, &, U+2028 and U+2029 escaped. JSON that needs
// neither (most tool inputs) is copied as it is.
func appendRaw(out, raw []byte) []byte {
	if !needsRewrite(raw) {
		return append(out, raw...)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return append(out, raw...) // checked valid before; not reached
	}
	buf := bytes.NewBuffer(out)
	json.HTMLEscape(buf, compact.Bytes())
	return buf.Bytes()
}

// needsRewrite reports whether raw has a byte that compacting or escaping
// changes: white space, <, >, &, or 0xE2 (U+2028 and U+2029 begin with it).
func needsRewrite(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n', '<', '>', '&', 0xe2:
			return true
		}
	}
	return false
}

// hexDigits are the digits of \u escapes.
const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way the SDK's encoder (and
// encoding/json) writes it: <, >, & and control characters as \u escapes
// (\b, \f, \n, \r, \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped.
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			out = append(out, s[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
