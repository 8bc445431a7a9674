package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// sdkEncode is the SDK's encoding of message i, with the breakpoint on its
// last block when mark: what encodeMessage must write.
func sdkEncode(i int, m provider.Message, thinking, mark bool) (json.RawMessage, bool, error) {
	mp, ok, err := sdkMessage(i, m, thinking)
	if err != nil || !ok {
		return nil, ok, err
	}
	if mark && mp.OfUser != nil {
		u := mp.OfUser
		if c := u.Content[len(u.Content)-1].GetCacheControl(); c != nil {
			*c = sdk.NewCacheControlEphemeralParam()
		}
	}
	raw, err := mp.MarshalJSON()
	return raw, true, err
}

// checkSameEncoding fails unless encodeMessage and the SDK agree on m:
// the same bytes, or the same error.
func checkSameEncoding(t *testing.T, m provider.Message) {
	t.Helper()
	for _, thinking := range []bool{false, true} {
		for _, mark := range []bool{false, true} {
			want, wantOK, wantErr := sdkEncode(3, m, thinking, mark)
			got, ok, err := encodeMessage(nil, 3, m, thinking, mark)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || ok != wantOK || string(got) != string(want) {
				t.Fatalf("thinking %v, mark %v, message %#v:\n got %v %s %v\nwant %v %s %v", thinking, mark, m, ok, got, err, wantOK, want, wantErr)
			}
		}
	}
}

// genText is text with what JSON escapes: quotes, backslashes, control
// characters, <>&, U+2028/9, invalid UTF-8, and plain runs.
func genText(r *rand.Rand) string {
	parts := []string{"", "a", "hello world", `"`, `\`, "\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x1f", "<", ">", "&",
		"\u2028", "\u2029", "\xff", "\xe2\x80", "é", "日本", "😀", "\x7f", " ", `{"messages":[0]}`}
	var b []byte
	for range r.IntN(8) {
		b = append(b, parts[r.IntN(len(parts))]...)
	}
	return string(b)
}

// genMessage is a random message of every block type, in either role
// (or another), valid or not.
func genMessage(r *rand.Rand) provider.Message {
	roles := []string{session.RoleUser, session.RoleUser, session.RoleAssistant, session.RoleAssistant, "system"}
	types := []string{session.BlockText, session.BlockText, session.BlockToolUse, session.BlockToolResult, session.BlockToolResult,
		session.BlockThinking, session.BlockRedactedThinking, "image"}
	inputs := []string{"", `{}`, `{"command":"ls"}`, `{ "a" : [1, 2.50, "<x>"],  "b": {"c": null} }`, "{\"s\":\"\u2028&\"}", `{"x":`, `[1]`, "{\"k\":\"\xff\"}"}
	m := provider.Message{Role: roles[r.IntN(len(roles))]}
	for range r.IntN(5) {
		b := session.Block{Type: types[r.IntN(len(types))], Text: genText(r)}
		if r.IntN(4) == 0 {
			b.Text = ""
		}
		switch b.Type {
		case session.BlockToolUse:
			b.ID, b.Name, b.Input = genText(r), genText(r), json.RawMessage(inputs[r.IntN(len(inputs))])
		case session.BlockToolResult:
			b.ToolUseID, b.IsError = genText(r), r.IntN(2) == 0
			for range r.IntN(3) {
				b.Images = append(b.Images, session.Image{MediaType: []string{"", "image/png", "image/<x>"}[r.IntN(3)], Data: []byte(genText(r))})
			}
		case session.BlockThinking:
			b.Signature = []string{"", "sig", genText(r)}[r.IntN(3)]
		}
		m.Blocks = append(m.Blocks, b)
	}
	return m
}

// TestEncodeMessageIsTheSDKs compares encodeMessage with the SDK's
// encoding over random messages of every shape.
func TestEncodeMessageIsTheSDKs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 20))
	for range 5000 {
		checkSameEncoding(t, genMessage(r))
	}
	for c := range 0x110000 / 31 { // runes of every class, one in 31
		s := string(rune(c * 31))
		checkSameEncoding(t, provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: s}}})
	}
	for c := range 256 {
		checkSameEncoding(t, provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: string([]byte{'a', byte(c), 'b'})}}})
	}
}

// FuzzEncodeMessageIsTheSDKs: the same, for any text, input and image.
func FuzzEncodeMessageIsTheSDKs(f *testing.F) {
	f.Add("text <&> \u2028", `{"a": 1}`, []byte{1, 2}, uint8(0))
	f.Add("\xff\x00", "{\"k\":\"\xe2\x80\xa8\"}", []byte(nil), uint8(7))
	f.Fuzz(func(t *testing.T, text, input string, data []byte, shape uint8) {
		user := provider.Message{Role: session.RoleUser, Blocks: []session.Block{
			{Type: session.BlockToolResult, ToolUseID: text, Text: text, IsError: shape&1 == 1, Images: []session.Image{{MediaType: text, Data: data}}},
			{Type: session.BlockText, Text: text}}}
		if shape&2 == 2 {
			user.Blocks = user.Blocks[:1]
		}
		checkSameEncoding(t, user)
		checkSameEncoding(t, provider.Message{Role: session.RoleAssistant, Blocks: []session.Block{
			{Type: session.BlockThinking, Text: text, Signature: text},
			{Type: session.BlockRedactedThinking, Text: text},
			{Type: session.BlockToolUse, ID: text, Name: text, Input: json.RawMessage(input)},
			{Type: session.BlockText, Text: text}}})
	})
}

// sdkMessage maps the transcript's message i to a message param through
// the SDK's types, as lite-agent did before encodeMessage: the oracle of
// its tests. It maps message i to a message param; ok is false
// for a message left with no blocks. Empty text blocks are dropped (the
// API refuses them). In a user message, tool results go first, as the API
// requires.
//
// Thinking blocks are sent back, first in their message and unchanged, when
// thinking is on (the API requires those of the current tool use); without
// it they are left out.
func sdkMessage(i int, m provider.Message, thinking bool) (sdk.MessageParam, bool, error) {
	var results, others []sdk.ContentBlockParamUnion
	for j, b := range m.Blocks {
		switch b.Type {
		case session.BlockThinking, session.BlockRedactedThinking:
			if !thinking || m.Role != session.RoleAssistant || (b.Type == session.BlockThinking && b.Signature == "") {
				continue // unsigned: another provider's reasoning, which the API would refuse
			}
			if b.Type == session.BlockThinking {
				others = append(others, sdk.NewThinkingBlock(b.Signature, b.Text))
			} else {
				others = append(others, sdk.NewRedactedThinkingBlock(b.Text))
			}
		case session.BlockText:
			if b.Text != "" {
				others = append(others, sdk.NewTextBlock(b.Text))
			}
		case session.BlockToolUse:
			if m.Role != session.RoleAssistant {
				return sdk.MessageParam{}, false, fmt.Errorf("anthropic: message %d (%s), block %d: a tool_use block belongs in an assistant message", i+1, m.Role, j+1)
			}
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if !json.Valid(input) {
				return sdk.MessageParam{}, false, fmt.Errorf("anthropic: message %d, block %d: tool_use %s has invalid JSON input", i+1, j+1, b.ID)
			}
			others = append(others, sdk.NewToolUseBlock(b.ID, input, b.Name))
		case session.BlockToolResult:
			if m.Role != session.RoleUser {
				return sdk.MessageParam{}, false, fmt.Errorf("anthropic: message %d (%s), block %d: a tool_result block belongs in a user message", i+1, m.Role, j+1)
			}
			tr := sdk.ToolResultBlockParam{ToolUseID: b.ToolUseID}
			if b.Text != "" {
				tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Text}}}
			}
			for _, im := range b.Images {
				src := sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(im.Data), MediaType: sdk.Base64ImageSourceMediaType(im.MediaType)}
				tr.Content = append(tr.Content, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &src}}})
			}
			if b.IsError {
				tr.IsError = sdk.Bool(true)
			}
			results = append(results, sdk.ContentBlockParamUnion{OfToolResult: &tr})
		default:
			return sdk.MessageParam{}, false, fmt.Errorf("anthropic: message %d, block %d: block type %q is not supported", i+1, j+1, b.Type)
		}
	}
	blocks := append(results, others...)
	if len(blocks) == 0 {
		return sdk.MessageParam{}, false, nil
	}
	switch m.Role {
	case session.RoleUser:
		return sdk.NewUserMessage(blocks...), true, nil
	case session.RoleAssistant:
		return sdk.NewAssistantMessage(blocks...), true, nil
	default:
		return sdk.MessageParam{}, false, fmt.Errorf("anthropic: message %d: role %q is neither %q nor %q", i+1, m.Role, session.RoleUser, session.RoleAssistant)
	}
}
