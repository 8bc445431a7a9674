package checkpoint_test

import (
	"encoding/json"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestIndexRowsDiffer: the doctor's comparison of a session's index rows
// with its log finds rows gone, rows of events without search text or
// past the log, and nothing when they match (a prompt without words and
// without a row among them).
func TestIndexRowsDiffer(t *testing.T) {
	evs := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s", Namespace: "ns"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "find the parser"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockToolUse, ID: "c1", Name: "read", Input: json.RawMessage(`{"path":"p.go"}`)}}}),
		session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c1", Tool: "read", Output: "package parser"}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "?!"}),
		session.MustNew(session.TypeSessionTitled, session.SessionTitled{Title: "Parser"}),
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	for _, tc := range []struct {
		name    string
		kind    string
		indexed []int64
		differ  bool
	}{
		{"the rows of the events with words", "", []int64{2, 4, 6}, false},
		{"a row gone", "", []int64{2, 6}, true},
		{"the last row gone", "", []int64{2, 4}, true},
		{"no rows", "", nil, true},
		{"a row of an answer of tool calls only", "", []int64{2, 3, 4, 6}, true},
		{"a row of an event no search reads", "", []int64{1, 2, 4, 6}, true},
		{"a row past the log", "", []int64{2, 4, 6, 7}, true},
		{"a task list without rows", session.KindTaskList, nil, false},
		{"a task list with rows", session.KindTaskList, []int64{2}, true},
	} {
		if got := checkpoint.IndexRowsDiffer(tc.kind, evs, tc.indexed); got != tc.differ {
			t.Errorf("%s: IndexRowsDiffer(%q, %v) = %v, want %v", tc.name, tc.kind, tc.indexed, got, tc.differ)
		}
	}
}
