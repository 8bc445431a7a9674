package provider

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/session"
)

// TestEncodedCoversEveryField: changing any one field of a block (or of
// its image) makes the message another one to Encoded, so a kept message
// is never sent for a changed one. It fails when session.Block or
// session.Image gains a field that sameMessage and key do not cover.
func TestEncodedCoversEveryField(t *testing.T) {
	base := session.Block{Type: "tool_result", Text: "t", ID: "i", Name: "n", Input: []byte(`{"a":1}`),
		ToolUseID: "u", IsError: false, Images: []session.Image{{MediaType: "image/png", Data: []byte{1}}}, Signature: "s"}
	e := NewEncoded()
	m := Message{Role: session.RoleUser, Blocks: []session.Block{base}}
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
		other := Message{Role: m.Role, Blocks: []session.Block{b}}
		if sameMessage(m, other) {
			t.Errorf("a block with another %s is the same message to sameMessage", name)
		}
		if e.key(m, 0) == e.key(other, 0) {
			t.Errorf("a block with another %s has the same key", name)
		}
	}
	if !sameMessage(m, Message{Role: m.Role, Blocks: []session.Block{base}}) {
		t.Error("a message is not the same as its copy")
	}
	if e.key(m, 1) == e.key(m, 0) {
		t.Error("the variant does not change the key")
	}
}

// TestEncodedKeepsWhatWasSentLast: Get finds what Put kept, in its own
// variant only; past the limit, Trim lets go of what was sent longest ago
// and keeps what the last request sent.
func TestEncodedKeepsWhatWasSentLast(t *testing.T) {
	e := NewEncoded()
	e.limit = 100
	msg := func(i int) Message {
		return Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: strings.Repeat("x", i)}}}
	}
	for i := range 10 {
		gen := e.Begin(1)
		_, miss, _ := e.Get(gen, msg(i), 0)
		e.Put(gen, miss, json.RawMessage(strings.Repeat("y", 20)))
		e.Trim()
	}
	gen := e.Begin(1)
	if got, _, ok := e.Get(gen, msg(9), 0); !ok || len(got) != 1 {
		t.Fatalf("the message sent last is not kept: %v %v", got, ok)
	}
	if _, _, ok := e.Get(gen, msg(9), 1); ok {
		t.Fatal("another variant of a kept message was found")
	}
	if _, _, ok := e.Get(gen, msg(0), 0); ok {
		t.Fatal("the message sent first is still kept past the limit")
	}
	if e.size > e.limit {
		t.Fatalf("%d bytes kept, over the limit of %d", e.size, e.limit)
	}
}

// TestEncodedKeyCollision: two messages under one key are both kept and
// each found as itself, before and after Trim; what Trim lets go is
// cleared, so a slab shared with kept messages holds nothing of it.
func TestEncodedKeyCollision(t *testing.T) {
	e := NewEncoded()
	e.limit = 20
	msg := func(text string) Message {
		return Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: text}}}
	}
	a, b, c := msg("a"), msg("b"), msg("c")
	gen := e.Begin(3)
	_, missA, _ := e.Get(gen, a, 0)
	e.Put(gen, missA, json.RawMessage(`"aaaaaaaaaa"`)) // 12 bytes
	missB := Miss{key: missA.key, msg: b}              // b under a's key
	e.Put(gen, missB, json.RawMessage(`"B1"`), json.RawMessage(`"B2"`))
	chain := func(m Message) *encodedMessage {
		for em := e.byKey[missA.key]; em != nil; em = em.next {
			if sameMessage(em.msg, m) {
				return em
			}
		}
		return nil
	}
	emA, emB := chain(a), chain(b)
	if emA == nil || string(emA.json[0]) != `"aaaaaaaaaa"` || emB == nil || len(emB.json) != 2 || string(emB.json[1]) != `"B2"` {
		t.Fatalf("the two messages under one key: %+v %+v", emA, emB)
	}
	// c is sent after a, b after c; past the limit, Trim keeps b only
	// (8 bytes of the 10 it keeps down to).
	gen = e.Begin(1)
	_, missC, _ := e.Get(gen, c, 0)
	e.Put(gen, missC, json.RawMessage(`"cc"`))
	gen = e.Begin(1)
	if _, _, ok := e.Get(gen, b, 0); ok {
		t.Fatal("b was found under its own key, where it was never put")
	}
	emB.used = gen
	e.Trim()
	// Trim files what it keeps under its own key.
	gotB, _, okB := e.Get(gen, b, 0)
	_, _, okA := e.Get(gen, a, 0)
	if e.size != 8 || !okB || len(gotB) != 2 || okA {
		t.Fatalf("after Trim: %d bytes, b %v %s, a %v; want 8, b kept, a gone", e.size, okB, gotB, okA)
	}
	if emA.msg.Blocks != nil || emA.json != nil {
		t.Fatalf("a was let go but its slot still holds %+v", *emA)
	}
}

// TestEncodedKeepsACopy: Put keeps a copy of the JSON it is given, so the
// caller may encode the next message into the same bytes; a kept message's
// JSON cannot be grown into its neighbour's; a repeated message in the
// first request of an empty Encoded (which Get misses without a lookup) is
// found by the next request; and Trim copies what it keeps out of the
// chunks it shared with what it let go.
func TestEncodedKeepsACopy(t *testing.T) {
	e := NewEncoded()
	msg := func(text string) Message {
		return Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: text}}}
	}
	a, b := msg("a"), msg("b")
	gen := e.Begin(3)
	buf := []byte(`"first"`)
	var kept [][]json.RawMessage
	for i, m := range []Message{a, b, a} {
		if _, _, ok := e.Get(gen, m, 0); ok {
			t.Fatalf("message %d was found in an Encoded that kept nothing", i)
		}
		_, miss, _ := e.Get(gen, m, 0)
		buf = append(buf[:0], fmt.Sprintf(`"json of %s"`, m.Blocks[0].Text)...)
		kept = append(kept, e.Put(gen, miss, buf))
	}
	buf = append(buf[:0], `"clobbered"`...)
	if got := string(kept[0][0]); got != `"json of a"` {
		t.Fatalf("Put returned %s after its argument's bytes were reused; want a copy", got)
	}
	if j := kept[0][0]; cap(j) != len(j) {
		t.Fatalf("a kept message's JSON has room for %d more bytes: an append would write over the next", cap(j)-len(j))
	}
	gen = e.Begin(2)
	gotA, _, okA := e.Get(gen, a, 0)
	gotB, _, okB := e.Get(gen, b, 0)
	if !okA || !okB || string(gotA[0]) != `"json of a"` || string(gotB[0]) != `"json of b"` {
		t.Fatalf("the next request found a %v %s, b %v %s; want both", okA, gotA, okB, gotB)
	}
	e.limit = 2 * len(gotB[0])
	for em := e.byKey[e.key(a, 0)]; em != nil; em = em.next {
		em.used = 0 // a (both copies) was sent longest ago
	}
	before := &gotB[0][0]
	e.Trim()
	gen = e.Begin(1)
	after, _, ok := e.Get(gen, b, 0)
	if !ok || string(after[0]) != `"json of b"` {
		t.Fatalf("after Trim b is %v %s; want it kept", ok, after)
	}
	if &after[0][0] == before {
		t.Fatal("Trim kept b in the chunk it shared with a, which it let go")
	}
	if _, _, ok := e.Get(gen, a, 0); ok {
		t.Fatal("Trim kept a, sent longest ago")
	}
}
