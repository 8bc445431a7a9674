package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestThinkingRoundTripsThroughResume: a turn that thinks and then calls a
// tool stops at the model-call limit, so the log ends inside tool use; a
// second process resumes the session and its request must start the last
// assistant message with that thinking block, signature and all (the fake
// model refuses it otherwise, as the API does). Text output hides the
// thinking; stream-json carries it.
func TestThinkingRoundTripsThroughResume(t *testing.T) {
	const first, second = "FIRST-THOUGHT: the directory should be listed before anything else", "SECOND-THOUGHT: the listing answers the question"
	srv := startModel(t,
		fakemodel.Reply{Name: "think then call", Thinking: first, ToolCalls: []fakemodel.ToolCall{toolCall("toolu_ls", "ls", map[string]any{})}},
		fakemodel.Reply{Name: "resumed", Thinking: second, Text: "It holds notes.txt.",
			Expect: &fakemodel.Expect{BodyContains: []string{first, fakemodel.Signature(first), `"thinking":{"budget_tokens":2048,"type":"enabled"}`}, ToolResultFor: []string{"toolu_ls"}}},
		fakemodel.Reply{Name: "text output", Thinking: second, Text: "Still notes.txt."},
	)
	work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
	writeFile(t, filepath.Join(work, "notes.txt"), "hello\n")

	code, out, errs := run(t, srv, work, "--session-db", db, "--thinking", "2048", "--max-model-calls", "1", "what is in this directory?")
	if code == 0 || !strings.Contains(errs, "model calls") {
		t.Fatalf("the first run should stop at the model-call limit: %d %q %q", code, out, errs)
	}
	if strings.Contains(out+errs, "FIRST-THOUGHT") {
		t.Fatalf("text output shows the thinking:\nstdout %s\nstderr %s", out, errs)
	}
	id := onlySession(t, work, db)
	_, export, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if !strings.Contains(export, fakemodel.Signature(first)) {
		t.Fatalf("the log does not keep the thinking block's signature:\n%s", export)
	}

	code, out, errs = run(t, srv, work, "--session-db", db, "--thinking", "2048", "--output", "stream-json", "--resume", id, "so what is there?")
	if code != 0 {
		t.Fatalf("resume in a new process: %d %s\nfake model: %v", code, errs, srv.Failures())
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"kind":"thinking","text":"SECON"`) || !strings.Contains(out, `{"type":"thinking","text":"`+second+`"`) || !strings.Contains(out, fakemodel.Signature(second)) {
		t.Fatalf("stream-json lacks the thinking deltas or the thinking block with its signature:\n%s", out)
	}

	code, out, errs = run(t, srv, work, "--session-db", db, "--thinking", "2048", "--resume", id, "and now?")
	if code != 0 || !strings.Contains(out, "Still notes.txt.") || strings.Contains(out+errs, "SECOND-THOUGHT") {
		t.Fatalf("text output: %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// TestOpenAIReasoningKeptAndHidden: against an OpenAI-compatible server
// that reasons (reasoning_content, as DeepSeek and vLLM send it), the
// reasoning before a tool call goes back with it in the same turn (the
// fake model refuses the request otherwise), is kept in the log as a
// thinking block, is hidden from text output and carried by stream-json.
func TestOpenAIReasoningKeptAndHidden(t *testing.T) {
	const before, after = "REASONING-BEFORE: list the directory first", "REASONING-AFTER: the listing answers it"
	for _, output := range []string{"text", "stream-json"} {
		t.Run(output, func(t *testing.T) {
			srv := startModel(t,
				fakemodel.Reply{Thinking: before, ToolCalls: []fakemodel.ToolCall{toolCall("call_ls", "ls", map[string]any{})}},
				fakemodel.Reply{Thinking: after, Text: "It holds notes.txt.", Expect: &fakemodel.Expect{BodyContains: []string{`"reasoning_content":"` + before + `"`}}},
			)
			work, db := t.TempDir(), filepath.Join(t.TempDir(), "s.db")
			writeFile(t, filepath.Join(work, "notes.txt"), "hello\n")
			code, out, errs := runEnv(t, srv, work, []string{"OPENAI_BASE_URL=" + srv.OpenAIURL()},
				"--session-db", db, "--provider", "openai", "--model", "local", "--output", output, "what is in this directory?")
			if code != 0 {
				t.Fatalf("run: %d %s\nfake model: %v", code, errs, srv.Failures())
			}
			if err := srv.Err(); err != nil {
				t.Fatal(err)
			}
			switch output {
			case "text":
				if !strings.Contains(out, "It holds notes.txt.") || strings.Contains(out+errs, "REASONING-") {
					t.Fatalf("text output:\nstdout %s\nstderr %s", out, errs)
				}
			case "stream-json":
				if !strings.Contains(out, `"kind":"thinking","text":"REASO"`) || !strings.Contains(out, `{"type":"thinking","text":"`+after+`"}`) {
					t.Fatalf("stream-json lacks the reasoning:\n%s", out)
				}
			}
			_, export, _ := run(t, nil, work, "--session-db", db, "--export", onlySession(t, work, db))
			if !strings.Contains(export, `{"type":"thinking","text":"`+before+`"}`) || !strings.Contains(export, `{"type":"thinking","text":"`+after+`"}`) {
				t.Fatalf("the log does not keep the reasoning:\n%s", export)
			}
		})
	}
}
