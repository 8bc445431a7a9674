package anthropic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// streamResult is what reading a stream came to: the response and deltas,
// or the error (an API error as its status, type, message and request).
type streamResult struct {
	Resp   provider.Response
	Deltas []provider.Delta
	Err    string
}

// response is a 200 event stream of body, with a request ID.
func response(body string) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/messages", nil)
	return &http.Response{StatusCode: 200, Request: req, Body: io.NopCloser(strings.NewReader(body)),
		Header: http.Header{"Content-Type": {"text/event-stream"}, "Request-Id": {"req_1"}}}
}

// sdkRead reads body with the SDK's stream decoder and the loop this
// package ran over its events before it decoded them by hand: the oracle
// of handRead.
func sdkRead(body string) streamResult {
	var r streamResult
	emit := func(d provider.Delta) { r.Deltas = append(r.Deltas, d) }
	stream := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(response(body)), nil)
	defer stream.Close()
	var (
		resp    provider.Response
		blocks  []*session.Block
		bufs    []*strings.Builder
		byIndex = map[int64]int{}
		stopped bool
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			resp.Model = ev.Message.Model
			u := ev.Message.Usage
			resp.Usage = session.Usage{InputTokens: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
				OutputTokens: u.OutputTokens, CacheWriteTokens: u.CacheCreationInputTokens, CacheReadTokens: u.CacheReadInputTokens}
		case "content_block_start":
			cb := ev.ContentBlock
			switch cb.Type {
			case "text":
				byIndex[ev.Index] = len(blocks)
				blocks = append(blocks, &session.Block{Type: session.BlockText})
				bufs = append(bufs, &strings.Builder{})
				bufs[len(bufs)-1].WriteString(cb.Text)
				if cb.Text != "" {
					emit(provider.Delta{Index: len(blocks) - 1, Kind: provider.DeltaText, Text: cb.Text})
				}
			case "tool_use":
				byIndex[ev.Index] = len(blocks)
				blocks = append(blocks, &session.Block{Type: session.BlockToolUse, ID: cb.ID, Name: cb.Name})
				bufs = append(bufs, &strings.Builder{})
				emit(provider.Delta{Index: len(blocks) - 1, Kind: provider.DeltaToolInput, Name: cb.Name})
			case "thinking", "redacted_thinking":
				b := &session.Block{Type: session.BlockThinking, Signature: cb.Signature}
				text := cb.Thinking
				if cb.Type == "redacted_thinking" {
					b.Type, text = session.BlockRedactedThinking, cb.Data
				}
				byIndex[ev.Index] = len(blocks)
				blocks = append(blocks, b)
				bufs = append(bufs, &strings.Builder{})
				bufs[len(bufs)-1].WriteString(text)
			}
		case "content_block_delta":
			i, ok := byIndex[ev.Index]
			if !ok {
				continue
			}
			switch {
			case ev.Delta.Type == "text_delta" && blocks[i].Type == session.BlockText:
				bufs[i].WriteString(ev.Delta.Text)
				emit(provider.Delta{Index: i, Kind: provider.DeltaText, Text: ev.Delta.Text})
			case ev.Delta.Type == "thinking_delta" && blocks[i].Type == session.BlockThinking:
				bufs[i].WriteString(ev.Delta.Thinking)
				emit(provider.Delta{Index: i, Kind: provider.DeltaThinking, Text: ev.Delta.Thinking})
			case ev.Delta.Type == "signature_delta" && blocks[i].Type == session.BlockThinking:
				blocks[i].Signature += ev.Delta.Signature
			case ev.Delta.Type == "input_json_delta" && blocks[i].Type == session.BlockToolUse:
				bufs[i].WriteString(ev.Delta.PartialJSON)
				if ev.Delta.PartialJSON != "" {
					emit(provider.Delta{Index: i, Kind: provider.DeltaToolInput, Text: ev.Delta.PartialJSON})
				}
			}
		case "message_delta":
			resp.StopReason = string(ev.Delta.StopReason)
			resp.Usage.OutputTokens = ev.Usage.OutputTokens
			if ev.Usage.JSON.InputTokens.Valid() && ev.Usage.InputTokens > 0 {
				resp.Usage.InputTokens = ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens
				resp.Usage.CacheWriteTokens, resp.Usage.CacheReadTokens = ev.Usage.CacheCreationInputTokens, ev.Usage.CacheReadInputTokens
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		var aerr *sdk.Error
		if errors.As(err, &aerr) {
			r.Err = fmt.Sprintf("api error %d %q %q %s", aerr.StatusCode, aerr.Type(), aerr.Message, aerr.RequestID)
		} else {
			r.Err = "other error"
		}
		return r
	}
	if !stopped {
		r.Err = "cut"
		return r
	}
	resp.Blocks = make([]session.Block, len(blocks))
	for i, b := range blocks {
		if b.Type == session.BlockToolUse {
			b.Input = toolInput(bufs[i].String())
		} else {
			b.Text = bufs[i].String()
		}
		resp.Blocks[i] = *b
	}
	r.Resp = resp
	return r
}

// handRead reads body with this package's decoder.
func handRead(body string) streamResult {
	var r streamResult
	p := &Provider{client: &http.Client{Transport: roundTrip(func(*http.Request) (*http.Response, error) { return response(body), nil })},
		endpoint: "http://127.0.0.1:1/v1/messages"}
	resp, err := p.read(context.Background(), nil, func(d provider.Delta) { r.Deltas = append(r.Deltas, d) })
	var aerr *apiError
	var te *provider.TransientError
	switch {
	case errors.As(err, &aerr):
		r.Err = fmt.Sprintf("api error %d %q %q %s", aerr.status, aerr.typ, aerr.message, aerr.requestID)
		return r
	case errors.As(err, &te):
		r.Err = "cut"
		return r
	case err != nil:
		r.Err = "other error"
		return r
	}
	r.Resp = resp
	return r
}

// roundTrip is an http.RoundTripper of a func.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// checkSameStream fails unless handRead and sdkRead agree on body.
func checkSameStream(t *testing.T, body string) {
	t.Helper()
	if diff := cmp.Diff(sdkRead(body), handRead(body)); diff != "" {
		t.Fatalf("stream %q: the hand decoder and the SDK's differ (-sdk +hand):\n%s", body, diff)
	}
}

// streamEvents are events of every kind, valid and not.
var streamEvents = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"claude-x\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"cache_creation_input_tokens\":5,\"cache_read_input_tokens\":7}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"pre\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"tu_1\",\"name\":\"bash\",\"input\":{}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"xyz\"}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":5,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\",\"input\":{}}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello \\u003c\\n\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"command\\\": \"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"ls\\\"}\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" more\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"wrong block\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":9,\"delta\":{\"type\":\"text_delta\",\"text\":\"no block\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":42}}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":20,\"output_tokens\":43,\"cache_creation_input_tokens\":1,\"cache_read_input_tokens\":2}}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"input_tokens\":0,\"output_tokens\":3}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: ping\ndata: not json\n\n",
	": a comment\n\n",
	"\n",
	"data: {\"type\":\"message_stop\"}\n\n",
	"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\r\ndata: \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"split\"}}\r\n\r\n",
	"event:content_block_delta\ndata:{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"tight\"}}\nid: 3\nretry: 10\n\n",
	"event: something_new\ndata: {\"type\":\"something_new\",\"x\":1}\n\n",
	"event: something_new\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// rareEvents end a stream (or may): errors, bad JSON, a cut line.
var rareEvents = []string{
	"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
	"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal \\\"error\\\"\"}}\n\n",
	"event: error\ndata: not json\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}",
}

// TestStreamIsTheSDKs: the hand decoder reads representative and random
// streams as the SDK's decoder and this package's old loop over its
// events did: the same response, deltas, and errors.
func TestStreamIsTheSDKs(t *testing.T) {
	all := strings.Join(streamEvents, "")
	checkSameStream(t, all)
	for _, e := range rareEvents {
		checkSameStream(t, streamEvents[0]+streamEvents[1]+streamEvents[7]+e+streamEvents[len(streamEvents)-1])
	}
	checkSameStream(t, "")
	r := rand.New(rand.NewPCG(20, 20))
	for range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			if r.IntN(20) == 0 {
				b.WriteString(rareEvents[r.IntN(len(rareEvents))])
			} else {
				b.WriteString(streamEvents[r.IntN(len(streamEvents))])
			}
		}
		checkSameStream(t, b.String())
	}
}

// FuzzStreamIsTheSDKs: a stream the hand decoder takes reads as the SDK
// read it. One it refuses as malformed (an event whose JSON has a field of
// the wrong type, or a key in another case, which encoding/json matches)
// the SDK's laxer decoder may take; the API sends neither.
func FuzzStreamIsTheSDKs(f *testing.F) {
	f.Add(strings.Join(streamEvents, ""))
	for _, e := range rareEvents {
		f.Add(streamEvents[0] + e)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if handRead(body).Err == "other error" && sdkRead(body).Err != "other error" {
			return
		}
		checkSameStream(t, body)
	})
}
