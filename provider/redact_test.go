package provider

import (
	"errors"
	"io"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct{ s, secret, want string }{
		{"invalid x-api-key sk-ant-0123456789", "sk-ant-0123456789", "invalid x-api-key [redacted]"},
		{"key sk-ant-0123456789 then sk-ant-0123456789", "sk-ant-0123456789", "key [redacted] then [redacted]"},
		{"unexpected EOF", "x", "unexpected EOF"},             // a short key is never searched for
		{"key 1234567 shown", "1234567", "key 1234567 shown"}, // 7 characters: too short
		{"key 12345678 hidden", "12345678", "key [redacted] hidden"},
		{"nothing to hide", "", "nothing to hide"},
	}
	for _, tt := range tests {
		if got := Redact(tt.s, tt.secret); got != tt.want {
			t.Errorf("Redact(%q, %q) = %q, want %q", tt.s, tt.secret, got, tt.want)
		}
	}
}

func TestRedactedError(t *testing.T) {
	err := &RedactedError{Err: io.ErrUnexpectedEOF, Secret: "x"}
	if err.Error() != "unexpected EOF" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("RedactedError = %q (is unexpected EOF: %v)", err, errors.Is(err, io.ErrUnexpectedEOF))
	}
}
