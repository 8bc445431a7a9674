// Package anthropic is a provider.Provider for the Anthropic Messages API.
//
// Responses are always streamed. The transcript's blocks map one to one to
// the API's content blocks: text, tool_use in assistant messages, and
// tool_result in user messages. Tool calls are assembled from their
// input_json_delta fragments. Transient failures (429, 5xx, 529
// overloaded, an overloaded error event before anything streamed) are
// retried by provider.RetryPolicy. Credentials are never part of an error
// message.
//
// The request body is written by hand (convert.go, encode.go) and the
// event stream read by hand (stream.go), over net/http, instead of through
// the official Go SDK (github.com/anthropics/anthropic-sdk-go), which this
// package used to be built on. The SDK encodes params and decodes every
// stream event by reflection, and linking it cost its package
// initialisers, about 60 more packages (OpenTelemetry, gjson/sjson,
// jsonschema, YAML, go/parser) and 7.6 MB of a stripped lite-agent binary
// (49.2 to 41.6 MB). In-process, one streamed round trip to the fake model
// went from 1.1-1.4 ms, 146 KB and 1536 allocations to 0.59-0.64 ms, 68 KB
// and 1040 allocations; the body of a long kept transcript from 4030
// allocations to 2 (BenchmarkStreamRoundTrip, BenchmarkEncodeLongTranscript,
// on a shared 2-core machine). The SDK is kept in the tests as the oracle:
// TestRequestIsTheSDKs, TestRandomRequestsAreTheSDKs and
// TestEncodeMessageIsTheSDKs compare the bytes with the SDK's encoding,
// TestStreamIsTheSDKs and FuzzStreamIsTheSDKs the decoded streams with its
// decoder's, and TestHeadersAreTheSDKs the headers with those it sends.
package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/lite-agent/lite-agent/provider"
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
	client    *http.Client
	endpoint  string // BaseURL + /v1/messages
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
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	return &Provider{
		client:    client,
		endpoint:  strings.TrimRight(o.BaseURL, "/") + "/v1/messages",
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
	body, err := p.request(req)
	if err != nil {
		return provider.Response{}, err
	}
	return p.retry.Stream(ctx, onDelta, func(ctx context.Context, emit func(provider.Delta)) (provider.Response, error) {
		return p.attempt(ctx, body, req.Model, emit)
	})
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
