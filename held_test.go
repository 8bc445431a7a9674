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
	"github.com/lite-agent/lite-agent/permission"
)

// TestTurnAppends pins which events of a one-tool turn share a durable
// append (held.go): the model's tool call rides with the call's intent,
// the final answer with the turn's end, except that an answer is written
// on its own before a person is asked to approve a call; a permission
// rule's decision rides with the append that follows it.
func TestTurnAppends(t *testing.T) {
	cases := []struct {
		name    string
		approve bool
		rule    permission.Effect
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
		{name: "allowed by a rule", rule: permission.Allow, want: []string{
			"session_started project_context user_prompt",
			"assistant_message permission_decided tool_started file_snapshot",
			"tool_finished",
			"assistant_message turn_completed",
		}},
		{name: "denied by a rule", rule: permission.Deny, want: []string{
			"session_started project_context user_prompt",
			"assistant_message permission_decided tool_finished",
			"assistant_message turn_completed",
		}},
		{name: "a rule asks", rule: permission.Ask, approve: true, want: []string{
			"session_started project_context user_prompt",
			"assistant_message permission_decided",
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
			if tc.rule != "" {
				rules, err := permission.New([]permission.Rule{{Effect: tc.rule, Pattern: "write(a.txt)", Source: "project"}})
				if err != nil {
					t.Fatal(err)
				}
				opts.Permissions = rules
			}
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
			if tc.approve && !strings.HasSuffix(" "+strings.Join(durableWhenAsked, " "), " "+tc.want[1]) {
				t.Fatalf("when the approval was asked the log was %v, want it to end as %q", durableWhenAsked, tc.want[1])
			}
			b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
			if want := "new\n"; tc.rule == permission.Deny {
				if b != nil {
					t.Fatalf("a denied write left a.txt %q", b)
				}
			} else if string(b) != want {
				t.Fatalf("a.txt %q, want %q", b, want)
			}
			if res.Text != "done" {
				t.Fatalf("answer %q", res.Text)
			}
		})
	}
}
