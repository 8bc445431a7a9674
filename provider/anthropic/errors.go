package anthropic

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/lite-agent/lite-agent/provider"
)

// statusOfType is the HTTP status an error type stands for, for errors
// that arrive as events inside a stream (whose status is 200).
func statusOfType(t string) int {
	switch t {
	case "overloaded_error":
		return 529
	case "api_error":
		return http.StatusInternalServerError
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "timeout_error":
		return http.StatusGatewayTimeout
	default:
		return http.StatusBadRequest
	}
}

// explain turns a failed request into an error that says what happened
// and what to do, wrapping provider's sentinels, and marking transient
// failures for the retry policy. The API key never appears in it.
func (p *Provider) explain(err error, model string) error {
	var aerr *apiError
	if !errors.As(err, &aerr) {
		e := &provider.RedactedError{Err: err, Secret: p.apiKey}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return &provider.TransientError{Err: fmt.Errorf("anthropic: the connection was cut before the response was complete: %w", e)}
		}
		return fmt.Errorf("anthropic: %w", e)
	}
	typ := aerr.typ
	status := aerr.status
	var header http.Header
	if status < 400 {
		status = statusOfType(typ) // an error event in a 200 stream
	} else {
		header = aerr.header
	}
	msg := provider.Redact(aerr.message, p.apiKey)
	if msg == "" {
		msg = http.StatusText(status)
	}
	detail := fmt.Sprintf("%d", status)
	if typ != "" {
		detail += " " + typ
	}
	detail += ": " + msg
	if aerr.requestID != "" {
		detail += ", request " + aerr.requestID
	}

	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("anthropic: %w (%s): set ANTHROPIC_API_KEY to a valid key", provider.ErrAuth, detail)
	case status == http.StatusNotFound:
		return fmt.Errorf("anthropic: model %q: %w (%s): check the model name, such as claude-sonnet-4-5 (and ANTHROPIC_BASE_URL, if set)", model, provider.ErrModelNotFound, detail)
	case contextTooLong(status, msg):
		return fmt.Errorf("anthropic: %w (%s): start a new session, or fork this one from an earlier checkpoint", provider.ErrContextTooLong, detail)
	case provider.ShouldRetry(status, header):
		what := "the server failed"
		switch status {
		case 529:
			what = "the server is overloaded"
		case http.StatusTooManyRequests:
			what = "rate limited"
		}
		return &provider.TransientError{
			Err:        fmt.Errorf("anthropic: %s (%s); try again later", what, detail),
			RetryAfter: provider.RetryAfter(header, time.Now()),
		}
	default:
		return fmt.Errorf("anthropic: request refused (%s)", detail)
	}
}

// contextTooLong reports whether an error says the prompt does not fit the
// model's context window.
func contextTooLong(status int, msg string) bool {
	if status == http.StatusRequestEntityTooLarge {
		return true
	}
	if status != http.StatusBadRequest {
		return false
	}
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") ||
		strings.Contains(m, "context window") ||
		strings.Contains(m, "context length") ||
		(strings.Contains(m, "too long") && strings.Contains(m, "token"))
}
