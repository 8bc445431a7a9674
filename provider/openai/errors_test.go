package openai

import (
	"net/http"
	"testing"
)

func TestParseErrorBody(t *testing.T) {
	tests := []struct {
		name                        string
		body                        string
		wantType, wantCode, wantMsg string
	}{
		{"openai", `{"error": {"message": "Incorrect API key", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`, "invalid_request_error", "invalid_api_key", "Incorrect API key"},
		{"llama.cpp numeric code", `{"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}`, "exceed_context_size_error", "", "the request exceeds the available context size"},
		{"error as a string", `{"error": "model 'x' not found"}`, "", "", "model 'x' not found"},
		{"vLLM top level", `{"object": "error", "message": "maximum context length is 4096", "type": "BadRequestError", "code": 400}`, "BadRequestError", "", "maximum context length is 4096"},
		{"plain text", "404 page not found\n", "", "", "404 page not found"},
		{"empty", "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, code, msg := parseErrorBody([]byte(tt.body))
			if typ != tt.wantType || code != tt.wantCode || msg != tt.wantMsg {
				t.Errorf("parseErrorBody = %q, %q, %q; want %q, %q, %q", typ, code, msg, tt.wantType, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

func TestContextTooLong(t *testing.T) {
	tests := []struct {
		status         int
		typ, code, msg string
		want           bool
	}{
		{400, "invalid_request_error", "context_length_exceeded", "whatever", true},
		{400, "exceed_context_size_error", "", "the request exceeds the available context size", true},
		{400, "", "", "This model's maximum context length is 8192 tokens.", true},
		{400, "", "", "prompt is too long", true},
		{413, "", "", "input exceeds the context window", true},
		{400, "", "", "messages: roles must alternate", false},
		{500, "", "", "context length oops", false},
	}
	for _, tt := range tests {
		if got := contextTooLong(tt.status, tt.typ, tt.code, tt.msg); got != tt.want {
			t.Errorf("contextTooLong(%d, %q, %q, %q) = %v, want %v", tt.status, tt.typ, tt.code, tt.msg, got, tt.want)
		}
	}
}

func TestStatusOfStreamError(t *testing.T) {
	tests := []struct {
		typ, code string
		want      int
	}{
		{"server_error", "", http.StatusInternalServerError},
		{"requests", "rate_limit_exceeded", http.StatusTooManyRequests},
		{"invalid_request_error", "invalid_api_key", http.StatusUnauthorized},
		{"invalid_request_error", "model_not_found", http.StatusNotFound},
		{"invalid_request_error", "", http.StatusBadRequest},
		{"", "", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		if got := statusOf(tt.typ, tt.code); got != tt.want {
			t.Errorf("statusOf(%q, %q) = %d, want %d", tt.typ, tt.code, got, tt.want)
		}
	}
}
