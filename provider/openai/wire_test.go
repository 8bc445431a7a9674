package openai

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestEvents: the server-sent event reader takes data with or without the
// space after the colon, over several lines, with CRLF line ends, skips
// comments, other fields and events without data, stops at [DONE], ends
// with a *streamError at an error chunk, and dispatches a last event that
// has no blank line after it.
func TestEvents(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{"plain", "data: {\"a\":1}\n\ndata:{\"b\":2}\n\n", []string{`{"a":1}`, `{"b":2}`}, false},
		{"done stops", "data: 1\n\ndata: [DONE]\n\ndata: 2\n\n", []string{"1"}, false},
		{"comments, fields, CRLF", ": ping\r\nevent: x\r\nid: 3\r\ndata: 1\r\n\r\n\r\n", []string{"1"}, false},
		{"empty data skipped", "data:\n\ndata: 1\n\n", []string{"1"}, false},
		{"lines joined", "data: {\"a\":\ndata: 1}\n\n", []string{"{\"a\":\n1}"}, false},
		{"no blank line at the end", "data: 1\n\ndata: 2", []string{"1", "2"}, false},
		{"error chunk", "data: 1\n\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\ndata: 2\n\n", []string{"1"}, true},
		{"error named in text only", "data: {\"choices\":[{\"delta\":{\"content\":\"\\\"error\\\"\"}}]}\n\n", []string{`{"choices":[{"delta":{"content":"\"error\""}}]}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := events(strings.NewReader(tt.in), func(d []byte) error {
				got = append(got, string(d))
				return nil
			})
			var serr *streamError
			if tt.wantErr != errors.As(err, &serr) || (!tt.wantErr && err != nil) {
				t.Fatalf("err %v, want a stream error: %v", err, tt.wantErr)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
				t.Fatalf("events %q, want %q", got, tt.want)
			}
		})
	}
}
