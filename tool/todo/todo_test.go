package todo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// memStore is a Store in memory that records the updates it got.
type memStore struct {
	list    session.TaskList
	updates []session.TasksUpdated
	fail    error
}

func (m *memStore) Load(ctx context.Context) (session.TaskList, error) {
	return m.list, m.fail
}

func (m *memStore) Update(ctx context.Context, u session.TasksUpdated) (session.TaskList, error) {
	if m.fail != nil {
		return m.list, m.fail
	}
	next, err := session.UpdateTasks(m.list.Tasks, u)
	if err != nil {
		return m.list, err
	}
	m.updates = append(m.updates, u)
	m.list.Tasks = next
	return m.list, nil
}

func run(t testing.TB, s Store, input string) tool.Result {
	t.Helper()
	return Tool{Store: s}.Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(input)})
}

func TestTool(t *testing.T) {
	s := &memStore{}
	steps := []struct {
		input   string
		wantErr bool
		want    []string
	}{
		{input: `{}`, want: []string{"Task list: empty."}},
		{input: `{"action": "set", "tasks": [{"text": "read the code"}, {"text": "fix the bug", "status": "in_progress"}, {"text": "test"}]}`,
			want: []string{"Task list: 0 done, 1 in progress, 2 pending\n[ ] 1. read the code\n[~] 2. fix the bug\n[ ] 3. test"}},
		{input: `{"action": "update", "tasks": [{"id": 1, "status": "completed"}, {"text": "docs"}]}`,
			want: []string{"[x] 1. read the code", "[ ] 4. docs"}},
		{input: `{"action": "update", "remove": ["4"]}`, want: []string{"1 done, 1 in progress, 1 pending"}},
		{input: `{"action": "read"}`, want: []string{"[~] 2. fix the bug"}},
		{input: `{"tasks": [{"text": "only this"}]}`, want: []string{"[ ] 1. only this"}}, // no action with tasks: set
		{input: `{"action": "update", "tasks": [{"id": "9", "status": "done"}]}`, wantErr: true, want: []string{`no task with id "9"`, "not changed"}},
		{input: `{"action": "update"}`, wantErr: true, want: []string{"update needs tasks"}},
		{input: `{"action": "set", "remove": ["1"]}`, wantErr: true, want: []string{"remove does not apply"}},
		{input: `{"action": "read", "tasks": [{"text": "x"}]}`, wantErr: true, want: []string{"read takes no tasks"}},
		{input: `{"action": "delete"}`, wantErr: true, want: []string{`unknown action "delete"`}},
		{input: `{"tasks": "x"}`, wantErr: true, want: []string{"invalid input"}},
		{input: `[1]`, wantErr: true, want: []string{"expected a JSON object"}},
	}
	for _, st := range steps {
		got := run(t, s, st.input)
		if got.IsError != st.wantErr {
			t.Errorf("%s: IsError %v:\n%s", st.input, got.IsError, got.Output)
		}
		for _, w := range st.want {
			if !strings.Contains(got.Output, w) {
				t.Errorf("%s: output lacks %q:\n%s", st.input, w, got.Output)
			}
		}
	}
	if len(s.updates) != 4 {
		t.Fatalf("%d updates reached the store, want 4", len(s.updates))
	}
	want := session.TasksUpdated{Tasks: []session.Task{{ID: "1", Status: "completed"}, {Text: "docs"}}}
	if diff := cmp.Diff(want, s.updates[1]); diff != "" {
		t.Errorf("update as sent (-want +got):\n%s", diff)
	}
}

func TestToolStoreFailure(t *testing.T) {
	s := &memStore{fail: errors.New("disk full")}
	for _, in := range []string{`{"action": "read"}`, `{"action": "set", "tasks": [{"text": "a"}]}`} {
		if got := run(t, s, in); !got.IsError || !strings.Contains(got.Output, "disk full") {
			t.Errorf("%s: %+v", in, got)
		}
	}
	if got := (Tool{}).Run(t.Context(), tool.Call{}); !got.IsError {
		t.Errorf("no store: %+v", got)
	}
}

func TestSpecAndFormat(t *testing.T) {
	s := Tool{}.Spec()
	if s.Name != "todo" || s.Kind != tool.KindRead || len(s.Description) < 100 {
		t.Errorf("spec %+v", s)
	}
	var schema map[string]any
	if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	shared := session.TaskList{Name: "release", Tasks: []session.Task{{ID: "1", Text: "tag", Status: session.TaskDone}}}
	if got := Format(shared); got != "Task list \"release\" (shared with other sessions of this workspace): 1 done, 0 in progress, 0 pending\n[x] 1. tag" {
		t.Errorf("Format = %q", got)
	}
}
