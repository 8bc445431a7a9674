package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchLogLen is the number of events the replay benchmarks fold.
const benchLogLen = 10_000

// benchText is n bytes of plain ASCII text, like checkpointtest's events.
func benchText(n int) string { return strings.Repeat("lorem ipsum ", n/12+1)[:n] }

// benchProse is about n bytes of text as models and tools write it: lines,
// quotes, tabs and some non-ASCII, so that strings need unescaping.
func benchProse(n int) string {
	const line = "Here is the \"fix\":\tcall parse() before use — it returns an error ✓ when the input is empty.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// benchAssistantLog is a log of n assistant messages of one 1 KiB text block
// each, the shape of checkpointtest's ReadRebuild10k.
func benchAssistantLog(n int) []Event {
	text := benchText(1 << 10)
	events := make([]Event, n)
	for i := range events {
		e := MustNew(TypeAssistantMessage, AssistantMessage{Blocks: []Block{{Type: BlockText, Text: text}}})
		e.Seq = int64(i + 1)
		events[i] = e
	}
	return events
}

// benchMixLog is a log of about n events in turns of a realistic shape: a
// prompt, a reply with a tool call, the tool's intent, a 4 KiB snapshot of
// the file it edits, its receipt with output, and a final 1 KiB reply.
func benchMixLog(n int) []Event {
	var events []Event
	add := func(t Type, p any) {
		e := MustNew(t, p)
		e.Seq = int64(len(events) + 1)
		e.Time = goldenTime.Add(time.Duration(e.Seq) * time.Millisecond)
		events = append(events, e)
	}
	add(TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "/work/app", Workdir: "/work/app", Provider: "anthropic", Model: "claude-sonnet-4-6"})
	content := []byte(strings.Repeat("package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n", 4<<10/48+1)[:4<<10])
	for turn := 0; len(events) < n; turn++ {
		id := fmt.Sprintf("call_%d", turn)
		path := fmt.Sprintf("pkg/file%d.go", turn%50)
		input, _ := json.Marshal(map[string]string{"path": path, "old_string": benchProse(120), "new_string": benchProse(160)})
		add(TypeUserPrompt, UserPrompt{Text: benchProse(200)})
		add(TypeAssistantMessage, AssistantMessage{
			Blocks:     []Block{{Type: BlockText, Text: benchProse(300)}, {Type: BlockToolUse, ID: id, Name: "edit", Input: input}},
			StopReason: "tool_use", Usage: Usage{InputTokens: 1200, OutputTokens: 300}, Model: "claude-sonnet-4-6",
		})
		add(TypeToolStarted, ToolStarted{CallID: id, Tool: "edit", Input: input, Paths: []string{path}, Approval: "auto"})
		add(TypeFileSnapshot, FileSnapshot{CallID: id, Path: path, Existed: true, Mode: 0o644, Content: content, Digest: strings.Repeat("ab", 32)})
		add(TypeToolFinished, ToolFinished{CallID: id, Tool: "edit", Output: benchProse(1 << 10), Files: map[string]string{path: strings.Repeat("cd", 32)}})
		add(TypeAssistantMessage, AssistantMessage{
			Blocks:     []Block{{Type: BlockText, Text: benchProse(1 << 10)}},
			StopReason: "end_turn", Usage: Usage{InputTokens: 1500, OutputTokens: 250}, Model: "claude-sonnet-4-6",
		})
		add(TypeTurnCompleted, TurnCompleted{StopReason: "end_turn", Usage: Usage{InputTokens: 2700, OutputTokens: 550}})
	}
	return events[:n]
}

// BenchmarkReplay10k folds logs of 10,000 events into a State, without any
// store: Assistant1KiB is checkpointtest's ReadRebuild10k log, Mix a log of
// whole turns (prompts, tool calls, snapshots, receipts).
func BenchmarkReplay10k(b *testing.B) {
	for _, bc := range []struct {
		name   string
		events []Event
	}{
		{"Assistant1KiB", benchAssistantLog(benchLogLen)},
		{"Mix", benchMixLog(benchLogLen)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var size int64
			for _, e := range bc.events {
				size += int64(len(e.Data))
			}
			b.SetBytes(size)
			for b.Loop() {
				var st State
				for _, e := range bc.events {
					st.Apply(e)
				}
				if len(st.Transcript()) == 0 || st.Summary.Head != int64(len(bc.events)) {
					b.Fatalf("replay: %d messages, head %d", len(st.Transcript()), st.Summary.Head)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(bc.events)), "ns/event")
		})
	}
}

// BenchmarkSummary10k folds the Mix log into a Summary alone, as stores do on
// every append.
func BenchmarkSummary10k(b *testing.B) {
	events := benchMixLog(benchLogLen)
	for b.Loop() {
		var s Summary
		for _, e := range events {
			s.Apply(e)
		}
		if s.Head != benchLogLen {
			b.Fatalf("head %d", s.Head)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchLogLen), "ns/event")
}

// BenchmarkReplay100Turns folds a session of 100 whole turns of the Mix shape
// (701 events, about 1 MB), as resuming such a session does after reading it.
func BenchmarkReplay100Turns(b *testing.B) {
	events := benchMixLog(1 + 100*7)
	for b.Loop() {
		var st State
		for _, e := range events {
			st.Apply(e)
		}
		if got := len(st.Checkpoints()); got != 100 {
			b.Fatalf("replay: %d checkpoints, want 100", got)
		}
	}
}
