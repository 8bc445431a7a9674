package liteagent_test

import (
	"context"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/builtin"
)

// nameless is a tool whose Spec names nothing.
type nameless struct{}

func (nameless) Spec() tool.Spec                            { return tool.Spec{} }
func (nameless) Run(context.Context, tool.Call) tool.Result { return tool.Result{} }

// TestNewRefusesNilTools gives New tool lists with a nil entry (a nil
// interface, a nil *builtin.Bash, a nil pointer of a tool of one's own)
// or a nameless tool: each is a clear error from New naming the entry, not
// a panic when a session hands its job starter to the tools or runs them.
// A *builtin.Bash that is not nil works, background jobs included.
func TestNewRefusesNilTools(t *testing.T) {
	_, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "exit 0", "background": true})}},
		fakemodel.Reply{Text: "started"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"j1 finished: exit code 0"}}, Text: "done"})
	for _, tc := range []struct {
		name  string
		tools []tool.Tool
		want  []string
	}{
		{"nil interface", []tool.Tool{builtin.Read{}, nil}, []string{"Options.Tools[1] is nil", "leave Tools nil"}},
		{"nil *builtin.Bash", []tool.Tool{builtin.Read{}, (*builtin.Bash)(nil)}, []string{"Options.Tools[1]", "nil *builtin.Bash", "builtin.Bash{}"}},
		{"nil pointer of a tool of one's own", []tool.Tool{(*nameless)(nil)}, []string{"Options.Tools[0]", "nil *liteagent_test.nameless"}},
		{"nameless tool", []tool.Tool{nameless{}}, []string{"Options.Tools[0]", "no name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := liteagent.New(&liteagent.Options{Provider: p, Model: "test-model", Workdir: t.TempDir(), Checkpointer: memory.New(), Tools: tc.tools})
			if err == nil {
				a.Close()
				t.Fatal("New accepted the tools")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	a := newAgent(t, p, liteagent.Options{Tools: []tool.Tool{&builtin.Bash{}}})
	if _, err := a.Send(t.Context(), "start a job"); err != nil {
		t.Fatal(err)
	}
	if res := waitJobs(t, a); len(res) != 1 || res[0].Text != "done" {
		t.Fatalf("the job's completion turn: %+v", res)
	}
	if jobs := a.Jobs(); len(jobs) != 1 {
		t.Fatalf("a *builtin.Bash ran %d background jobs, want 1: %+v", len(jobs), jobs)
	}
}
