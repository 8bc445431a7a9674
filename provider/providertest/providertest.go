// Package providertest is the behaviour every model provider shows over
// real HTTP against the fake model server (internal/fakemodel): streaming
// text and tool calls, retries, clear errors, cancellation and cut
// streams, and a kept transcript sent as the same bytes. Each provider
// package runs it from its own tests, with the
// expected messages that its wire format produces.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// Harness tells the suite how to make the provider under test.
type Harness struct {
	// Model is the model name requests ask for.
	Model string
	// Key is the API key New gives the provider; it must never show in an
	// error.
	Key string
	// New returns a provider talking to srv with maxRetries retries (0:
	// the default, negative: none) and a fast backoff.
	New func(t testing.TB, srv *fakemodel.Server, maxRetries int) provider.Provider
}

// Start runs a fake model server following the script given as JSON.
func Start(t testing.TB, scriptJSON string) *fakemodel.Server {
	t.Helper()
	script, err := fakemodel.ParseScript([]byte(scriptJSON))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	srv, err := fakemodel.Start(script)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// Prompt is a request of one user message.
func (h Harness) Prompt(text string) provider.Request {
	return provider.Request{
		Model:    h.Model,
		Messages: []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: text}}}},
	}
}

// Collect streams req and returns the response, the deltas and the error,
// failing the test if the error shows the API key.
func (h Harness) Collect(t testing.TB, ctx context.Context, p provider.Provider, req provider.Request) (provider.Response, []provider.Delta, error) {
	t.Helper()
	var deltas []provider.Delta
	resp, err := p.Stream(ctx, req, func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil && h.Key != "" && strings.Contains(err.Error(), h.Key) {
		t.Errorf("the API key shows in the error: %v", err)
	}
	return resp, deltas, err
}

// Run runs the behaviour every provider shares.
func Run(t *testing.T, h Harness) {
	t.Run("StreamText", func(t *testing.T) { streamText(t, h) })
	t.Run("StreamToolCall", func(t *testing.T) { streamToolCall(t, h) })
	t.Run("CancelMidStream", func(t *testing.T) { cancelMidStream(t, h) })
	t.Run("CutHalfWay", func(t *testing.T) { cutHalfWay(t, h) })
	t.Run("KeptMessages", func(t *testing.T) { keptMessages(t, h) })
	t.Run("KeptMessagesConcurrent", func(t *testing.T) { keptMessagesConcurrent(t, h) })
}

func streamText(t *testing.T, h Harness) {
	const text = "Hello there, this answer arrives in pieces."
	srv := Start(t, `{"replies": [{"text": "`+text+`", "usage": {"input_tokens": 11, "output_tokens": 22}}]}`)
	resp, deltas, err := h.Collect(t, t.Context(), h.New(t, srv, 0), h.Prompt("hi"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	var got strings.Builder
	for _, d := range deltas {
		if d.Index != 0 || d.Kind != provider.DeltaText {
			t.Errorf("delta %+v, want text deltas of block 0", d)
		}
		got.WriteString(d.Text)
	}
	if len(deltas) < 2 || got.String() != text {
		t.Errorf("%d deltas making %q, want several making %q", len(deltas), got.String(), text)
	}
	want := provider.Response{
		Blocks:     []session.Block{{Type: session.BlockText, Text: text}},
		StopReason: provider.StopEndTurn,
		Usage:      session.Usage{InputTokens: 11, OutputTokens: 22},
		Model:      h.Model,
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func streamToolCall(t *testing.T, h Harness) {
	srv := Start(t, `{"replies": [{
		"text": "Writing it.",
		"tool_calls": [
			{"id": "toolu_1", "name": "write", "input": {"path": "a.txt", "content": "line one\nline two\n"}},
			{"id": "toolu_2", "name": "ls"}
		],
		"chunk_size": 3
	}]}`)
	resp, deltas, err := h.Collect(t, t.Context(), h.New(t, srv, 0), h.Prompt("write a.txt"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.StopReason != provider.StopToolUse || len(resp.Blocks) != 3 {
		t.Fatalf("stop %q with %d blocks, want tool_use with 3: %+v", resp.StopReason, len(resp.Blocks), resp.Blocks)
	}
	if b := resp.Blocks[0]; b.Type != session.BlockText || b.Text != "Writing it." {
		t.Errorf("block 0 = %+v", b)
	}
	wantCalls := []struct {
		id, name string
		input    map[string]any
	}{
		{"toolu_1", "write", map[string]any{"path": "a.txt", "content": "line one\nline two\n"}},
		{"toolu_2", "ls", map[string]any{}},
	}
	for i, w := range wantCalls {
		b := resp.Blocks[i+1]
		var input map[string]any
		if err := json.Unmarshal(b.Input, &input); err != nil {
			t.Fatalf("block %d input %q: %v", i+1, b.Input, err)
		}
		if b.Type != session.BlockToolUse || b.ID != w.id || b.Name != w.name || !cmp.Equal(input, w.input) {
			t.Errorf("block %d = %s %s %s %s, want tool_use %s %s %v", i+1, b.Type, b.ID, b.Name, b.Input, w.id, w.name, w.input)
		}
		// The deltas of the block rebuild its input, the first naming the tool.
		var fragments strings.Builder
		var first *provider.Delta
		for j, d := range deltas {
			if d.Index == i+1 {
				if first == nil {
					first = &deltas[j]
				}
				if d.Kind != provider.DeltaToolInput {
					t.Errorf("delta %+v of a tool block is not a tool input", d)
				}
				fragments.WriteString(d.Text)
			}
		}
		if first == nil || first.Name != w.name {
			t.Errorf("block %d: first delta %+v does not name %s", i+1, first, w.name)
		}
		if fragments.Len() > 0 && fragments.String() != string(b.Input) {
			t.Errorf("block %d: deltas make %q, input is %q", i+1, fragments.String(), b.Input)
		}
	}
}

func cancelMidStream(t *testing.T, h Harness) {
	// Ten minutes between deltas: only cancellation ends this stream.
	srv := Start(t, `{"replies": [{"text": "0123456789", "delta_delay_ms": 600000}]}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	_, err := h.New(t, srv, 0).Stream(ctx, h.Prompt("hi"), func(provider.Delta) {
		n++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("Stream = %v after %d deltas, want context.Canceled after 1", err, n)
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests; a cancelled stream must not be retried", got)
	}
}

func cutHalfWay(t *testing.T, h Harness) {
	for _, fault := range []string{`{"kind": "cut"}`, `{"kind": "overloaded", "after_deltas": 2}`} {
		t.Run(fault, func(t *testing.T) {
			srv := Start(t, `{"replies": [{"text": "a long answer cut in the middle", "fault": `+fault+`}, {"text": "not reached"}]}`)
			resp, deltas, err := h.Collect(t, t.Context(), h.New(t, srv, 0), h.Prompt("hi"))
			if err == nil {
				t.Fatalf("Stream succeeded with %+v; a cut stream must fail", resp)
			}
			if len(deltas) == 0 || len(resp.Blocks) != 0 {
				t.Errorf("%d deltas, response %+v; want some deltas, then an empty response", len(deltas), resp)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests; a stream that delivered deltas must not be retried", n)
			}
		})
	}
}

// RetryCase is one retry scenario: replies is the script's replies (JSON
// objects separated by commas), wantErr "" for success after retries.
type RetryCase struct {
	Name       string
	Replies    string
	MaxRetries int
	WantErr    string
	WantReqs   int
}

// Retry is a RetryCase, for compact tables.
func Retry(name, replies string, maxRetries int, wantErr string, wantReqs int) RetryCase {
	return RetryCase{Name: name, Replies: replies, MaxRetries: maxRetries, WantErr: wantErr, WantReqs: wantReqs}
}

// RetryOK is the reply a successful retry case ends with.
const RetryOK = `{"text": "fine now"}`

// RunRetries checks transient failures are retried before anything
// streamed, and reported as *provider.TransientError when they run out.
func RunRetries(t *testing.T, h Harness, tests []RetryCase) {
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			srv := Start(t, `{"replies": [`+tt.Replies+`]}`)
			resp, _, err := h.Collect(t, t.Context(), h.New(t, srv, tt.MaxRetries), h.Prompt("hi"))
			if n := len(srv.Requests()); n != tt.WantReqs {
				t.Errorf("%d requests, want %d", n, tt.WantReqs)
			}
			if tt.WantErr == "" {
				if err != nil || len(resp.Blocks) != 1 || resp.Blocks[0].Text != "fine now" {
					t.Fatalf("Stream = %+v, %v; want the second answer", resp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.WantErr) {
				t.Fatalf("Stream error = %v, want one containing %q", err, tt.WantErr)
			}
			var te *provider.TransientError
			if !errors.As(err, &te) {
				t.Errorf("error %v is not marked transient", err)
			}
		})
	}
}

// ErrorCase is one permanent failure: fault is the script's fault object,
// wantIs the sentinel the error must wrap (nil: none), wantText what it
// must say.
type ErrorCase struct {
	Name     string
	Fault    string
	WantIs   error
	WantText []string
}

// Error is an ErrorCase, for compact tables.
func Error(name, fault string, wantIs error, wantText []string) ErrorCase {
	return ErrorCase{Name: name, Fault: fault, WantIs: wantIs, WantText: wantText}
}

// RunErrors checks permanent failures give clear errors and are not
// retried.
func RunErrors(t *testing.T, h Harness, tests []ErrorCase) {
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			srv := Start(t, `{"replies": [{"fault": `+tt.Fault+`}, {"text": "not reached"}]}`)
			_, _, err := h.Collect(t, t.Context(), h.New(t, srv, 0), h.Prompt("hi"))
			if err == nil {
				t.Fatal("Stream succeeded")
			}
			if tt.WantIs != nil && !errors.Is(err, tt.WantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.WantIs)
			}
			for _, s := range tt.WantText {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests; a permanent error must not be retried", n)
			}
		})
	}
}

// BenchStreamRoundTrip measures one streamed answer with text and a tool
// call through the provider, the fake server in the same process.
func BenchStreamRoundTrip(b *testing.B, h Harness) {
	srv := Start(b, `{"replies": [{
		"text": "I'll write the file now; it holds a short greeting and a trailing newline, nothing more.",
		"tool_calls": [{"id": "toolu_b", "name": "write", "input": {"path": "hello.txt", "content": "Hello from lite-agent\n"}}],
		"chunk_size": 8
	}], "when_done": "repeat_last"}`)
	p := h.New(b, srv, 0)
	req := h.Prompt("write hello.txt")
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Stream(b.Context(), req, func(provider.Delta) {})
		if err != nil || len(resp.Blocks) != 2 {
			b.Fatalf("Stream = %+v, %v", resp, err)
		}
	}
}

// EqualJSON fails the test unless got and want are the same JSON value
// (keys in any order): what a request body assembled by hand must be to
// the SDK's own encoding.
func EqualJSON(t testing.TB, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("the JSON %s should equal is not JSON: %v\n%s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n%s\nwant\n%s", what, got, want)
	}
}

// LongTranscript is a transcript of n turns, each a prompt, a tool call,
// its result and an answer, for benchmarks of requests in long sessions;
// no two of its messages are the same.
func LongTranscript(n int) []provider.Message {
	var msgs []provider.Message
	for i := range n {
		cid := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprintf("prompt %d: please change file %d", i, i)}}},
			provider.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "Let me edit it."},
				{Type: session.BlockToolUse, ID: cid, Name: "edit", Input: []byte(`{"path":"f.go","old_string":"a","new_string":"b"}`)}}},
			provider.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: cid, Text: "edited f.go"}}},
			provider.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprintf("Done: I changed a to b in f.go for prompt %d, as asked. Anything else?", i)}}},
		)
	}
	return msgs
}

// BenchEncodeLongTranscript measures building and encoding the request body
// of a 500-turn transcript (what is sent), by a provider that has sent the
// same transcript before ("kept") and by a fresh one ("fresh"). fresh
// returns the body encoder of a new provider.
func BenchEncodeLongTranscript(b *testing.B, fresh func() func(provider.Request) ([]byte, error)) {
	req := provider.Request{Model: "m", System: "sys", Messages: LongTranscript(500)}
	for _, kept := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "kept"}[kept], func(b *testing.B) {
			encode := fresh()
			if kept {
				if _, err := encode(req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !kept {
					b.StopTimer()
					encode = fresh()
					b.StartTimer()
				}
				sent, err := encode(req)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(sent)))
			}
		})
	}
}
