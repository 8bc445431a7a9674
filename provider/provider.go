// Package provider defines the small streaming interface lite-agent uses to
// talk to a model, and the errors providers report. Implementations live in
// sub-packages: anthropic (the Messages API) and openai (any OpenAI-compatible
// Chat Completions server: OpenAI, Ollama, vLLM, llama.cpp).
package provider

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/lite-agent/lite-agent/session"
)

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"` // a JSON Schema object
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int // 0: the provider's default
	// ThinkingBudget, when positive, enables extended thinking with this
	// many tokens (Anthropic); the response's thinking blocks, with their
	// signatures, are to be sent back in later requests unchanged.
	ThinkingBudget int
	// ReasoningEffort ("low", "medium", "high") is sent to
	// OpenAI-compatible servers that take it; "" sends none.
	ReasoningEffort string
}

// Response is the model's complete answer to one Request.
type Response struct {
	Blocks     []session.Block // thinking, text and tool_use blocks, complete
	StopReason string          // normalised: "end_turn", "tool_use", "max_tokens", or the provider's own word
	Usage      session.Usage
	Model      string // the model that answered, as the server names it
}

// Delta is a piece of a response as it streams.
type Delta struct {
	Index int    // the content block it belongs to
	Kind  string // DeltaText, DeltaThinking or DeltaToolInput
	Text  string // the text, or a fragment of a tool call's JSON input
	Name  string // for the first DeltaToolInput of a block: the tool's name
}

// Delta kinds.
const (
	DeltaText      = "text"
	DeltaThinking  = "thinking"
	DeltaToolInput = "tool_input"
)

// Stop reasons, normalised across providers.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)

// Provider streams model responses.
type Provider interface {
	// Name is the provider's short name ("anthropic", "openai").
	Name() string
	// Stream sends req and returns the complete response, calling onDelta
	// (which may be nil) for every piece as it arrives, from the calling
	// goroutine. It retries transient failures (429, 5xx, overloaded) with
	// backoff before anything streamed. Cancelling ctx stops the stream and
	// returns ctx's error. Errors a user must act on wrap ErrAuth,
	// ErrModelNotFound or ErrContextTooLong.
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// Errors callers branch on; providers wrap them with a message that says
// what to do.
var (
	ErrAuth           = errors.New("the model server refused the credentials")
	ErrModelNotFound  = errors.New("the model server does not know this model")
	ErrContextTooLong = errors.New("the conversation is too long for the model's context window")
)

// Message is one message of the transcript sent to a model: the
// transcript is derived from the session log by package session.
type Message = session.Message

// TitleSystem is the system prompt of the one short request in which the
// agent asks the model for a session's title, sent with the session's first
// prompt as the only message and no tools. The fake model server answers
// requests with this system prompt itself.
const TitleSystem = "Reply with a title of at most six words for a conversation that starts with the user's message below. Reply with the title alone: no quotes, no punctuation at the end."
