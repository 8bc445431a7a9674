package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUpdateTasks(t *testing.T) {
	base := []Task{{ID: "1", Text: "plan", Status: TaskDone}, {ID: "2", Text: "build", Status: TaskInProgress}, {ID: "x", Text: "ship", Status: TaskPending}}
	tests := []struct {
		name    string
		list    []Task
		u       TasksUpdated
		want    []Task
		wantErr string
	}{
		{name: "replace numbers new tasks", list: base, u: TasksUpdated{Replace: true, Tasks: []Task{{Text: "a"}, {Text: " b ", Status: "completed"}}},
			want: []Task{{ID: "1", Text: "a", Status: TaskPending}, {ID: "2", Text: "b", Status: TaskDone}}},
		{name: "replace keeps given ids", u: TasksUpdated{Replace: true, Tasks: []Task{{ID: "7", Text: "a"}, {Text: "b"}}},
			want: []Task{{ID: "7", Text: "a", Status: TaskPending}, {ID: "8", Text: "b", Status: TaskPending}}},
		{name: "replace with nothing empties", list: base, u: TasksUpdated{Replace: true}, want: []Task{}},
		{name: "update status only", list: base, u: TasksUpdated{Tasks: []Task{{ID: "2", Status: "done"}, {ID: "x", Status: "in-progress"}}},
			want: []Task{base[0], {ID: "2", Text: "build", Status: TaskDone}, {ID: "x", Text: "ship", Status: TaskInProgress}}},
		{name: "update text only", list: base, u: TasksUpdated{Tasks: []Task{{ID: "1", Text: "plan it"}}},
			want: []Task{{ID: "1", Text: "plan it", Status: TaskDone}, base[1], base[2]}},
		{name: "update adds new ids and numbers blank ones", list: base, u: TasksUpdated{Tasks: []Task{{ID: "n", Text: "new"}, {Text: "next"}}},
			want: append(append([]Task{}, base...), Task{ID: "n", Text: "new", Status: TaskPending}, Task{ID: "3", Text: "next", Status: TaskPending})},
		{name: "remove", list: base, u: TasksUpdated{Remove: []string{"1", " x "}}, want: []Task{base[1]}},
		{name: "unknown id without text", list: base, u: TasksUpdated{Tasks: []Task{{ID: "9", Status: "done"}}}, wantErr: `no task with id "9" to update`},
		{name: "remove unknown", list: base, u: TasksUpdated{Remove: []string{"9"}}, wantErr: `no task with id "9" to remove`},
		{name: "bad status", list: base, u: TasksUpdated{Tasks: []Task{{ID: "1", Status: "blocked"}}}, wantErr: `status "blocked" is not one of`},
		{name: "duplicate id", u: TasksUpdated{Replace: true, Tasks: []Task{{ID: "1", Text: "a"}, {ID: "1", Text: "b"}}}, wantErr: "given twice"},
		{name: "replace needs text", u: TasksUpdated{Replace: true, Tasks: []Task{{ID: "1"}}}, wantErr: "has no text"},
		{name: "text too long", u: TasksUpdated{Replace: true, Tasks: []Task{{Text: strings.Repeat("a", MaxTaskText+1)}}}, wantErr: "over the limit"},
		{name: "control characters", u: TasksUpdated{Replace: true, Tasks: []Task{{Text: "a\x1b[2Jb"}}}, wantErr: "control characters"},
		{name: "too many", u: TasksUpdated{Replace: true, Tasks: manyTasks(MaxTasks + 1)}, wantErr: "at most 100 tasks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := append([]Task(nil), tt.list...)
			got, err := UpdateTasks(tt.list, tt.u)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("list (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.list); diff != "" {
				t.Errorf("the input list was modified:\n%s", diff)
			}
		})
	}
}

func manyTasks(n int) []Task {
	out := make([]Task, n)
	for i := range out {
		out[i].Text = "t"
	}
	return out
}

func TestTaskListFold(t *testing.T) {
	events := []Event{
		MustNew(TypeSessionStarted, SessionStarted{ID: "tasks-shared-ab", Kind: KindTaskList, Namespace: "/w"}),
		MustNew(TypeTaskListCreated, TaskListCreated{Name: "team"}),
		MustNew(TypeTasksUpdated, TasksUpdated{Replace: true, Tasks: []Task{{Text: "a"}, {Text: "b"}}, Session: "s1"}),
		// Invalid against the list: skipped.
		MustNew(TypeTasksUpdated, TasksUpdated{Remove: []string{"9"}, Session: "s3"}),
		{Type: TypeTasksUpdated, Data: []byte(`{"tasks": 5}`)},
		MustNew(TypeTasksUpdated, TasksUpdated{Tasks: []Task{{ID: "2", Status: TaskDone}}, Session: "s2"}),
	}
	var l TaskList
	for i := range events {
		events[i].Seq = int64(i + 1)
		l.Apply(events[i])
	}
	want := []Task{{ID: "1", Text: "a", Status: TaskPending}, {ID: "2", Text: "b", Status: TaskDone}}
	if diff := cmp.Diff(want, l.Tasks); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if l.ID != "tasks-shared-ab" || l.Name != "team" || !l.Shared() || l.Head != 6 || l.UpdatedBy != "s2" {
		t.Errorf("list %+v", l)
	}
	if p, a, d := l.Counts(); p != 1 || a != 0 || d != 1 {
		t.Errorf("counts %d %d %d", p, a, d)
	}
}
