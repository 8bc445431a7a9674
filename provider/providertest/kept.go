package providertest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lite-agent/lite-agent/provider"
	"github.com/lite-agent/lite-agent/session"
)

// keptMessages: a provider that keeps each message's
// JSON sends, request after request of a growing transcript (thinking on
// and off, the cache breakpoints moving, a message changed in place), the
// same bodies as a fresh provider that encodes everything.
func keptMessages(t *testing.T, h Harness) {
	const n = 8
	replies := strings.Repeat(`{"text": "ok"},`, 2*n)
	srv := Start(t, `{"replies": [{"thinking": "read it first", "text": "ok"}, `+strings.TrimSuffix(replies, ",")+`]}`)
	warm := h.New(t, srv, 0)
	think := h.Prompt("think")
	think.ThinkingBudget = 2048
	signed, _, err := h.Collect(t, t.Context(), warm, think)
	if err != nil || len(signed.Blocks) == 0 || signed.Blocks[0].Type != session.BlockThinking {
		t.Fatalf("a signed thinking block: %+v %v", signed.Blocks, err)
	}
	var msgs []session.Message
	for i := range n {
		cid := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			session.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprintf("prompt %d", i)}}},
			session.Message{Role: session.RoleAssistant, Blocks: []session.Block{
				signed.Blocks[0],
				{Type: session.BlockText, Text: "calling"},
				{Type: session.BlockToolUse, ID: cid, Name: "read", Input: []byte(`{"path":"a"}`)}}},
			session.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockToolResult, ToolUseID: cid, Text: "A", IsError: i%2 == 1}}},
			session.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "done"}}},
		)
		if i == n/2 {
			// The same index, other content: sent as it is now.
			msgs[1].Blocks = []session.Block{{Type: session.BlockText, Text: "rewritten"}}
		}
		req := provider.Request{Model: "m", System: "sys", Messages: msgs[: len(msgs)-1 : len(msgs)-1]}
		if i%3 == 0 {
			req.ThinkingBudget = 2048
		}
		for _, p := range []provider.Provider{warm, h.New(t, srv, 0)} {
			if _, _, err := h.Collect(t, t.Context(), p, req); err != nil {
				t.Fatalf("request %d: %v (server: %v)", i, err, srv.Err())
			}
		}
		got := srv.Requests()
		kept, fresh := got[len(got)-2].Body, got[len(got)-1].Body
		if !bytes.Equal(kept, fresh) {
			t.Fatalf("request %d: the provider keeping messages sent\n%s\nwant (a fresh provider's)\n%s", i, kept, fresh)
		}
		if i == n/2 && !bytes.Contains(kept, []byte(`"rewritten"`)) {
			t.Fatalf("request %d does not carry the message changed in place: %s", i, kept)
		}
	}
}

// keptMessagesConcurrent: sessions sharing a provider send
// their own transcripts (run with -race).
func keptMessagesConcurrent(t *testing.T, h Harness) {
	const sessions, calls = 4, 5
	replies := strings.Repeat(`{"text": "ok"},`, sessions*calls)
	srv := Start(t, `{"replies": [`+strings.TrimSuffix(replies, ",")+`]}`)
	p := h.New(t, srv, 0)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Go(func() {
			var msgs []session.Message
			for c := range calls {
				msgs = append(msgs, session.Message{Role: session.RoleUser, Blocks: []session.Block{{Type: session.BlockText, Text: fmt.Sprintf("session %d call %d", s, c)}}})
				if _, _, err := h.Collect(t, t.Context(), p, provider.Request{Model: h.Model, Messages: msgs}); err != nil {
					errs <- err
					return
				}
				msgs = append(msgs, session.Message{Role: session.RoleAssistant, Blocks: []session.Block{{Type: session.BlockText, Text: "ok"}}})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		var of []int // the session of each call the request carries, by call
		for c := range calls {
			for s := range sessions {
				if strings.Contains(string(r.Body), fmt.Sprintf(`"session %d call %d"`, s, c)) {
					of = append(of, s)
				}
			}
		}
		if len(of) == 0 || strings.Count(string(r.Body), `"session `) != len(of) {
			t.Fatalf("a request carries calls of several sessions, or out of order: %s", r.Body)
		}
		for c, s := range of {
			if s != of[0] || !strings.Contains(string(r.Body), fmt.Sprintf(`"session %d call %d"`, of[0], c)) {
				t.Fatalf("a request of session %d carries another session's messages or misses its own call %d: %s", of[0], c, r.Body)
			}
		}
	}
}
