package session

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var goldenTime = time.Date(2026, 11, 30, 22, 10, 0, 123456000, time.UTC)

// goldenEvents has one event of every known type. Changing how any of them
// encodes breaks logs already on disk: add fields, never rename them.
func goldenEvents() map[string]Event {
	ev := func(seq int64, t Type, p any) Event {
		e := MustNew(t, p)
		e.Seq, e.Time = seq, goldenTime
		return e
	}
	return map[string]Event{
		"session_started": ev(1, TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "/work/app", Workdir: "/work/app", Provider: "anthropic", Model: "claude-sonnet-4-6", Parent: &ForkRef{Session: "s0", Seq: 7}}),
		"user_prompt":     ev(2, TypeUserPrompt, UserPrompt{Text: "Refactor auth.go"}),
		"assistant_message": ev(3, TypeAssistantMessage, AssistantMessage{
			Blocks:     []Block{{Type: BlockText, Text: "Reading it."}, {Type: BlockToolUse, ID: "call_1", Name: "edit", Input: json.RawMessage(`{"path":"auth.go","old_string":"a","new_string":"b"}`)}},
			StopReason: "tool_use", Usage: Usage{InputTokens: 120, OutputTokens: 30}, Model: "claude-sonnet-4-6",
		}),
		"tool_started":          ev(4, TypeToolStarted, ToolStarted{CallID: "call_1", Tool: "edit", Input: json.RawMessage(`{"path":"auth.go"}`), Paths: []string{"auth.go"}, Approval: "once"}),
		"file_snapshot":         ev(5, TypeFileSnapshot, FileSnapshot{CallID: "call_1", Path: "auth.go", Existed: true, Mode: 0o644, Content: []byte("package auth\n"), Digest: "abc"}),
		"tool_finished":         ev(6, TypeToolFinished, ToolFinished{CallID: "call_1", Tool: "edit", Output: "edited auth.go", Files: map[string]string{"auth.go": "def"}}),
		"turn_completed":        ev(7, TypeTurnCompleted, TurnCompleted{StopReason: "end_turn", Usage: Usage{InputTokens: 200, OutputTokens: 50}}),
		"turn_interrupted":      ev(8, TypeTurnInterrupted, TurnInterrupted{Reason: "cancelled"}),
		"recovery_acknowledged": ev(9, TypeRecoveryAcknowledged, RecoveryAcknowledged{Tokens: []string{"rv-0123456789ab"}, CallIDs: []string{"call_2"}}),
		"project_context":       ev(11, TypeProjectContext, ProjectContext{Text: "# Environment\n\nWorking directory: /work/app\n", Files: []ContextFile{{Path: "/work/app/AGENTS.md", Scope: ScopeProject, Bytes: 1048576, Cut: true}}}),
		"compaction":            ev(12, TypeCompaction, Compaction{ThroughSeq: 11, Summary: "We refactored auth.go.", Focus: "the tests", Auto: true, Tokens: 25000, Usage: Usage{InputTokens: 25000, OutputTokens: 400, CacheReadTokens: 24000}}),
		"assistant_message_thinking": ev(13, TypeAssistantMessage, AssistantMessage{
			Blocks:     []Block{{Type: BlockThinking, Text: "The edit is small.", Signature: "c2lnbmF0dXJl"}, {Type: BlockToolUse, ID: "call_4", Name: "read", Input: json.RawMessage(`{"path":"auth.go"}`)}},
			StopReason: "tool_use", Usage: Usage{InputTokens: 1200, OutputTokens: 30, CacheWriteTokens: 200, CacheReadTokens: 900}, Model: "claude-sonnet-4-6",
		}),
		"restored":             ev(10, TypeRestored, Restored{Session: "s1", ToSeq: 1, Fork: "s2", Files: map[string]string{"auth.go": "abc", "new.go": ""}, NotUndone: []string{"call_3"}}),
		"workdir_changed":      ev(11, TypeWorkdirChanged, WorkdirChanged{From: "/work/app", To: "/work/copy"}),
		"restore_started":      ev(12, TypeRestoreStarted, RestoreStarted{ToSeq: 1, Head: 11, Undo: "s1-r11", Workdir: "/work/copy"}),
		"permission_decided":   ev(14, TypePermissionDecided, PermissionDecided{CallID: "call_4", Tool: "bash", Effect: "deny", Rule: "bash(git push *)", Source: "project /work/app/.lite-agent/config.toml", Reason: "pushes go through CI"}),
		"tool_started_sandbox": ev(15, TypeToolStarted, ToolStarted{CallID: "call_5", Tool: "bash", Input: json.RawMessage(`{"command":"go test ./..."}`), Approval: "rule", Sandbox: "workspace-write"}),
		"session_titled":       ev(14, TypeSessionTitled, SessionTitled{Title: "Refactor auth to contexts", By: TitleByModel}),
		"model_changed":        ev(16, TypeModelChanged, ModelChanged{Model: "claude-opus-4-1", From: "claude-sonnet-4-6", Provider: "anthropic"}),
		"event_lost":           ev(10, TypeEventLost, EventLost{Reason: "the stored checksum of seq 10 (user_prompt) does not match its contents"}),
		"session_started_imported": ev(1, TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "/work/app", Workdir: "/work/app",
			Imported: &Import{From: "/home/u/s1.jsonl", Host: "laptop", At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Head: 21, Salvaged: true,
				Previous: &Import{From: "stdin", Host: "desk", At: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Head: 21}}}),
	}
}

func TestGoldenEncoding(t *testing.T) {
	for name, e := range goldenEvents() {
		t.Run(name, func(t *testing.T) {
			got, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./session -run Golden -update to create it)", err)
			}
			want = bytes.TrimSpace(want)
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding changed:\n got %s\nwant %s", got, want)
			}
			var back Event
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			if !back.Known() || back.Seq != e.Seq || !back.Time.Equal(e.Time) || !bytes.Equal(back.Data, e.Data) {
				t.Fatalf("golden file decodes to %+v, want %+v", back, e)
			}
		})
	}
}

func TestUnknownTypeKeptAsIs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", "future_type.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.TrimSpace(raw)
	var e Event
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("unknown type must read without error: %v", err)
	}
	if e.Known() {
		t.Fatalf("type %q reported as known", e.Type)
	}
	again, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, raw) {
		t.Fatalf("unknown event not kept as it is:\n got %s\nwant %s", again, raw)
	}
	// Replaying it changes nothing but the head.
	st := Replay([]Event{goldenEvents()["session_started"], e})
	if st.Summary.Head != e.Seq || len(st.Transcript()) != 0 {
		t.Fatalf("replay of an unknown event: head %d, %d messages", st.Summary.Head, len(st.Transcript()))
	}
}

func TestNewerFormatVersionRefused(t *testing.T) {
	var e Event
	err := json.Unmarshal([]byte(`{"v":99,"seq":1,"type":"user_prompt","time":"2026-11-30T22:10:00Z","data":{}}`), &e)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("upgrade")) {
		t.Fatalf("got %v, want an error telling to upgrade", err)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, e := range goldenEvents() {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"seq":1,"type":"x","time":"bad"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		if json.Unmarshal(b, &e) != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil {
			return // data that is not valid JSON cannot come from a valid envelope
		}
		var back Event
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("re-encoded event does not decode: %v\n%s", err, out)
		}
		if back.Seq != e.Seq || back.Type != e.Type || !back.Time.Equal(e.Time) {
			t.Fatalf("round trip changed the envelope: %+v → %+v", e, back)
		}
	})
}
