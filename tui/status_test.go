package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/session"
)

// The status line of a model the table knows shows the context share of
// its window and the estimated cost with the cache's share; a compaction
// empties the context until the next call.
func TestStatusShowsContextAndCost(t *testing.T) {
	for _, w := range []int{80, 40} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			a, _ := newTestAgent(t, nil, nil)
			m := newModel(context.Background(), a, Options{SessionDB: "sessions.db", Model: "claude-sonnet-4-5", Env: []string{"NO_COLOR=1"}}, nil)
			m.now, m.loc, m.ws = func() time.Time { return clock }, time.UTC, "~/proj"
			m.Update(teaSize(w, 24))
			l := &logBuilder{session: sid}
			// 67,000 input tokens of which 54,270 read from the cache and
			// 10,000 written to it, 1,000 output: 68,000 of 200k is 34%;
			// at $3/$3.75/$0.30/$15 per million: 2,730×3 + 10,000×3.75 +
			// 54,270×0.30 + 1,000×15 = $0.076971.
			u := session.Usage{InputTokens: 67_000, OutputTokens: 1_000, CacheWriteTokens: 10_000, CacheReadTokens: 54_270}
			feed(m, l.start(), l.prompt("Explain the repository"),
				l.event(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{text("It is an agent.")}, Usage: u, Model: "claude-sonnet-4-5"}),
				l.completed())
			checkScreen(t, m, fmt.Sprintf("spend_%d", w))
			want := "ctx 34% of 200k · $0.0770 (cache 81%)"
			if w == 80 && !strings.Contains(screen(m), "68.0k tokens · "+want) {
				t.Fatalf("the status line lacks %q:\n%s", want, screen(m))
			}
			if want := "ctx 34% $0.0770"; w == 40 && !strings.Contains(screen(m), want) {
				t.Fatalf("the narrow status line lacks %q:\n%s", want, screen(m))
			}
			feed(m, l.event(session.TypeCompaction, session.Compaction{ThroughSeq: 4, Summary: "An agent.", Usage: session.Usage{InputTokens: 68_000, OutputTokens: 500}}))
			if s := screen(m); !strings.Contains(s, "ctx 0%") {
				t.Fatalf("after a compaction the context share is not 0:\n%s", s)
			}
		})
	}
}
