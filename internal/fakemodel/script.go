package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Script is what a Server answers: one Reply per request, in order.
type Script struct {
	// Replies are used one per request, whatever the endpoint.
	Replies []Reply `json:"replies"`
	// WhenDone says what happens once every reply has been used:
	// WhenDoneError (the default) answers HTTP 400 with a message saying the
	// script ran out; WhenDoneRepeatLast answers every later request with
	// the last reply again (for demos).
	WhenDone string `json:"when_done,omitempty"`
	// ContextWindow, when positive, is the model's context window in
	// tokens (estimated as a quarter of the body's bytes): a request over
	// it is refused with the provider's own "prompt is too long" error
	// (HTTP 400) and uses no reply.
	ContextWindow int `json:"context_window,omitempty"`
	// Summary, when set, answers every request whose last user message
	// contains Summary.Marker with Summary.Text, without using a reply:
	// the summary requests of compaction can come at any point of a
	// script.
	Summary *SummaryRule `json:"summary,omitempty"`
}

// SummaryRule answers summary requests.
type SummaryRule struct {
	// Marker is text only summary requests carry.
	Marker string `json:"marker"`
	// Text is the summary streamed back.
	Text string `json:"text"`
	// DelayMS is waited before the summary's first byte.
	DelayMS int `json:"delay_ms,omitempty"`
}

// What a Server does when the script runs out.
const (
	WhenDoneError      = "error"
	WhenDoneRepeatLast = "repeat_last"
)

// Reply is the server's answer to one request: a streamed message made of
// Text and ToolCalls, or a Fault.
type Reply struct {
	// Name labels the reply in logs and error messages.
	Name string `json:"name,omitempty"`
	// Expect lists checks on the request; when one fails the request is
	// answered with HTTP 400 and the failure is recorded (Server.Failures).
	Expect *Expect `json:"expect,omitempty"`
	// Text is streamed first, in several deltas.
	Text string `json:"text,omitempty"`
	// Thinking (Anthropic format), when the request enables extended
	// thinking, is streamed before the text as a thinking block with a
	// signature.
	Thinking string `json:"thinking,omitempty"`
	// ToolCalls follow the text, their input JSON streamed in several deltas.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// StopReason is Anthropic's word for why the message ended: "end_turn"
	// (the default without tool calls), "tool_use" (the default with them),
	// "max_tokens". OpenAI's finish_reason is derived from it.
	StopReason string `json:"stop_reason,omitempty"`
	// Usage overrides the token counts, which are otherwise estimated from
	// the sizes of the request and of the reply.
	Usage *Usage `json:"usage,omitempty"`
	// DelayMS is waited before the first byte of the response.
	DelayMS int `json:"delay_ms,omitempty"`
	// DeltaDelayMS is waited between two deltas.
	DeltaDelayMS int `json:"delta_delay_ms,omitempty"`
	// ChunkSize is how many characters (runes) go in one delta; 0 means 5.
	ChunkSize int `json:"chunk_size,omitempty"`
	// Fault makes the reply fail instead of, or in the middle of, streaming.
	Fault *Fault `json:"fault,omitempty"`
	// OmitUsage (OpenAI format) leaves out the final usage chunk even when
	// the request asked for it, as some local servers do.
	OmitUsage bool `json:"omit_usage,omitempty"`
	// OmitToolIDs (OpenAI format) sends tool calls without ids, as some
	// local servers do.
	OmitToolIDs bool `json:"omit_tool_ids,omitempty"`
	// NoStreamToolCalls (OpenAI format) answers a streaming request with
	// an empty message (no text, no tool call, finish_reason "stop"), as
	// servers that cannot stream tool calls do; the same reply asked for
	// without streaming ("stream": false) comes whole.
	NoStreamToolCalls bool `json:"no_stream_tool_calls,omitempty"`
}

// ToolCall is a tool call the model makes.
type ToolCall struct {
	// ID is the call's id; empty means a generated one ("toolu_fake_N" or
	// "call_fake_N").
	ID string `json:"id,omitempty"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Input is the call's input, a JSON object; empty means {}.
	Input json.RawMessage `json:"input,omitempty"`
}

// Usage is a reply's token counts, as Anthropic reports them: InputTokens
// are the input tokens neither read from nor written to the prompt cache.
// (OpenAI's prompt_tokens is their sum, and cached_tokens the cache reads.)
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Expect is a set of checks on a request. Every check given must hold.
type Expect struct {
	// Format is the wire format the request must use: FormatAnthropic or
	// FormatOpenAI.
	Format string `json:"format,omitempty"`
	// Model is the model name the request must ask for.
	Model string `json:"model,omitempty"`
	// LastUserContains are substrings of the last user prompt: the text of
	// the last user message that has text (tool results are not prompts).
	LastUserContains []string `json:"last_user_contains,omitempty"`
	// SystemContains are substrings of the system prompt.
	SystemContains []string `json:"system_contains,omitempty"`
	// BodyContains are substrings of the raw request body.
	BodyContains []string `json:"body_contains,omitempty"`
	// ToolResultFor are tool call ids whose results the request must carry.
	ToolResultFor []string `json:"tool_result_for,omitempty"`
	// Tools are names of tools the request must offer.
	Tools []string `json:"tools,omitempty"`
	// Images are the media types of images the request must send the
	// model, in order, each decoding to an image of its type (see
	// image.go).
	Images []string `json:"images,omitempty"`
}

// Fault makes a reply fail the way a real server does.
type Fault struct {
	// Kind is one of the Fault* constants. Empty with a Status means the
	// kind that goes with that status.
	Kind string `json:"kind,omitempty"`
	// Status overrides the HTTP status of the kind.
	Status int `json:"status,omitempty"`
	// Message overrides the error message of the kind.
	Message string `json:"message,omitempty"`
	// RetryAfter, in seconds, is sent as a Retry-After header.
	RetryAfter int `json:"retry_after,omitempty"`
	// RetryAfterMS, in milliseconds, is sent as a retry-after-ms header (and
	// as Retry-After rounded up to whole seconds, unless RetryAfter is set).
	RetryAfterMS int `json:"retry_after_ms,omitempty"`
	// AfterDeltas moves the fault into the stream: the response starts
	// with HTTP 200 and this many deltas, then the connection is cut
	// (FaultCut), goes silent (FaultStall) or an error event is sent
	// (other kinds). For FaultCut it defaults to half of the reply's
	// deltas, for FaultStall to none (the stall comes right after the
	// response's head); for other kinds, unset means an HTTP error status
	// before anything is streamed.
	AfterDeltas *int `json:"after_deltas,omitempty"`
}

// Fault kinds. Each has the status, error type and message of the real
// servers, in the format of the endpoint that was called.
const (
	FaultRateLimit      = "rate_limit"       // 429
	FaultOverloaded     = "overloaded"       // Anthropic 529, OpenAI 503
	FaultServerError    = "server_error"     // 500
	FaultAuth           = "auth"             // 401
	FaultPermission     = "permission"       // 403
	FaultModelNotFound  = "model_not_found"  // 404
	FaultContextTooLong = "context_too_long" // 400
	FaultBadRequest     = "bad_request"      // 400
	FaultCut            = "cut"              // the connection drops mid-stream
	// FaultStall stops sending mid-stream and holds the connection open,
	// sending nothing more, until the client goes away: a stalled server.
	FaultStall = "stall"
)

// Wire formats.
const (
	FormatAnthropic = "anthropic"
	FormatOpenAI    = "openai"
)

var faultKinds = map[string]int{
	FaultRateLimit:      429,
	FaultOverloaded:     529,
	FaultServerError:    500,
	FaultAuth:           401,
	FaultPermission:     403,
	FaultModelNotFound:  404,
	FaultContextTooLong: 400,
	FaultBadRequest:     400,
	FaultCut:            0,
	FaultStall:          0,
}

// kindForStatus is the fault kind a bare status stands for.
func kindForStatus(status int) string {
	switch {
	case status == 429:
		return FaultRateLimit
	case status == 529 || status == 503:
		return FaultOverloaded
	case status >= 500:
		return FaultServerError
	case status == 401:
		return FaultAuth
	case status == 403:
		return FaultPermission
	case status == 404:
		return FaultModelNotFound
	default:
		return FaultBadRequest
	}
}

// ParseScript decodes and checks a script. Unknown fields are errors, so a
// misspelt key does not pass silently.
func ParseScript(data []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("fakemodel: parse script: %w (the format is described in the fakemodel package doc)", err)
	}
	if dec.More() {
		return nil, errors.New("fakemodel: parse script: data after the script object; a script is one JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// LoadScript reads and checks a script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fakemodel: read script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return s, nil
}

// Validate reports the first thing wrong with the script, saying how to
// fix it.
func (s *Script) Validate() error {
	if s == nil {
		return errors.New("fakemodel: no script: pass a script with at least one reply")
	}
	switch s.WhenDone {
	case "", WhenDoneError, WhenDoneRepeatLast:
	default:
		return fmt.Errorf("fakemodel: script: when_done %q is unknown; use %q or %q", s.WhenDone, WhenDoneError, WhenDoneRepeatLast)
	}
	if s.WhenDone == WhenDoneRepeatLast && len(s.Replies) == 0 {
		return fmt.Errorf("fakemodel: script: when_done %q needs at least one reply", WhenDoneRepeatLast)
	}
	if s.ContextWindow < 0 {
		return errors.New("fakemodel: script: context_window must not be negative (0 means no limit)")
	}
	if s.Summary != nil && s.Summary.Marker == "" {
		return errors.New("fakemodel: script: summary needs a marker: text that only summary requests carry")
	}
	for i := range s.Replies {
		if err := s.Replies[i].validate(); err != nil {
			return fmt.Errorf("fakemodel: script: reply %d%s: %w", i+1, nameSuffix(s.Replies[i].Name), err)
		}
	}
	return nil
}

func (r *Reply) validate() error {
	if r.DelayMS < 0 || r.DeltaDelayMS < 0 || r.ChunkSize < 0 {
		return errors.New("delay_ms, delta_delay_ms and chunk_size must not be negative")
	}
	for j, tc := range r.ToolCalls {
		if tc.Name == "" {
			return fmt.Errorf("tool call %d has no name; give the tool's name", j+1)
		}
		if len(tc.Input) > 0 {
			var obj map[string]any
			if err := json.Unmarshal(tc.Input, &obj); err != nil || obj == nil {
				return fmt.Errorf("tool call %d (%s): input must be a JSON object", j+1, tc.Name)
			}
		}
	}
	if f := r.Fault; f != nil {
		if f.Kind == "" && f.Status == 0 {
			return errors.New("fault needs a kind (rate_limit, overloaded, server_error, auth, permission, model_not_found, context_too_long, bad_request, cut, stall) or a status")
		}
		if _, ok := faultKinds[f.Kind]; f.Kind != "" && !ok {
			return fmt.Errorf("fault kind %q is unknown; use rate_limit, overloaded, server_error, auth, permission, model_not_found, context_too_long, bad_request, cut or stall", f.Kind)
		}
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("fault status %d is not an HTTP error status (400-599)", f.Status)
		}
		if f.AfterDeltas != nil && *f.AfterDeltas < 0 {
			return errors.New("fault after_deltas must not be negative")
		}
		if f.RetryAfter < 0 || f.RetryAfterMS < 0 {
			return errors.New("fault retry_after and retry_after_ms must not be negative")
		}
	}
	if e := r.Expect; e != nil {
		switch e.Format {
		case "", FormatAnthropic, FormatOpenAI:
		default:
			return fmt.Errorf("expect format %q is unknown; use %q or %q", e.Format, FormatAnthropic, FormatOpenAI)
		}
	}
	return nil
}

func nameSuffix(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", name)
}
