package session

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// MessagesJSONSize returns len(json.Marshal(msgs)) without building the
// encoding: the agent sizes every request it is about to send to decide
// whether to compact first, and marshalling a 500-turn transcript by
// reflection for its length alone cost about 3 ms of each resumed
// process's CPU (perf, BenchmarkProcessResumeLong). TestMessagesJSONSize
// checks it against encoding/json on random messages of every field.
func MessagesJSONSize(msgs []Message) int {
	if msgs == nil {
		return len("null")
	}
	n := len("[]") + max(0, len(msgs)-1) // brackets and commas
	for i := range msgs {
		n += messageSize(&msgs[i])
	}
	return n
}

// messageSize is the size of one Message's JSON.
func messageSize(m *Message) int {
	n := len(`{"role":,"blocks":}`) + stringSize(m.Role)
	if m.Blocks == nil {
		return n + len("null")
	}
	n += len("[]") + max(0, len(m.Blocks)-1)
	for i := range m.Blocks {
		n += blockSize(&m.Blocks[i])
	}
	return n
}

// blockSize is the size of one Block's JSON, its omitempty fields left
// out as encoding/json leaves them.
func blockSize(b *Block) int {
	n := len(`{"type":}`) + stringSize(b.Type)
	field := func(name string, size int) { n += len(`,"":`) + len(name) + size }
	if b.Text != "" {
		field("text", stringSize(b.Text))
	}
	if b.ID != "" {
		field("id", stringSize(b.ID))
	}
	if b.Name != "" {
		field("name", stringSize(b.Name))
	}
	if len(b.Input) > 0 {
		field("input", rawSize(b.Input))
	}
	if b.ToolUseID != "" {
		field("tool_use_id", stringSize(b.ToolUseID))
	}
	if b.IsError {
		field("is_error", len("true"))
	}
	if len(b.Images) > 0 {
		size := len("[]") + len(b.Images) - 1
		for _, im := range b.Images {
			size += len(`{"media_type":,"data":}`) + stringSize(im.MediaType)
			if im.Data == nil {
				size += len("null")
			} else {
				size += 2 + base64.StdEncoding.EncodedLen(len(im.Data))
			}
		}
		field("images", size)
	}
	if b.Signature != "" {
		field("signature", stringSize(b.Signature))
	}
	return n
}

// stringSize is the size of s as encoding/json writes it: quoted, with
// HTML characters, U+2028, U+2029, control characters and invalid UTF-8
// escaped.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if w := asciiSize[s[i]]; w != 0 {
			n += int(w)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// asciiSize is the encoded size of each ASCII byte in a JSON string; 0
// for the bytes of multi-byte runes.
var asciiSize = func() (t [256]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			t[c] = 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			t[c] = 6
		default:
			t[c] = 1
		}
	}
	return t
}()

// rawSize is the size of a json.RawMessage as encoding/json writes it:
// compacted, with HTML characters escaped. Inputs as the models send them
// are usually compact already, which is checked without copying.
func rawSize(raw json.RawMessage) int {
	if !needsCompact(raw) {
		return len(raw)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return len(raw) // Marshal fails on it; the estimate keeps its length
	}
	n := buf.Len()
	for _, c := range buf.Bytes() {
		if c == '<' || c == '>' || c == '&' {
			n += 5 // \u003c for one byte
		}
	}
	return n + 3*bytes.Count(buf.Bytes(), []byte("\u2028")) + 3*bytes.Count(buf.Bytes(), []byte("\u2029"))
}

// needsCompact reports whether raw holds a byte json.Marshal would change
// or drop: whitespace, an HTML character, or U+2028/U+2029's first byte.
func needsCompact(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}
