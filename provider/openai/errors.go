package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lite-agent/lite-agent/provider"
)

// explain turns a failed request into an error that says what happened
// and what to do, wrapping provider's sentinels and marking transient
// failures for the retry policy. failed is the error response, if there
// was one. The API key never appears in the result.
func (p *Provider) explain(err error, failed *failure, model string) error {
	var (
		status         int
		header         http.Header
		typ, code, msg string
	)
	var serr *streamError
	switch {
	case failed != nil:
		status, header = failed.status, failed.header
		typ, code, msg = parseErrorBody(failed.body)
	case errors.As(err, &serr):
		// An error chunk inside a 200 stream.
		typ, code, msg = parseErrorBody(serr.data)
		status = statusOf(typ, code)
	default:
		e := &provider.RedactedError{Err: err, Secret: p.apiKey}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return &provider.TransientError{Err: fmt.Errorf("openai: the connection was cut before the response was complete: %w", e)}
		}
		return fmt.Errorf("openai: %w", e)
	}
	msg = provider.Redact(msg, p.apiKey)
	if msg == "" {
		msg = http.StatusText(status)
	}
	detail := strconv.Itoa(status)
	if kind := firstNonEmpty(code, typ); kind != "" {
		detail += " " + kind
	}
	detail += ": " + msg
	if id := header.Get("x-request-id"); id != "" {
		detail += ", request " + id
	}

	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("openai: %w (%s): set OPENAI_API_KEY to a valid key (or OPENAI_BASE_URL for a local server)", provider.ErrAuth, detail)
	case status == http.StatusNotFound && p.official:
		return fmt.Errorf("openai: model %q: %w (%s): check the model name, such as gpt-4.1", model, provider.ErrModelNotFound, detail)
	case status == http.StatusNotFound:
		return fmt.Errorf("openai: model %q: %w (%s): check the model name (with Ollama, pull it first: ollama pull %s), and that OPENAI_BASE_URL ends in /v1", model, provider.ErrModelNotFound, detail, model)
	case contextTooLong(status, typ, code, msg):
		return fmt.Errorf("openai: %w (%s): start a new session, or fork this one from an earlier checkpoint", provider.ErrContextTooLong, detail)
	case provider.ShouldRetry(status, header):
		what := "the server failed"
		switch status {
		case http.StatusTooManyRequests:
			what = "rate limited"
		case http.StatusServiceUnavailable, 529:
			what = "the server is overloaded"
		}
		return &provider.TransientError{
			Err:        fmt.Errorf("openai: %s (%s); try again later", what, detail),
			RetryAfter: provider.RetryAfter(header, time.Now()),
		}
	default:
		return fmt.Errorf("openai: request refused (%s)", detail)
	}
}

// parseErrorBody reads the error type, code and message of an error
// body in the shapes servers use: OpenAI's {"error": {...}} (code a
// string or, from llama.cpp, a number), {"error": "text"}, vLLM's
// top-level {"message", "type"}; else the text itself.
func parseErrorBody(body []byte) (typ, code, msg string) {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &env) == nil {
		if len(env.Error) > 0 && string(env.Error) != "null" {
			var s string
			if json.Unmarshal(env.Error, &s) == nil {
				return "", "", s
			}
			var e struct {
				Message string          `json:"message"`
				Type    string          `json:"type"`
				Code    json.RawMessage `json:"code"`
			}
			if json.Unmarshal(env.Error, &e) == nil {
				return e.Type, codeString(e.Code), e.Message
			}
		}
		if env.Message != "" {
			return env.Type, "", env.Message
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return "", "", text
}

// codeString reads an error code that is a string; a numeric code (as
// llama.cpp sends) only repeats the status, and reads as "".
func codeString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// statusOf is the HTTP status an error chunk inside a stream stands for.
func statusOf(typ, code string) int {
	s := strings.ToLower(typ + " " + code)
	switch {
	case strings.Contains(s, "rate_limit"):
		return http.StatusTooManyRequests
	case strings.Contains(s, "invalid_api_key") || strings.Contains(s, "authentication"):
		return http.StatusUnauthorized
	case strings.Contains(s, "not_found"):
		return http.StatusNotFound
	case strings.Contains(s, "invalid_request") || strings.Contains(s, "context"):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

// contextTooLong reports whether an error says the prompt does not fit the
// model's context window, in the words of OpenAI, vLLM, llama.cpp or
// Ollama.
func contextTooLong(status int, typ, code, msg string) bool {
	if code == "context_length_exceeded" || typ == "exceed_context_size_error" {
		return true
	}
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"maximum context length", "context length", "context size", "context window", "prompt is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
