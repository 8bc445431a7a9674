// Package anthropic is a provider.Provider for the Anthropic Messages API,
// built on the official Go SDK (github.com/anthropics/anthropic-sdk-go).
//
// Responses are always streamed. The transcript's blocks map one to one to
// the API's content blocks: text, tool_use in assistant messages, and
// tool_result in user messages. Tool calls are assembled from their
// input_json_delta fragments. Transient failures (429, 5xx, 529
// overloaded, an overloaded error event before anything streamed) are
// retried by provider.RetryPolicy; the SDK's own retries are off.
// Credentials are never part of an error message.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// DefaultMaxTokens is the output budget of a request that sets none.
const DefaultMaxTokens = 8192

// officialBaseURL is where requests go unless told otherwise.
const officialBaseURL = "https://api.anthropic.com"

// Options configures a Provider. A nil *Options means all defaults.
type Options struct {
	// APIKey authenticates requests; empty means $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL is the API's address; empty means $ANTHROPIC_BASE_URL, else
	// https://api.anthropic.com.
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is the output budget of requests that set none; 0 means
	// DefaultMaxTokens.
	MaxTokens int
	// MaxRetries is how many times a transient failure is retried: 0
	// means provider.DefaultMaxRetries, negative means never.
	MaxRetries int
	// RetryBaseDelay is the first wait between retries (it doubles each
	// time); 0 means provider.DefaultBaseDelay.
	RetryBaseDelay time.Duration
	// NoPromptCache sends no cache_control breakpoints, so nothing is
	// cached (every request pays for its whole prompt).
	NoPromptCache bool
	// IdleTimeout gives a response stream up as stalled when nothing
	// arrives for this long (retried if nothing was streamed yet): 0 means
	// provider.DefaultIdleTimeout, negative means never.
	IdleTimeout time.Duration
}

// Provider streams responses from the Messages API. It is safe for
// concurrent use.
type Provider struct {
	client    sdk.Client
	apiKey    string
	official  bool // requests go to the official API, which needs a key
	maxTokens int
	retry     provider.RetryPolicy
	cache     bool // mark prompt-cache breakpoints
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
		o.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if o.BaseURL == "" {
		o.BaseURL = officialBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL; set ANTHROPIC_BASE_URL to one such as %s", o.BaseURL, officialBaseURL)
	}
	if o.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: MaxTokens %d is negative; use 0 for the default (%d)", o.MaxTokens, DefaultMaxTokens)
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(), // this package reads the environment itself
		option.WithBaseURL(o.BaseURL),
		option.WithMaxRetries(0), // provider.RetryPolicy is the one policy
	}
	if o.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(o.APIKey))
	}
	if o.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(o.HTTPClient))
	}
	return &Provider{
		client:    sdk.NewClient(ropts...),
		apiKey:    o.APIKey,
		official:  strings.EqualFold(u.Host, "api.anthropic.com"),
		maxTokens: o.MaxTokens,
		retry:     provider.RetryPolicy{MaxRetries: o.MaxRetries, BaseDelay: o.RetryBaseDelay, IdleTimeout: o.IdleTimeout},
		cache:     !o.NoPromptCache,
		encoded:   provider.NewEncoded(),
	}, nil
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Stream sends req and streams the answer; see provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if p.official && p.apiKey == "" {
		return provider.Response{}, fmt.Errorf("anthropic: no API key is set (%w): set ANTHROPIC_API_KEY", provider.ErrAuth)
	}
	params, err := p.params(req)
	if err != nil {
		return provider.Response{}, err
	}
	return p.retry.Stream(ctx, onDelta, func(ctx context.Context, emit func(provider.Delta)) (provider.Response, error) {
		return p.attempt(ctx, params, req.Model, emit)
	})
}

// send sends params as a streaming request: as the body assembled from
// the kept JSON of its messages, or as the params if that cannot be done.
func (p *Provider) send(ctx context.Context, params sdk.MessageNewParams) *ssestream.Stream[sdk.MessageStreamEventUnion] {
	b, ok, err := body(params)
	if err != nil || !ok {
		return p.client.Messages.NewStreaming(ctx, params)
	}
	// The SDK reads the model and thinking of these params (for a warning
	// about deprecated models); the body sent is b.
	head := sdk.MessageNewParams{Model: params.Model, MaxTokens: params.MaxTokens, Thinking: params.Thinking}
	return p.client.Messages.NewStreaming(ctx, head, option.WithRequestBody("application/json", b))
}

// attempt sends one request and reads its stream to the end.
func (p *Provider) attempt(ctx context.Context, params sdk.MessageNewParams, model string, emit func(provider.Delta)) (provider.Response, error) {
	stream := p.send(ctx, params)
	defer stream.Close()

	var (
		resp    provider.Response
		blocks  []*session.Block
		bufs    []*strings.Builder // by block: the text, or the tool input JSON
		byIndex = map[int64]int{}  // the server's block index → ours; skipped blocks are absent
		stopped bool
	)
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			resp.Model = ev.Message.Model
			u := ev.Message.Usage
			resp.Usage = session.Usage{
				InputTokens:      u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
				OutputTokens:     u.OutputTokens,
				CacheWriteTokens: u.CacheCreationInputTokens,
				CacheReadTokens:  u.CacheReadInputTokens,
			}
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
			default:
				// Server-side tool blocks are not part of a lite-agent
				// transcript.
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
		if ctx.Err() != nil {
			return provider.Response{}, ctx.Err()
		}
		return provider.Response{}, p.explain(err, model)
	}
	if ctx.Err() != nil {
		return provider.Response{}, ctx.Err()
	}
	if !stopped {
		// The body ended cleanly but the message did not: a proxy or the
		// server dropped the rest.
		return provider.Response{}, &provider.TransientError{Err: errors.New("anthropic: the response stream ended before the message was complete (the connection was cut); try again")}
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
	return resp, nil
}

// toolInput turns a streamed tool input into the block's JSON: {} when
// empty, and a JSON object carrying the raw text when the model produced
// invalid JSON, so the tool reports the problem to the model instead of
// the turn failing.
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
