package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
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

// TestHeaders: requests carry the headers the SDK sent (captured from
// openai-go v3.98.0 before the wire code was written by hand): a bearer
// token only when there is a key, JSON content and accept, to the base
// URL's /chat/completions whether or not it ends in a slash.
func TestHeaders(t *testing.T) {
	for _, key := range []string{"k", ""} {
		for _, noStream := range []bool{false, true} {
			var got http.Header
			var path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, path = r.Header.Clone(), r.URL.Path
				if noStream {
					fmt.Fprint(w, `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}]}`)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			}))
			p, err := New(&Options{APIKey: key, BaseURL: srv.URL + "/v1/", NoStream: noStream})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(t.Context(), provider.Request{Model: "m", Messages: []provider.Message{{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: "hi"}}}}}, nil)
			srv.Close()
			if err != nil {
				t.Fatal(err)
			}
			wantAuth := ""
			if key != "" {
				wantAuth = "Bearer " + key
			}
			if path != "/v1/chat/completions" || got.Get("Authorization") != wantAuth || got.Get("Content-Type") != "application/json" || got.Get("Accept") != "application/json" {
				t.Errorf("key %q, no stream %v: path %s, headers %v", key, noStream, path, got)
			}
		}
	}
}
