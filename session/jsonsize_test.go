package session_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/lite-agent/lite-agent/session"
)

// jsonText draws strings of the characters encoding/json treats apart:
// quotes, backslashes, control characters, HTML characters, U+2028 and
// U+2029, multi-byte runes and invalid UTF-8.
func jsonText() *rapid.Generator[string] {
	pieces := []string{"a", "Z", " ", "\"", "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "<", ">", "&", "\u2028", "\u2029", "é", "日本", "🙂", "\xff", "\xe2\x80", "/"}
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		for range rapid.IntRange(0, 12).Draw(t, "pieces") {
			b.WriteString(rapid.SampledFrom(pieces).Draw(t, "piece"))
		}
		return b.String()
	})
}

// jsonInput draws a valid JSON object as a model's tool input may arrive:
// compact or spaced, with any text in its strings.
func jsonInput() *rapid.Generator[json.RawMessage] {
	return rapid.Custom(func(t *rapid.T) json.RawMessage {
		if rapid.IntRange(0, 5).Draw(t, "empty") == 0 {
			return nil
		}
		if rapid.IntRange(0, 3).Draw(t, "literal") == 0 {
			// Raw text encoding/json would not have written: unescaped
			// HTML characters, U+2028 and U+2029, spaces inside a string.
			lit := rapid.SliceOf(rapid.SampledFrom([]string{"a", " ", "<", "&", "\u2028", "\u2029", "é"})).Draw(t, "literal text")
			return json.RawMessage(`{ "k" : "` + strings.Join(lit, "") + `" }`)
		}
		v := map[string]any{}
		for i := range rapid.IntRange(0, 3).Draw(t, "keys") {
			v[jsonText().Draw(t, "key")] = []any{jsonText().Draw(t, "value"), i, true, nil}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "spaced") {
			var spaced bytes.Buffer
			json.Indent(&spaced, b, " ", "\t")
			return json.RawMessage("\n " + spaced.String() + " \r\n")
		}
		return b
	})
}

func TestMessagesJSONSize(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var msgs []session.Message
		if rapid.IntRange(0, 9).Draw(t, "nil") > 0 {
			msgs = []session.Message{}
		}
		for range rapid.IntRange(0, 4).Draw(t, "messages") {
			m := session.Message{Role: rapid.SampledFrom([]string{"user", "assistant", ""}).Draw(t, "role")}
			if rapid.IntRange(0, 9).Draw(t, "nil blocks") > 0 {
				m.Blocks = []session.Block{}
			}
			for range rapid.IntRange(0, 4).Draw(t, "blocks") {
				b := session.Block{
					Type:      rapid.SampledFrom([]string{"text", "tool_use", "tool_result", "thinking"}).Draw(t, "type"),
					Text:      jsonText().Draw(t, "text"),
					ID:        jsonText().Draw(t, "id"),
					Name:      jsonText().Draw(t, "name"),
					Input:     jsonInput().Draw(t, "input"),
					ToolUseID: jsonText().Draw(t, "tool_use_id"),
					IsError:   rapid.Bool().Draw(t, "is_error"),
					Signature: jsonText().Draw(t, "signature"),
				}
				for range rapid.IntRange(0, 2).Draw(t, "images") {
					im := session.Image{MediaType: jsonText().Draw(t, "media_type")}
					if n := rapid.IntRange(-1, 7).Draw(t, "data"); n >= 0 {
						im.Data = make([]byte, n)
					}
					b.Images = append(b.Images, im)
				}
				m.Blocks = append(m.Blocks, b)
			}
			msgs = append(msgs, m)
		}
		want, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := session.MessagesJSONSize(msgs); got != len(want) {
			t.Fatalf("MessagesJSONSize = %d, json.Marshal made %d bytes: %s", got, len(want), want)
		}
	})
}

// BenchmarkMessagesJSONSize: sizing a 500-turn transcript's messages, by
// MessagesJSONSize and by marshalling them.
func BenchmarkMessagesJSONSize(b *testing.B) {
	var msgs []session.Message
	for i := range 500 {
		msgs = append(msgs,
			session.Message{Role: "user", Blocks: []session.Block{{Type: "text", Text: strings.Repeat("please change the file ", 4)}}},
			session.Message{Role: "assistant", Blocks: []session.Block{
				{Type: "text", Text: "Let me edit it."},
				{Type: "tool_use", ID: "c" + strings.Repeat("1", i%7), Name: "edit", Input: json.RawMessage(`{"path":"f.go","old_string":"a","new_string":"b"}`)},
			}},
		)
	}
	b.Run("size", func(b *testing.B) {
		for b.Loop() {
			session.MessagesJSONSize(msgs)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			out, _ := json.Marshal(msgs)
			_ = len(out)
		}
	})
}
