package liteagent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/faulty"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestTurnAppends pins which events of a one-tool turn share a durable
// append (held.go): the model's tool call rides with the call's intent,
// the final answer with the turn's end, except that an answer is written
// on its own before a person is asked to approve a call.
func TestTurnAppends(t *testing.T) {
	cases := []struct {
		name    string
		approve bool
		want    []string
	}{
		{name: "no approval", want: []string{
			"session_started project_context user_prompt",
			"assistant_message tool_started file_snapshot",
			"tool_finished",
			"assistant_message turn_completed",
		}},
		{name: "approval asked", approve: true, want: []string{
			"session_started project_context user_prompt",
			"assistant_message",
			"tool_started file_snapshot",
			"tool_finished",
			"assistant_message turn_completed",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, p := startModel(t, "anthropic",
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "write", map[string]string{"path": "a.txt", "content": "new\n"})}},
				fakemodel.Reply{Text: "done"},
			)
			dir := t.TempDir()
			store := faulty.New(memory.New())
			opts := liteagent.Options{Checkpointer: store, Workdir: dir}
			var durableWhenAsked []string
			if tc.approve {
				opts.Approve = func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
					durableWhenAsked = types(t, store, r.Session)
					return liteagent.AllowOnce, nil
				}
			}
			a := newAgent(t, p, opts)
			res, err := a.Send(t.Context(), "write a.txt")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := 1; i <= store.Appends(); i++ {
				got = append(got, strings.Join(store.AppendTypes(i), " "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("appends:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.approve && (len(durableWhenAsked) == 0 || durableWhenAsked[len(durableWhenAsked)-1] != "assistant_message") {
				t.Fatalf("when the approval was asked the log was %v, want it to end in the model's tool call", durableWhenAsked)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "new\n" || res.Text != "done" {
				t.Fatalf("a.txt %q, answer %q", b, res.Text)
			}
		})
	}
}
