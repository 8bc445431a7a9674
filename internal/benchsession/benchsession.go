// Package benchsession makes the stored sessions the long-session
// benchmarks resume (BenchmarkResumeLong in the SDK, BenchmarkProcessResumeLong
// in cmd/lite-agent), so both measure the same log.
package benchsession

import (
	"fmt"

	"github.com/lite-agent/lite-agent/session"
)

// Turns returns the events of n completed tool-using turns: a prompt, an
// answer calling edit, the call's intent and receipt, and a final answer.
// Every message differs from the other turns' (a provider keeping encoded
// messages finds no repeats).
func Turns(n int) []session.Event {
	events := make([]session.Event, 0, 6*n)
	for i := range n {
		cid := fmt.Sprintf("c%d", i)
		events = append(events,
			session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: fmt.Sprintf("prompt %d: please change file %d", i, i)}),
			session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{
				{Type: "text", Text: "Let me edit it."},
				{Type: "tool_use", ID: cid, Name: "edit", Input: []byte(`{"path":"f.go","old_string":"a","new_string":"b"}`)},
			}}),
			session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: cid, Tool: "edit", Paths: []string{"f.go"}}),
			session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: cid, Tool: "edit", Output: "edited f.go", Files: map[string]string{"f.go": "abc"}}),
			session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: "text", Text: fmt.Sprintf("Done: I changed a to b in f.go for prompt %d, as asked. Anything else?", i)}}}),
			session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{StopReason: "end_turn"}),
		)
	}
	return events
}
