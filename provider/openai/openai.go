// Package openai is a provider.Provider for OpenAI's Chat Completions API
// and the servers that copy it (Ollama, vLLM, llama.cpp).
//
// The wire code (request body, server-sent events, error bodies) is
// written by hand with encoding/json instead of using the official Go SDK
// (github.com/openai/openai-go): the SDK's package initialisers cost about
// 1.1 ms of every lite-agent process start, even for users of another
// provider, and it linked about 7 MB of code. The SDK is kept in the tests
// as the oracle the hand-written request is checked against.
//
// Responses are always streamed, asking for a final usage chunk
// (stream_options.include_usage); servers that send none leave the usage
// at zero. Tool calls are assembled from their fragments by index; calls
// that arrive without an id get a generated one, since the transcript
// needs one to pair each result with its call. Tool results travel as
// "tool" role messages. Finish reasons are normalised: "tool_calls" (or
// "stop" with tool calls, as some local servers say) → provider.StopToolUse,
// "stop" → provider.StopEndTurn, "length" → provider.StopMaxTokens.
// Reasoning that servers send beside the content is kept as thinking (see
// reasoning.go).
// Transient failures are retried by provider.RetryPolicy. Credentials are never part of an error message.
package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// officialBaseURL is where requests go unless told otherwise.
const officialBaseURL = "https://api.openai.com/v1"

// Options configures a Provider. A nil *Options means all defaults.
type Options struct {
	// APIKey authenticates requests; empty means $OPENAI_API_KEY. It may
	// stay empty for local servers that do not check it.
	APIKey string
	// BaseURL is the API's address, ending before "/chat/completions";
	// empty means $OPENAI_BASE_URL, else https://api.openai.com/v1. For
	// Ollama: http://127.0.0.1:11434/v1.
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is the output budget of requests that set none; 0 leaves
	// it to the server.
	MaxTokens int
	// MaxRetries is how many times a transient failure is retried: 0
	// means provider.DefaultMaxRetries, negative means never.
	MaxRetries int
	// RetryBaseDelay is the first wait between retries (it doubles each
	// time); 0 means provider.DefaultBaseDelay.
	RetryBaseDelay time.Duration
	// IdleTimeout gives a response stream up as stalled when nothing
	// arrives for this long (retried if nothing was streamed yet): 0 means
	// provider.DefaultIdleTimeout, negative means never.
	IdleTimeout time.Duration
	// NoStream asks for whole answers instead of streams, for servers that
	// cannot stream tool calls. Without it, a streamed answer that ends
	// with no text and no tool call is asked again without streaming.
	NoStream bool
}

// Provider streams chat completions. It is safe for concurrent use.
type Provider struct {
	http      *http.Client
	endpoint  string // the chat completions URL
	apiKey    string
	official  bool // requests go to api.openai.com, which needs a key
	maxTokens int
	retry     provider.RetryPolicy
	noStream  bool
	encoded   *provider.Encoded
}

var _ provider.Provider = (*Provider)(nil)

// New returns a provider. It fails only on bad options (a malformed
// BaseURL, a negative MaxTokens); a missing API key for the official API
// is reported by Stream, so a provider can be built before a key is
// needed.
func New(opts *Options) (*Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if o.BaseURL == "" {
		o.BaseURL = officialBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q is not an http(s) URL; set OPENAI_BASE_URL to one such as %s (or http://127.0.0.1:11434/v1 for Ollama)", o.BaseURL, officialBaseURL)
	}
	if o.MaxTokens < 0 {
		return nil, fmt.Errorf("openai: MaxTokens %d is negative; use 0 to leave it to the server", o.MaxTokens)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Provider{
		http:      hc,
		endpoint:  strings.TrimSuffix(o.BaseURL, "/") + "/chat/completions",
		apiKey:    o.APIKey,
		official:  strings.EqualFold(u.Host, "api.openai.com"),
		maxTokens: o.MaxTokens,
		retry:     provider.RetryPolicy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, IdleTimeout: o.IdleTimeout},
		noStream:  o.NoStream,
		encoded:   provider.NewEncoded(),
	}, nil
}

// Name returns "openai".
func (p *Provider) Name() string { return "openai" }

// Stream sends req and streams the answer; see provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if p.official && p.apiKey == "" {
		return provider.Response{}, fmt.Errorf("openai: no API key is set (%w): set OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)", provider.ErrAuth)
	}
	c, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	return p.retry.Stream(ctx, onDelta, func(ctx context.Context, emit func(provider.Delta)) (provider.Response, error) {
		return p.attempt(ctx, c, req.Model, emit)
	})
}

// toolCall is a tool call being assembled.
type toolCall struct {
	block int // its index in the response's blocks
	id    string
	input strings.Builder
}

// attempt sends one request and reads its stream to the end.
func (p *Provider) attempt(ctx context.Context, c call, model string, emit func(provider.Delta)) (provider.Response, error) {
	if p.noStream {
		return p.whole(ctx, c, model, emit)
	}
	res, failed, err := p.send(ctx, c, true)
	if err == nil && failed != nil {
		return provider.Response{}, p.explain(nil, failed, model)
	}
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, nil, model)
	}
	defer res.Body.Close()

	var (
		resp     provider.Response
		blocks   []session.Block
		textAt   = -1 // the text block's index, once there is one
		text     strings.Builder
		thinkAt  = -1 // the reasoning's block, likewise
		thinking strings.Builder
		calls    = map[int64]*toolCall{} // by the server's tool call index
		order    []*toolCall
		finish   string
		finished bool
	)
	err = events(res.Body, func(data []byte) error {
		var chunk chunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return fmt.Errorf("openai: decode a stream chunk: %w", err)
		}
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if u := chunk.Usage; u != nil {
			resp.Usage = session.Usage{
				InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
				CacheReadTokens: u.PromptTokensDetails.CachedTokens,
			}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // only one choice is asked for
			}
			if r := reasoningOf(ch.Delta.reasoningFields); r != "" {
				if thinkAt < 0 {
					thinkAt = len(blocks)
					blocks = append(blocks, session.Block{Type: session.BlockThinking})
				}
				thinking.WriteString(r)
				emit(provider.Delta{Index: thinkAt, Kind: provider.DeltaThinking, Text: r})
			}
			if content := ch.Delta.Content; content != "" {
				if textAt < 0 {
					textAt = len(blocks)
					blocks = append(blocks, session.Block{Type: session.BlockText})
				}
				text.WriteString(content)
				emit(provider.Delta{Index: textAt, Kind: provider.DeltaText, Text: content})
			}
			for _, frag := range ch.Delta.ToolCalls {
				tc := calls[frag.Index]
				if tc == nil || (frag.ID != "" && tc.id != "" && frag.ID != tc.id) {
					// A new call; some servers reuse an index for each call.
					tc = &toolCall{block: len(blocks), id: frag.ID}
					calls[frag.Index] = tc
					order = append(order, tc)
					blocks = append(blocks, session.Block{Type: session.BlockToolUse, Name: frag.Function.Name})
					emit(provider.Delta{Index: tc.block, Kind: provider.DeltaToolInput, Name: frag.Function.Name})
				} else if frag.Function.Name != "" && blocks[tc.block].Name == "" {
					blocks[tc.block].Name = frag.Function.Name
				}
				if tc.id == "" {
					tc.id = frag.ID
				}
				if args := frag.Function.Arguments; args != "" {
					tc.input.WriteString(args)
					emit(provider.Delta{Index: tc.block, Kind: provider.DeltaToolInput, Text: args})
				}
			}
			if ch.FinishReason != "" {
				finish, finished = ch.FinishReason, true
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, nil, model)
	}
	if ctx.Err() != nil {
		return provider.Response{}, ctx.Err()
	}
	if !finished {
		// The body ended without a finish reason: a proxy or the server
		// dropped the rest.
		return provider.Response{}, &provider.TransientError{Err: errors.New("openai: the response stream ended before the answer was complete (the connection was cut); try again")}
	}
	if textAt >= 0 {
		blocks[textAt].Text = text.String()
	}
	if thinkAt >= 0 {
		blocks[thinkAt].Text = thinking.String()
	}
	for _, tc := range order {
		b := &blocks[tc.block]
		b.ID = tc.id
		if b.ID == "" {
			b.ID = newCallID()
		}
		b.Input = toolInput(tc.input.String())
	}
	resp.Blocks = blocks
	resp.StopReason = stopReason(finish, len(order) > 0)
	if emptyAnswer(resp) {
		return p.whole(ctx, c, model, emit)
	}
	return resp, nil
}

// stopReason normalises a finish reason.
func stopReason(finish string, toolCalls bool) string {
	switch finish {
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "stop":
		if toolCalls { // some local servers finish tool calls with "stop"
			return provider.StopToolUse
		}
		return provider.StopEndTurn
	case "length":
		return provider.StopMaxTokens
	default:
		return finish
	}
}

// newCallID makes an id for a tool call the server sent without one.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// toolInput turns streamed tool arguments into the block's JSON: {} when
// empty, and a JSON object carrying the raw text when the model produced
// invalid JSON (small local models do), so the tool reports the problem
// to the model instead of the turn failing.
func toolInput(s string) json.RawMessage {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]string{"_invalid_json": s})
	return b
}
