package provider

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/session"
)

// TestEncodedCoversEveryField: changing any one field of a block (or of
// its image) makes the message another one to Encoded, so a kept message
// is never sent for a changed one. It fails when session.Block or
// session.Image gains a field that sameMessage does not cover.
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
				t.Fatalf("session.Image has %d fields; teach sameMessage and this test the new one", n)
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
			t.Fatalf("session.Block.%s is a %s; teach sameMessage and this test about it", f.Name, f.Type)
		}
	}
	for name, change := range changes {
		b := base
		change(&b)
		other := Message{Role: m.Role, Blocks: []session.Block{b}}
		if sameMessage(m, other) {
			t.Errorf("a block with another %s is the same message to sameMessage", name)
		}
		if _, misses := send(e, []Message{m}, 0); misses != 0 && name == "" {
			t.Fatal("unreachable")
		}
		if _, misses := send(e, []Message{other}, 0); misses != 1 {
			t.Errorf("a block with another %s was sent as the kept message", name)
		}
	}
	if !sameMessage(m, Message{Role: m.Role, Blocks: []session.Block{base}}) {
		t.Error("a message is not the same as its copy")
	}
	send(e, []Message{m}, 0)
	if _, misses := send(e, []Message{m}, 1); misses != 1 {
		t.Error("another variant of a kept message was sent as it")
	}
}

// send makes one request of msgs through e, every message in variant,
// each missed one encoded as its text and variant, and returns the JSON
// sent and how many messages were encoded.
func send(e *Encoded, msgs []Message, variant uint8) (sent []string, misses int) {
	r := e.Begin(msgs)
	buf := []byte{}
	for _, m := range msgs {
		raws, ok := r.Get(variant)
		if !ok {
			misses++
			buf = fmt.Appendf(buf[:0], "%q", fmt.Sprintf("%s %s/%d", m.Role, text(m), variant))
			raws = r.Put(variant, buf)
		}
		for _, j := range raws {
			sent = append(sent, string(j))
		}
	}
	r.Done()
	return sent, misses
}

// text is m's blocks' texts, joined.
func text(m Message) string {
	var b strings.Builder
	for _, bl := range m.Blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// want is what send sends for msgs in variant.
func want(msgs []Message, variant uint8) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%q", fmt.Sprintf("%s %s/%d", m.Role, text(m), variant)))
	}
	return out
}

// transcript is n messages of a session whose texts begin with name; the
// first message is the same in every session.
func transcript(name string, n int) []Message {
	out := make([]Message, n)
	for i := range out {
		t := fmt.Sprintf("%s message %d", name, i)
		if i == 0 {
			t = "the same first prompt"
		}
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		out[i] = Message{Role: role, Blocks: []session.Block{{Type: session.BlockText, Text: t}}}
	}
	return out
}

// TestEncodedContinuesItsLine: each request of a growing transcript
// encodes only its new messages, also while another session with the
// same first message sends between them; a message in another variant,
// or a transcript changed in the middle, is encoded again from there; a
// copy of the transcript (a resumed session: equal strings, not the same
// ones) is found too; and what is sent is always the JSON of the
// messages sent.
func TestEncodedContinuesItsLine(t *testing.T) {
	e := NewEncoded()
	a, b := transcript("a", 40), transcript("b", 40)
	for n := 2; n <= 40; n += 2 {
		for _, tr := range [][]Message{a, b} {
			got, misses := send(e, tr[:n], 0)
			if wantMisses := min(n, 2); n > 2 && misses != wantMisses || n == 2 && misses > 2 {
				t.Fatalf("request of %d messages encoded %d; want only the %d new", n, misses, wantMisses)
			}
			if !slices.Equal(got, want(tr[:n], 0)) {
				t.Fatalf("request of %d messages sent %q", n, got)
			}
		}
	}
	if _, misses := send(e, a, 1); misses != len(a) {
		t.Fatalf("another variant encoded %d of %d messages", misses, len(a))
	}
	if _, misses := send(e, a, 0); misses != 0 {
		t.Fatalf("the first variant again encoded %d messages; the other variant took its place", misses)
	}
	if _, misses := send(e, a, 1); misses != 0 {
		t.Fatalf("the other variant again encoded %d messages; the first took its place", misses)
	}
	changed := slices.Clone(a)
	changed[30] = Message{Role: a[30].Role, Blocks: []session.Block{{Type: session.BlockText, Text: "summary"}}}
	got, misses := send(e, changed, 0)
	if misses != 10 || !slices.Equal(got, want(changed, 0)) {
		t.Fatalf("a transcript changed at message 30 of 40 encoded %d messages and sent %q; want 10", misses, got)
	}
	copied := make([]Message, len(b))
	for i, m := range b {
		copied[i] = Message{Role: m.Role, Blocks: []session.Block{{Type: m.Blocks[0].Type, Text: strings.Clone(m.Blocks[0].Text)}}}
	}
	if got, misses := send(e, copied, 0); misses != 0 || !slices.Equal(got, want(b, 0)) {
		t.Fatalf("a copy of a kept transcript encoded %d messages, sent %q", misses, got)
	}
}

// TestEncodedLetsGoOfTheOldest: past the limit, the lines sent longest ago
// are let go and the latest is kept; an over-long transcript alone is
// kept whole.
func TestEncodedLetsGoOfTheOldest(t *testing.T) {
	e := NewEncoded()
	e.limit = 200
	for i := range 10 {
		send(e, transcript(fmt.Sprint(i), 2), 0) // about 55 bytes each
	}
	if e.size > e.limit || len(e.lines) == 0 {
		t.Fatalf("%d bytes in %d lines kept; want at most %d", e.size, len(e.lines), e.limit)
	}
	if _, misses := send(e, transcript("9", 2), 0); misses != 0 {
		t.Fatal("the transcript sent last was let go")
	}
	if _, misses := send(e, transcript("0", 2), 0); misses != 1 {
		t.Fatalf("the transcript sent first encoded %d messages again; want the one not shared", misses)
	}
	long := transcript("long", 20)
	send(e, long, 0)
	if len(e.lines) != 1 || e.size <= e.limit {
		t.Fatalf("after a transcript over the limit: %d lines, %d bytes; want it alone", len(e.lines), e.size)
	}
	if _, misses := send(e, long, 0); misses != 0 {
		t.Fatal("a transcript over the limit is not kept")
	}
	for i := range 2 * encodedLines {
		send(e, transcript(fmt.Sprint("many", i), 2), 0)
	}
	if len(e.lines) > encodedLines {
		t.Fatalf("%d lines kept; want at most %d", len(e.lines), encodedLines)
	}
}

// TestEncodedCompacts: a long session whose last messages change variant
// on every request (marks moving) holds at most twice what it keeps,
// not everything it ever encoded, and sends the right JSON after a
// compaction.
func TestEncodedCompacts(t *testing.T) {
	e := NewEncoded()
	var tr []Message
	var wantJSON [][3]string // each message's JSON in variants 0 to 2
	big := strings.Repeat("x", 8<<10)
	compacted := false
	for i := range 700 { // past encodedSlack (4 MiB) of messages let go, twice
		tr = append(tr, Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprint(i, big)}}})
		wantJSON = append(wantJSON, [3]string{fmt.Sprintf("%q", fmt.Sprint(i, big, 0)), fmt.Sprintf("%q", fmt.Sprint(i, big, 1)), fmt.Sprintf("%q", fmt.Sprint(i, big, 2))})
		r := e.Begin(tr)
		for j := range tr {
			variant := uint8(0)
			if j >= len(tr)-4 {
				variant = uint8(1 + i%2) // the four latest carry a mark that differs from the last request's
			}
			raws, ok := r.Get(variant)
			if !ok {
				raws = r.Put(variant, json.RawMessage(wantJSON[j][variant]))
			}
			if string(raws[0]) != wantJSON[j][variant] {
				t.Fatalf("request %d sent %.40s for message %d", i, raws[0], j)
			}
		}
		held := e.held
		r.Done()
		compacted = compacted || e.held < held
		if e.held > 2*e.size+encodedSlack+64<<10 {
			t.Fatalf("request %d: %d bytes held for %d kept; want at most twice and %d", i, e.held, e.size, encodedSlack)
		}
	}
	if !compacted {
		t.Fatal("never compacted")
	}
}

// TestEncodedConcurrent: sessions sharing an Encoded from their own
// goroutines (run with -race) each send their own messages' JSON.
func TestEncodedConcurrent(t *testing.T) {
	e := NewEncoded()
	e.limit = 4 << 10 // let go and compact while others send
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			tr := transcript(fmt.Sprint("g", g), 60)
			for n := 1; n <= len(tr); n++ {
				if got, _ := send(e, tr[:n], uint8(n%2)); !slices.Equal(got, want(tr[:n], uint8(n%2))) {
					errs <- fmt.Sprintf("session %d, request %d sent %q", g, n, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestEncodedKeepsACopy: Put keeps a copy of the JSON it is given, so the
// caller may encode the next message into the same bytes, and a kept
// message's JSON cannot be grown into its neighbour's.
func TestEncodedKeepsACopy(t *testing.T) {
	e := NewEncoded()
	tr := transcript("a", 3)
	r := e.Begin(tr)
	buf := []byte{}
	var kept [][]json.RawMessage
	for _, m := range tr {
		if _, ok := r.Get(0); ok {
			t.Fatal("a message was found in an Encoded that kept nothing")
		}
		buf = fmt.Appendf(buf[:0], "%q", text(m))
		kept = append(kept, r.Put(0, buf))
	}
	r.Done()
	buf = append(buf[:0], `"clobbered"`...)
	if got := string(kept[0][0]); got != fmt.Sprintf("%q", text(tr[0])) {
		t.Fatalf("Put returned %s after its argument's bytes were reused; want a copy", got)
	}
	if j := kept[0][0]; cap(j) != len(j) {
		t.Fatalf("a kept message's JSON has room for %d more bytes: an append would write over the next", cap(j)-len(j))
	}
	r = e.Begin(tr)
	for i := range tr {
		if got, ok := r.Get(0); !ok || string(got[0]) != string(kept[i][0]) {
			t.Fatalf("message %d: %v %s; want it kept", i, ok, got)
		}
	}
	r.Done()
}
