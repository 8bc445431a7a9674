package liteagent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/provider/anthropic"
	"github.com/lite-agent/lite-agent/session"
)

// BenchmarkPromptCache40Turns runs a scripted 40-turn session, each turn a
// tool call (ls) and an answer, against the fake model's prompt cache
// (Anthropic's rule), with caching on and off. It reports the share of
// input tokens read from the cache over turns 2..40 (target ≥ 85%) and the
// billed input (uncached + 1.25 × cache writes + 0.1 × cache reads, the
// API's price weights) against the same session uncached (target ≤ 0.25).
func BenchmarkPromptCache40Turns(b *testing.B) {
	run := func(b *testing.B, cache bool) (in, read, billed float64) {
		var replies []fakemodel.Reply
		for i := range 40 {
			replies = append(replies,
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{{ID: fmt.Sprintf("toolu_%d", i), Name: "ls", Input: []byte(`{"path":"."}`)}}},
				fakemodel.Reply{Text: fmt.Sprintf("Turn %d: the directory holds a.txt. %s", i, strings.Repeat("More words. ", 20))})
		}
		srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		p, err := anthropic.New(&anthropic.Options{APIKey: "k", BaseURL: srv.URL(), HTTPClient: &http.Client{Transport: tr}, NoPromptCache: !cache})
		if err != nil {
			b.Fatal(err)
		}
		a := newAgent(b, p, liteagent.Options{Workdir: b.TempDir()})
		var sum session.Usage
		for i := range 40 {
			res, err := a.Send(b.Context(), fmt.Sprintf("turn %d: list the files and tell me about them", i))
			if err != nil {
				b.Fatal(err)
			}
			if i > 0 {
				sum = sum.Add(res.Usage)
			}
		}
		in, read = float64(sum.InputTokens), float64(sum.CacheReadTokens)
		return in, read, float64(sum.Uncached()) + 1.25*float64(sum.CacheWriteTokens) + 0.1*read
	}
	for b.Loop() {
		in, read, billed := run(b, true)
		_, _, offBilled := run(b, false)
		b.ReportMetric(100*read/in, "%read-from-cache")
		b.ReportMetric(billed/offBilled, "billed-vs-uncached")
	}
}
