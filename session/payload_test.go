package session

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fields replay keeps of each payload; the decoders leave the others out.
func keepPrompt(p UserPrompt) UserPrompt { return p }
func keepMessage(p AssistantMessage) AssistantMessage {
	p.StopReason, p.Model = "", ""
	return p
}
func keepStarted(p ToolStarted) ToolStarted {
	p.Input, p.Approval, p.Sandbox = nil, "", ""
	return p
}
func keepSnapshot(p FileSnapshot) FileSnapshot { return FileSnapshot{Path: p.Path} }
func keepFinished(p ToolFinished) ToolFinished {
	return ToolFinished{CallID: p.CallID, Output: p.Output, IsError: p.IsError}
}
func keepFinishedID(p ToolFinished) ToolFinished {
	return ToolFinished{CallID: p.CallID, IsError: p.IsError}
}

// checkPayload decodes data as the payload of every type replay scans, with
// the fast path alone, with the fast path and its fallback, and with
// encoding/json, and fails where they disagree. It returns how many types
// the fast path read by itself.
func checkPayload(t testing.TB, data []byte) (fast int) {
	t.Helper()
	e := Event{Seq: 1, Type: TypeUserPrompt, Data: data}
	fast += checkDecoder(t, "user_prompt", data, keepPrompt,
		func(p *UserPrompt) bool { return scanPrompt(data, p) },
		func(p *UserPrompt) bool { return decodePrompt(e, p) })
	fast += checkDecoder(t, "assistant_message", data, keepMessage,
		func(p *AssistantMessage) bool { return scanMessage(data, p, nil) },
		func(p *AssistantMessage) bool { return decodeMessage(e, p, nil) })
	fast += checkDecoder(t, "tool_started", data, keepStarted,
		func(p *ToolStarted) bool { return scanStarted(data, p) },
		func(p *ToolStarted) bool { return decodeStarted(e, p) })
	fast += checkDecoder(t, "file_snapshot", data, keepSnapshot,
		func(p *FileSnapshot) bool { return scanSnapshot(data, p) },
		func(p *FileSnapshot) bool { return decodeSnapshot(e, p) })
	fast += checkDecoder(t, "tool_finished", data, keepFinished,
		func(p *ToolFinished) bool { return scanFinished(data, p, true) },
		func(p *ToolFinished) bool { return decodeFinished(e, p, true) })
	fast += checkDecoder(t, "tool_finished (summary)", data, keepFinishedID,
		func(p *ToolFinished) bool { return scanFinished(data, p, false) },
		func(p *ToolFinished) bool { return decodeFinished(e, p, false) })
	return fast
}

func checkDecoder[T any](t testing.TB, name string, data []byte, keep func(T) T, scan, decode func(*T) bool) int {
	t.Helper()
	var want T
	jsonOK := json.Unmarshal(data, &want) == nil
	if jsonOK {
		want = keep(want)
	} else {
		want = *new(T)
	}
	var fast T
	scanned := scan(&fast)
	if scanned {
		if !jsonOK {
			t.Fatalf("%s: the fast path accepts %q, which encoding/json refuses", name, data)
		}
		if diff := diffIfUnequal(want, keep(fast)); diff != "" {
			t.Fatalf("%s: the fast path reads %q otherwise than encoding/json (-json +fast):\n%s", name, data, diff)
		}
	}
	var got T
	if ok := decode(&got); ok != jsonOK {
		t.Fatalf("%s: decode of %q reports %v, encoding/json %v", name, data, ok, jsonOK)
	}
	if diff := diffIfUnequal(want, got); diff != "" {
		t.Fatalf("%s: decode of %q differs from encoding/json (-json +decode):\n%s", name, data, diff)
	}
	if scanned {
		return 1
	}
	return 0
}

// diffIfUnequal is cmp.Diff, only quicker when there is no difference.
func diffIfUnequal(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got)
}

// payloadCases are payloads that probe where the fast path must agree with
// encoding/json, or give up: escapes, keys, repeats, nulls, numbers, base64.
var payloadCases = []string{
	// Strings and escapes.
	`{"text":"hi"}`,
	`{"text":""}`,
	`{"text":"a\nb\"c\\d\/e\b\f\r\t"}`,
	`{"text":"\u00e9\u00E9 \u20ac \ud83d\ude00 \uD83D\uDE00"}`,
	`{"text":"lone \ud83d, then \ude00\ud83d, then \ud83d\u0041, \ud83dx, end \ud83d"}`,
	`{"text":"\u0000\u001f"}`,
	"{\"text\":\"bad utf-8 \xff\xfe \xe2\x82 \xed\xa0\x80 ok é\"}",
	"{\"text\":\"\xff\\n\xc3\"}",
	"{\"text\":\"ctrl \x01\"}",
	"{\"text\":\"tab \t\"}",
	`{"text":"bad \'"}`,
	`{"text":"bad \x41"}`,
	`{"text":"bad \u12"}`,
	`{"text":"bad \u12g4"}`,
	`{"text":"unterminated}`,
	`{"text":"ends with escape\"}`,
	`{"text":"quote \" inside \\" }`,
	`{"text":"` + strings.Repeat(`abcdefg\"`, 40) + `"}`,
	`{"text":"` + strings.Repeat("é—✓ ", 100) + `\n"}`,
	// Keys.
	`{"TEXT":"x"}`,
	`{"Text":"x"}`,
	`{"te\u0078t":"x"}`,
	`{"text":"a","text":"b"}`,
	`{"textx":"a","tex":"b","text":"c"}`,
	"{\"te\xc5\xbft\":\"x\"}",
	`{"background":true,"text":"x","BackGround":false}`,
	`{"unknown":{"a":[1,2,{"b":null,"c":[true,false,"s",-1.5e3]}]},"text":"x"}`,
	`{"unknown":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,"text":"x"}`,
	// Shapes.
	`null`, ``, ` `, `[]`, `"text"`, `1`, `{}`, ` { } `, "\t{\"text\" :\n\"x\" }\r\n",
	`{"text":"a"} x`, `{"text":"a"}{}`, `{"text":"a",}`, `{"text":"a"`, `{"text"}`, `{text:"a"}`, `{,}`,
	// Nulls and wrong types.
	`{"text":null}`, `{"text":1}`, `{"text":true}`, `{"text":["a"]}`,
	`{"background":"true"}`, `{"background":null}`, `{"background":tru}`, `{"background":truex}`,
	// Messages.
	`{"blocks":[]}`,
	`{"blocks":null}`,
	`{"blocks":[null]}`,
	`{"blocks":[{"type":"text","text":"a"},1]}`,
	`{"blocks":[{"type":"text","text":"a"},{"type":"tool_use","id":"c1","name":"edit","input":{"path" : [ 1 , 2 ] }}],"stop_reason":"tool_use","usage":{"input_tokens":12,"output_tokens":3},"model":"m"}`,
	`{"blocks":[{"type":"tool_use","input":null}]}`,
	`{"blocks":[{"type":"tool_use","input":"s"},{"type":"tool_use","input":-0.5e-3},{"type":"tool_use","input":true},{"type":"tool_use","input":[]}]}`,
	`{"blocks":[{"type":"tool_result","tool_use_id":"c","is_error":true,"text":"out"}]}`,
	`{"blocks":[{"type":"weird\n"}]}`,
	`{"blocks":[{"Type":"text"}]}`,
	`{"blocks":[{"type":"text","type":"tool_use"}]}`,
	`{"blocks":[],"blocks":[]}`,
	`{"stop_reason":null}`, `{"model":5}`,
	`{"usage":{"input_tokens":1e3}}`, `{"usage":{"input_tokens":1.0}}`, `{"usage":{"input_tokens":-0}}`,
	`{"usage":{"input_tokens":999999999999999999}}`, `{"usage":{"input_tokens":9223372036854775807}}`,
	`{"usage":{"input_tokens":9223372036854775808}}`, `{"usage":{"input_tokens":-9223372036854775808}}`,
	`{"usage":{"input_tokens":012}}`, `{"usage":{"input_tokens":-}}`, `{"usage":{"input_tokens":1.}}`,
	`{"usage":{"input_tokens":.5}}`, `{"usage":{"input_tokens":1e}}`, `{"usage":{"output_tokens":1E+2}}`,
	`{"usage":null}`, `{"usage":[]}`, `{"usage":{"input_tokens":"1"}}`,
	// Tool intents.
	`{"call_id":"c1","tool":"bash","input":{"command":"ls"},"paths":["a","b"],"approval":"once"}`,
	`{"call_id":"c1","paths":[]}`, `{"call_id":"c1","paths":null}`, `{"call_id":"c1","paths":[null]}`,
	`{"call_id":"c1","paths":["a",1]}`, `{"call_id":"c1","input":null}`, `{"call_id":"c1","input":}`,
	// Snapshots.
	`{"call_id":"c1","path":"a.go","existed":true,"mode":420,"content":"cGFja2FnZSBhdXRoCg==","digest":"abc"}`,
	`{"path":"a","content":""}`, `{"path":"a","content":"QQ=="}`, `{"path":"a","content":"QUI="}`,
	`{"path":"a","content":"QUJD"}`, `{"path":"a","content":"Q==="}`, `{"path":"a","content":"QQ"}`,
	`{"path":"a","content":"QR=="}`, `{"path":"a","content":"QQ=\u003d"}`, `{"path":"a","content":"QQ\r\n=="}`,
	`{"path":"a","content":"QQ==QQ=="}`, `{"path":"a","content":"Q-_Q"}`, `{"path":"a","content":"====" }`,
	`{"path":"a","content":null}`, `{"path":"a","content":1}`, `{"path":"a","content":"QQ==\u0000"}`,
	`{"path":"a","mode":-1}`, `{"path":"a","mode":4294967295}`, `{"path":"a","mode":4294967296}`,
	`{"path":"a","mode":999999999}`, `{"path":"a","mode":1e2}`, `{"path":"a","mode":0}`,
	`{"path":"a","existed":1}`, `{"path":"a","digest":null}`,
	// Receipts.
	`{"call_id":"c1","tool":"edit","output":"done","is_error":false,"denied":false,"files":{"a":"b","":""},"untracked":true}`,
	`{"call_id":"c1","files":null}`, `{"call_id":"c1","files":{"a":null}}`, `{"call_id":"c1","files":{"a":1}}`,
	`{"call_id":"c1","files":[]}`, `{"call_id":"c1","files":{"a":"b","a":"c","\u00e9":"d"}}`,
	`{"call_id":"c1","output":null}`, `{"call_id":"c1","denied":"no"}`,
}

func TestPayloadDecodersMatchEncodingJSON(t *testing.T) {
	for _, data := range payloadCases {
		checkPayload(t, []byte(data))
	}
	for _, e := range goldenEvents() {
		checkPayload(t, e.Data)
	}
}

// TestFastPathTakesUsualPayloads makes sure the fast path does not simply
// give up: the payloads this package writes never need encoding/json.
func TestFastPathTakesUsualPayloads(t *testing.T) {
	for _, e := range benchMixLog(20) {
		var ok bool
		switch e.Type {
		case TypeUserPrompt:
			ok = scanPrompt(e.Data, new(UserPrompt))
		case TypeAssistantMessage:
			ok = scanMessage(e.Data, new(AssistantMessage), nil)
		case TypeToolStarted:
			ok = scanStarted(e.Data, new(ToolStarted))
		case TypeFileSnapshot:
			ok = scanSnapshot(e.Data, new(FileSnapshot))
		case TypeToolFinished:
			ok = scanFinished(e.Data, new(ToolFinished), true)
		default:
			continue
		}
		if !ok {
			t.Errorf("the fast path gives up on the %s payload %s", e.Type, e.Data)
		}
	}
}

func FuzzPayloadDecoders(f *testing.F) {
	for _, data := range payloadCases {
		f.Add([]byte(data))
	}
	for _, e := range goldenEvents() {
		f.Add([]byte(e.Data))
	}
	for _, e := range benchMixLog(8) {
		f.Add([]byte(e.Data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkPayload(t, data)
	})
}

func TestBase64Bytes(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			word := []byte("AAAAAAAA")
			word[pos] = byte(c)
			got := base64Bytes(binary.LittleEndian.Uint64(word)) == msbs
			want := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", byte(c)) >= 0
			if got != want {
				t.Fatalf("byte %#x at %d: in the alphabet %v, want %v", c, pos, got, want)
			}
		}
	}
}

func TestBase64Valid(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 11, 12, 13, 14, 47, 48, 49, 100} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 37)
		}
		enc := []byte(base64.StdEncoding.EncodeToString(data))
		if !base64Valid(enc) {
			t.Fatalf("%q not valid", enc)
		}
		for i := range enc {
			for _, c := range []byte{'=', '-', '_', '.', '\n', 0x80, 'A'} {
				bad := append([]byte(nil), enc...)
				bad[i] = c
				_, err := base64.StdEncoding.DecodeString(string(bad))
				if base64Valid(bad) && err != nil {
					t.Fatalf("%q: valid, but base64 refuses it: %v", bad, err)
				}
			}
		}
	}
}
