package liteagent

import (
	"encoding/json"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// TestSameRequestIsDeepEqual: sameRequest answers as reflect.DeepEqual on
// pairs of requests that share block lists, copy them, or differ in one
// field of a block, a message or the request.
func TestSameRequestIsDeepEqual(t *testing.T) {
	if n := reflect.TypeFor[session.Message]().NumField(); n != 2 {
		t.Fatalf("session.Message has %d fields; sameRequest compares Role and Blocks only: compare the new one too", n)
	}
	text := rapid.SampledFrom([]string{"", "a", "b"})
	rapid.Check(t, func(t *rapid.T) {
		var msgs []session.Message
		for range rapid.IntRange(0, 4).Draw(t, "messages") {
			m := session.Message{Role: rapid.SampledFrom([]string{"user", "assistant"}).Draw(t, "role")}
			for range rapid.IntRange(0, 3).Draw(t, "blocks") {
				m.Blocks = append(m.Blocks, session.Block{Type: "text", Text: text.Draw(t, "text"), Input: json.RawMessage(text.Draw(t, "input"))})
			}
			msgs = append(msgs, m)
		}
		a := provider.Request{Model: "m", System: text.Draw(t, "system"), Messages: msgs, Tools: []provider.ToolSpec{{Name: "t"}}}
		b := a
		b.Messages = append([]session.Message(nil), msgs...) // the blocks shared
		switch rapid.IntRange(0, 6).Draw(t, "change") {
		case 1:
			b.System = text.Draw(t, "other system")
		case 2:
			if i := len(b.Messages); i > 0 {
				i = rapid.IntRange(0, i-1).Draw(t, "copied")
				b.Messages[i].Blocks = append([]session.Block(nil), b.Messages[i].Blocks...)
				if j := len(b.Messages[i].Blocks); j > 0 && rapid.Bool().Draw(t, "edit copy") {
					b.Messages[i].Blocks[rapid.IntRange(0, j-1).Draw(t, "block")].Text += "x"
				}
			}
		case 3:
			if i := len(b.Messages); i > 0 {
				b.Messages[rapid.IntRange(0, i-1).Draw(t, "role of")].Role = "user"
			}
		case 4:
			b.Messages = b.Messages[:len(b.Messages)/2]
		case 5:
			b.Tools = []provider.ToolSpec{{Name: "u"}}
		case 6:
			if len(b.Messages) == 0 {
				b.Messages = nil
			}
		}
		if got, want := sameRequest(a, b), reflect.DeepEqual(a, b); got != want {
			t.Fatalf("sameRequest = %v, reflect.DeepEqual = %v\na %+v\nb %+v", got, want, a, b)
		}
	})
}
