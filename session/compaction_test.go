package session

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReplayCompaction: the transcript starts from the latest compaction,
// checkpoints and usage still cover the whole log, and a prefix that ends
// before the compaction replays uncompacted.
func TestReplayCompaction(t *testing.T) {
	l := newLog().
		add(TypeProjectContext, ProjectContext{Text: "ctx one"}).
		add(TypeUserPrompt, UserPrompt{Text: "first"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("c1", "read")}, Usage: Usage{InputTokens: 100, OutputTokens: 10}}).
		add(TypeToolStarted, ToolStarted{CallID: "c1", Tool: "read"}).
		add(TypeToolFinished, ToolFinished{CallID: "c1", Output: "file text"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("done one")}, Usage: Usage{InputTokens: 120, OutputTokens: 5}}).
		add(TypeTurnCompleted, TurnCompleted{}).
		add(TypeCompaction, Compaction{ThroughSeq: 8, Summary: "We read the file.", Usage: Usage{InputTokens: 130, OutputTokens: 20}}).
		add(TypeUserPrompt, UserPrompt{Text: "second"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{{Type: BlockThinking, Text: "hm", Signature: "sig"}, text("done two")}, Usage: Usage{InputTokens: 40, OutputTokens: 6, CacheReadTokens: 30}})

	st := Replay(l.events)
	want := []Message{
		{Role: RoleUser, Blocks: []Block{text(CompactedPreamble + "We read the file."), text("second")}},
		{Role: RoleAssistant, Blocks: []Block{{Type: BlockThinking, Text: "hm", Signature: "sig"}, text("done two")}},
	}
	if diff := cmp.Diff(want, st.Transcript()); diff != "" {
		t.Fatalf("transcript after compaction (-want +got):\n%s", diff)
	}
	if c, seq := st.Compaction(); c == nil || seq != 9 || c.ThroughSeq != 8 {
		t.Fatalf("Compaction() = %+v, %d; want through 8 at seq 9", c, seq)
	}
	if got := len(st.Checkpoints()); got != 2 {
		t.Fatalf("%d checkpoints, want both prompts'", got)
	}
	if want := (Usage{InputTokens: 390, OutputTokens: 41, CacheReadTokens: 30}); st.Usage != want {
		t.Fatalf("usage %+v, want %+v (the summary request counts)", st.Usage, want)
	}
	if want := (Usage{InputTokens: 40, OutputTokens: 6, CacheReadTokens: 30}); st.LastUsage() != want {
		t.Fatalf("last usage %+v, want %+v", st.LastUsage(), want)
	}
	if pc := st.ProjectContext(); pc == nil || pc.Text != "ctx one" {
		t.Fatalf("project context %+v", pc)
	}

	// A fork or restore to before the compaction sees every message.
	before := Replay(l.events[:8])
	if got := len(before.Transcript()); got != 4 {
		t.Fatalf("prefix before the compaction has %d messages, want 4 (prompt, call, result, answer)", got)
	}
	if c, _ := before.Compaction(); c != nil {
		t.Fatal("a prefix without the compaction event reports one")
	}
}

// TestReplayCompactionClosesOpenCalls: a compaction taken while a call had
// no result (which the agent never does) still leaves a transcript the APIs
// accept: no result for a call the transcript no longer holds.
func TestReplayCompactionClosesOpenCalls(t *testing.T) {
	l := newLog().
		add(TypeUserPrompt, UserPrompt{Text: "go"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("c1", "read")}}).
		add(TypeCompaction, Compaction{ThroughSeq: 3, Summary: "S"}).
		add(TypeToolFinished, ToolFinished{CallID: "c1", Output: "late"})
	st := Replay(l.events)
	want := []Message{{Role: RoleUser, Blocks: []Block{text(CompactedPreamble + "S")}}}
	if diff := cmp.Diff(want, st.Transcript()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// TestReplayCompactionKeepsTail: the messages begun after ThroughSeq stay
// after the summary; a tail opening with a user message joins the
// summary's.
func TestReplayCompactionKeepsTail(t *testing.T) {
	l := newLog().
		add(TypeUserPrompt, UserPrompt{Text: "one"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("done one")}}).
		add(TypeTurnCompleted, TurnCompleted{}).
		add(TypeUserPrompt, UserPrompt{Text: "two"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("c1", "read")}}).
		add(TypeToolStarted, ToolStarted{CallID: "c1", Tool: "read"}).
		add(TypeToolFinished, ToolFinished{CallID: "c1", Output: "A"}).
		add(TypeCompaction, Compaction{ThroughSeq: 4, Summary: "S"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("done two")}})
	st := Replay(l.events)
	want := []Message{
		{Role: RoleUser, Blocks: []Block{text(CompactedPreamble + "S"), text("two")}},
		{Role: RoleAssistant, Blocks: []Block{use("c1", "read")}},
		{Role: RoleUser, Blocks: []Block{result("c1", "A", false)}},
		{Role: RoleAssistant, Blocks: []Block{text("done two")}},
	}
	if diff := cmp.Diff(want, st.Transcript()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := st.MessagesAfter(8); len(got) != 1 {
		t.Fatalf("MessagesAfter(8) = %d messages, want the last answer", len(got))
	}
}

// TestReplayCompactionTwice: a second compaction can keep a tail that began
// after the first.
func TestReplayCompactionTwice(t *testing.T) {
	l := newLog().
		add(TypeUserPrompt, UserPrompt{Text: "one"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("a1")}}).
		add(TypeCompaction, Compaction{ThroughSeq: 2, Summary: "S1"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("a2")}}).
		add(TypeUserPrompt, UserPrompt{Text: "two"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("a3")}}).
		add(TypeCompaction, Compaction{ThroughSeq: 5, Summary: "S2"})
	st := Replay(l.events)
	want := []Message{
		{Role: RoleUser, Blocks: []Block{text(CompactedPreamble + "S2"), text("two")}},
		{Role: RoleAssistant, Blocks: []Block{text("a3")}},
	}
	if diff := cmp.Diff(want, st.Transcript()); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
