package anthropic

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// TestEncodedCoversEveryField: changing any one field of a block (or of
// its image) makes the message another one to encoded, so a kept message
// is never sent for a changed one. It fails when session.Block or
// session.Image gains a field that sameMessage and key do not cover.
func TestEncodedCoversEveryField(t *testing.T) {
	base := session.Block{Type: "tool_result", Text: "t", ID: "i", Name: "n", Input: []byte(`{"a":1}`),
		ToolUseID: "u", IsError: false, Images: []session.Image{{MediaType: "image/png", Data: []byte{1}}}, Signature: "s"}
	e := newEncoded()
	m := provider.Message{Role: session.RoleUser, Blocks: []session.Block{base}}
	changes := map[string]func(b *session.Block){}
	bt := reflect.TypeFor[session.Block]()
	for i := range bt.NumField() {
		f := bt.Field(i)
		switch f.Name {
		case "Images":
			changes["Images.MediaType"] = func(b *session.Block) { b.Images = []session.Image{{MediaType: "image/gif", Data: []byte{1}}} }
			changes["Images.Data"] = func(b *session.Block) { b.Images = []session.Image{{MediaType: "image/png", Data: []byte{2}}} }
			if n := reflect.TypeFor[session.Image]().NumField(); n != 2 {
				t.Fatalf("session.Image has %d fields; teach sameMessage, key and this test the new one", n)
			}
			continue
		}
		switch f.Type.Kind() {
		case reflect.String:
			changes[f.Name] = func(b *session.Block) { v := reflect.ValueOf(b).Elem().Field(i); v.SetString(v.String() + "x") }
		case reflect.Bool:
			changes[f.Name] = func(b *session.Block) { v := reflect.ValueOf(b).Elem().Field(i); v.SetBool(!v.Bool()) }
		case reflect.Slice:
			changes[f.Name] = func(b *session.Block) { reflect.ValueOf(b).Elem().Field(i).SetBytes([]byte(`{"a":2}`)) }
		default:
			t.Fatalf("session.Block.%s is a %s; teach sameMessage, key and this test about it", f.Name, f.Type)
		}
	}
	for name, change := range changes {
		b := base
		change(&b)
		other := provider.Message{Role: m.Role, Blocks: []session.Block{b}}
		if sameMessage(m, other) {
			t.Errorf("a block with another %s is the same message to sameMessage", name)
		}
		if e.key(m, false, false) == e.key(other, false, false) {
			t.Errorf("a block with another %s has the same key", name)
		}
	}
	if !sameMessage(m, provider.Message{Role: m.Role, Blocks: []session.Block{base}}) {
		t.Error("a message is not the same as its copy")
	}
	for _, flags := range [][2]bool{{true, false}, {false, true}} {
		if e.key(m, flags[0], flags[1]) == e.key(m, false, false) {
			t.Errorf("thinking/mark %v do not change the key", flags)
		}
	}
}

// BenchmarkEncodeLongTranscript: building and encoding the request body
// of a 500-turn transcript (what is sent), by a provider that has
// sent the same transcript before ("kept") and by a fresh one ("fresh").
// go test -run '^$' -bench EncodeLongTranscript -benchmem ./provider/anthropic
func BenchmarkEncodeLongTranscript(b *testing.B) {
	var msgs []provider.Message
	for i := range 500 {
		cid := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprintf("prompt %d: please change file %d", i, i)}}},
			provider.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "Let me edit it."},
				{Type: session.BlockToolUse, ID: cid, Name: "edit", Input: []byte(`{"path":"f.go","old_string":"a","new_string":"b"}`)}}},
			provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: cid, Text: "edited f.go"}}},
			provider.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "Done: I changed a to b in f.go, as asked. Anything else?"}}},
		)
	}
	req := provider.Request{Model: "m", System: "sys", Messages: msgs}
	for _, kept := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "kept"}[kept], func(b *testing.B) {
			p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
			if err != nil {
				b.Fatal(err)
			}
			if kept {
				p.params(req)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !kept {
					p.encoded = newEncoded()
				}
				params, err := p.params(req)
				if err != nil {
					b.Fatal(err)
				}
				sent, ok, err := body(params)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				b.SetBytes(int64(len(sent)))
			}
		})
	}
}

// TestBodyIsTheSDKsEncoding: the body assembled from kept messages is the
// JSON the SDK makes of the same params, with tools, system, thinking,
// images and text that look like the slot the messages go in.
func TestBodyIsTheSDKsEncoding(t *testing.T) {
	p, err := New(&Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Model: "m", System: `sys ,"messages":[0]`, ThinkingBudget: 2048,
		Tools: []provider.ToolSpec{{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"messages":{"type":"array","default":[0]}}}`)}},
		Messages: []provider.Message{
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: `{"max_tokens":1,"messages":[0]} <&>`}}},
			{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "t", Input: json.RawMessage(`{"messages":[0]}`)}}},
			{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: "c1", Text: "ok",
				Images: []session.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}}}},
		}}
	for round := range 2 { // encoded, then kept
		params, err := p.params(req)
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := body(params)
		if err != nil || !ok {
			t.Fatalf("round %d: body: ok %v, %v", round, ok, err)
		}
		want, err := params.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("round %d: the body is not JSON: %v\n%s", round, err, got)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d: body\n%s\nwant the SDK's\n%s", round, got, want)
		}
	}
}
