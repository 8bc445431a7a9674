package liteagent_test

import (
	"fmt"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// summaryMarker is a phrase of liteagent.CompactPrompt the fake model
// answers summary requests by.
const summaryMarker = "Summarise this conversation so far"

// longSession is a script of n turns, each answered with about 1 KB, on a
// server with a window of the given tokens that answers summary requests.
func longSession(t testing.TB, kind string, n, window int) (*fakemodel.Server, *liteagent.Agent, checkpoint.Checkpointer) {
	t.Helper()
	var replies []fakemodel.Reply
	for i := range n + 1 {
		replies = append(replies, fakemodel.Reply{Text: fmt.Sprintf("answer %d: %s", i, strings.Repeat("words ", 170))})
	}
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies, ContextWindow: window,
		Summary: &fakemodel.SummaryRule{Marker: summaryMarker, Text: "SUMMARY: we talked at length."}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	p, err := newProvider[kind](srv)
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	return srv, newAgent(t, p, liteagent.Options{Checkpointer: store, ContextWindow: window, NoProjectContext: true}), store
}

// TestAutoCompaction300Turns: 300 turns against a 30,000-token window go
// through automatic compaction; no request passes the window; every
// request after a compaction carries its summary and none of the turns
// before it; a fork from before the first compaction sends them again.
func TestAutoCompaction300Turns(t *testing.T) {
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "openai" && testing.Short() {
				t.Skip("the anthropic run covers it in -short")
			}
			srv, a, store := longSession(t, kind, 300, 30000)
			for i := range 300 {
				if _, err := a.Send(t.Context(), fmt.Sprintf("prompt number %d please", i)); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			var compactions []int64
			var firstThrough int64
			for e, err := range store.Read(t.Context(), a.SessionID(), 1) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Type == session.TypeCompaction {
					var c session.Compaction
					e.Decode(&c)
					if firstThrough == 0 {
						firstThrough = c.ThroughSeq
					}
					compactions = append(compactions, e.Seq)
				}
			}
			if len(compactions) < 3 {
				t.Fatalf("%d compactions in 300 turns of ~300 tokens against a 30,000-token window; want several", len(compactions))
			}
			reqs := srv.Requests()
			last := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(last, "SUMMARY: we talked at length.") || strings.Contains(last, "prompt number 0 please") || !strings.Contains(last, "prompt number 299 please") {
				t.Fatal("the last request does not carry the summary and the tail only")
			}
			for _, r := range reqs {
				if r.Status != 200 {
					t.Fatalf("request %d answered %d: %s", r.Seq, r.Status, r.Failure)
				}
			}

			// A fork at an early checkpoint gets the uncompacted prefix.
			cps, err := a.ListCheckpoints(t.Context(), a.SessionID())
			if err != nil || len(cps) != 300 || cps[10].Seq >= firstThrough {
				t.Fatalf("%d checkpoints (%v); want 300, the 11th before the first compaction", len(cps), err)
			}
			fork, err := a.Fork(t.Context(), a.SessionID(), cps[10].Seq)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Resume(t.Context(), fork); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Send(t.Context(), "after the fork"); err != nil {
				t.Fatal(err)
			}
			reqs = srv.Requests()
			forked := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(forked, "prompt number 0 please") || !strings.Contains(forked, "prompt number 9 please") ||
				strings.Contains(forked, "prompt number 10 please") || strings.Contains(forked, "SUMMARY:") {
				t.Fatal("a fork at the 11th checkpoint did not send the first ten turns uncompacted")
			}
		})
	}
}
