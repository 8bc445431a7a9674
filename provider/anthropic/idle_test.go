package anthropic_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/provider/anthropic"
)

func idleProvider(t *testing.T, srv *fakemodel.Server, idle time.Duration) *anthropic.Provider {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, err := anthropic.New(&anthropic.Options{APIKey: testKey, BaseURL: srv.URL(), HTTPClient: &http.Client{Transport: tr},
		RetryBaseDelay: time.Millisecond, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestIdleTimeout: a stream that goes silent before anything was streamed
// is retried like a cut one; one that goes silent after part of the answer
// fails with a *provider.StallError; a slow stream that keeps sending is
// not cut however long it takes in all.
func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	t.Run("silent before anything: retried", func(t *testing.T) {
		srv := start(t, `{"replies": [{"text": "never sent", "fault": {"kind": "stall"}}, {"text": "second try"}]}`)
		resp, _, err := harness.Collect(t, t.Context(), idleProvider(t, srv, idle), prompt("hi"))
		if err != nil || len(resp.Blocks) != 1 || resp.Blocks[0].Text != "second try" {
			t.Fatalf("Stream = %+v, %v; want the second try's answer", resp, err)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("%d requests, want 2 (the stalled one, then the retry)", n)
		}
	})
	t.Run("silent after part of the answer: StallError", func(t *testing.T) {
		srv := start(t, `{"replies": [{"text": "a partial answer that stops", "fault": {"kind": "stall", "after_deltas": 2}}, {"text": "not reached"}]}`)
		_, deltas, err := harness.Collect(t, t.Context(), idleProvider(t, srv, idle), prompt("hi"))
		var se *provider.StallError
		if !errors.As(err, &se) || !se.Streamed || !strings.Contains(err.Error(), "stalled") {
			t.Fatalf("Stream error %v, want a *provider.StallError after streaming", err)
		}
		if len(deltas) != 2 || len(srv.Requests()) != 1 {
			t.Fatalf("%d deltas, %d requests; want 2 and 1 (no retry after streaming)", len(deltas), len(srv.Requests()))
		}
	})
	t.Run("slow but alive: not cut", func(t *testing.T) {
		// 12 deltas 100 ms apart: well over the idle limit in all.
		srv := start(t, `{"replies": [{"text": "one two three four five six seven eight nine ten eleven twelve", "chunk_size": 5, "delta_delay_ms": 100}]}`)
		resp, deltas, err := harness.Collect(t, t.Context(), idleProvider(t, srv, idle), prompt("hi"))
		if err != nil || len(deltas) < 10 || len(resp.Blocks) != 1 {
			t.Fatalf("Stream = %d deltas, %+v, %v; want the whole slow answer", len(deltas), resp, err)
		}
	})
}
