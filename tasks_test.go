package liteagent_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	filestore "github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// backends open an empty store of each kind available in process.
var backends = []struct {
	name string
	open func(t testing.TB) checkpoint.Checkpointer
}{
	{"memory", func(t testing.TB) checkpoint.Checkpointer { return memory.New() }},
	{"file", func(t testing.TB) checkpoint.Checkpointer {
		return openStore(t, "file", filepath.Join(t.TempDir(), "store"))
	}},
	{"sqlite", func(t testing.TB) checkpoint.Checkpointer {
		return openStore(t, "sqlite", filepath.Join(t.TempDir(), "s.db"))
	}},
}

// openStore opens a persistent store at loc and closes it after the test.
func openStore(t testing.TB, kind, loc string) checkpoint.Checkpointer {
	t.Helper()
	var c checkpoint.Checkpointer
	var err error
	switch kind {
	case "file":
		c, err = filestore.Open(loc, nil)
	case "sqlite":
		c, err = sqlite.Open(loc, nil)
	default:
		err = fmt.Errorf("unknown store kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func taskIDs(l *session.TaskList) []string {
	var out []string
	for _, t := range l.Tasks {
		out = append(out, t.ID+"="+t.Status)
	}
	return out
}

func TestTodoToolKeepsPrivateList(t *testing.T) {
	for _, kind := range providers {
		t.Run(kind, func(t *testing.T) {
			srv, p := startModel(t, kind,
				fakemodel.Reply{Expect: &fakemodel.Expect{Tools: []string{"todo", "job_output", "job_stop", "bash"}},
					ToolCalls: []fakemodel.ToolCall{call("c1", "todo", map[string]any{"action": "set", "tasks": []map[string]string{{"text": "read"}, {"text": "fix", "status": "in_progress"}}})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"[~] 2. fix"}},
					ToolCalls: []fakemodel.ToolCall{call("c2", "todo", map[string]any{"action": "update", "tasks": []map[string]any{{"id": 2, "status": "done"}}})}},
				fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c2"}, BodyContains: []string{"[x] 2. fix"}}, Text: "planned"},
			)
			store := memory.New()
			var asked int
			a := newAgent(t, p, liteagent.Options{Checkpointer: store, Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
				asked++
				return liteagent.Deny, nil
			}})
			if _, err := a.Send(t.Context(), "plan it"); err != nil {
				t.Fatal(err)
			}
			checkServer(t, srv)
			if asked != 0 {
				t.Errorf("the todo tool asked for approval %d times", asked)
			}
			l, err := a.Tasks(t.Context(), a.SessionID())
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(taskIDs(l), " "); got != "1=pending 2=done" || l.Shared() || l.ID != liteagent.PrivateTaskListID(a.SessionID()) {
				t.Fatalf("list %+v", l)
			}
			// The list is a log of its own that listing conversations never shows.
			list, err := a.ListSessions(t.Context())
			if err != nil || len(list) != 1 || list[0].ID != a.SessionID() {
				t.Fatalf("ListSessions = %+v, %v", list, err)
			}
			lists, err := store.List(t.Context(), a.Namespace(), checkpoint.ListOptions{Kind: session.KindTaskList})
			if err != nil || len(lists) != 1 || lists[0].ID != l.ID {
				t.Fatalf("task list logs = %+v, %v", lists, err)
			}
			if err := a.Resume(t.Context(), l.ID); err == nil {
				t.Fatal("a task list log was resumed as a conversation")
			}
		})
	}
}

func TestTasksReadsWithoutWriting(t *testing.T) {
	store := memory.New()
	a := newAgent(t, nil, liteagent.Options{Checkpointer: store, TaskList: "team"})
	l, err := a.Tasks(t.Context(), "")
	if err != nil || len(l.Tasks) != 0 || l.Name != "team" || l.Head != 0 {
		t.Fatalf("Tasks of an unwritten list = %+v, %v", l, err)
	}
	if all, _ := store.List(t.Context(), "", checkpoint.ListOptions{AllKinds: true}); len(all) != 0 {
		t.Fatalf("reading a list wrote %+v", all)
	}
	if _, err := a.UpdateTasks(t.Context(), "", session.TasksUpdated{Tasks: []session.Task{{ID: "1", Status: "done"}}}); err == nil || !strings.Contains(err.Error(), "no task with id") {
		t.Fatalf("invalid update = %v", err)
	}
	if all, _ := store.List(t.Context(), "", checkpoint.ListOptions{AllKinds: true}); len(all) != 0 {
		t.Fatalf("an invalid update wrote %+v", all)
	}
	b := newAgent(t, nil, liteagent.Options{Checkpointer: store})
	if _, err := b.Tasks(t.Context(), ""); !errors.Is(err, liteagent.ErrNoSession) {
		t.Fatalf("private Tasks without a session = %v", err)
	}
	for _, name := range []string{" x", strings.Repeat("n", 101), "a\nb"} {
		if _, err := liteagent.New(&liteagent.Options{Checkpointer: store, TaskList: name, Workdir: t.TempDir()}); err == nil {
			t.Errorf("task list name %q accepted", name)
		}
	}
}

func TestDeleteSessionKeepsSharedLists(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			store := b.open(t)
			srv, p := startModel(t, "anthropic", fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two"})
			dir := t.TempDir()
			private := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir})
			shared := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: dir, TaskList: "release"})
			for _, a := range []*liteagent.Agent{private, shared} {
				if _, err := a.Send(t.Context(), "hello"); err != nil {
					t.Fatal(err)
				}
				if _, err := a.UpdateTasks(t.Context(), "", session.TasksUpdated{Tasks: []session.Task{{Text: "tag it"}}}); err != nil {
					t.Fatal(err)
				}
			}
			checkServer(t, srv)
			s1, s2 := private.SessionID(), shared.SessionID()
			privID, sharedID := liteagent.PrivateTaskListID(s1), liteagent.SharedTaskListID(shared.Namespace(), "release")
			if list, err := private.ListSessions(t.Context()); err != nil || len(list) != 2 {
				t.Fatalf("ListSessions shows %d sessions (%v), want the 2 conversations only", len(list), err)
			}
			if err := private.DeleteSession(t.Context(), sharedID); err == nil || !strings.Contains(err.Error(), "tasklist") {
				t.Fatalf("DeleteSession of a task list = %v", err)
			}
			if err := private.DeleteSession(t.Context(), s1); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{s1, privID} {
				if _, err := store.Head(t.Context(), id); !errors.Is(err, checkpoint.ErrNotFound) {
					t.Errorf("%s after DeleteSession: %v, want ErrNotFound", id, err)
				}
			}
			if err := shared.DeleteSession(t.Context(), s2); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Head(t.Context(), s2); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("session %s after DeleteSession: %v", s2, err)
			}
			l, err := shared.Tasks(t.Context(), "")
			if err != nil || len(l.Tasks) != 1 || l.ID != sharedID || l.Name != "release" {
				t.Fatalf("the shared list after deleting a session that used it: %+v, %v", l, err)
			}
			if err := private.DeleteSession(t.Context(), s1); !errors.Is(err, checkpoint.ErrNotFound) {
				t.Fatalf("second DeleteSession = %v, want ErrNotFound", err)
			}
		})
	}
}

// Environment of the child process of TestSharedTaskListAcrossProcesses.
const (
	envTaskChild = "LITEAGENT_TEST_TASK_CHILD" // "kind|location|workdir|prefix|updates"
)

// TestTaskListChild is not a test: it is the child process of
// TestSharedTaskListAcrossProcesses, which re-executes the test binary.
// It prints "ready", waits for stdin to close, then adds tasks to the
// shared list one update at a time, and prints "done".
func TestTaskListChild(t *testing.T) {
	spec := os.Getenv(envTaskChild)
	if spec == "" {
		t.Skip("the child process of TestSharedTaskListAcrossProcesses")
	}
	f := strings.Split(spec, "|")
	n, _ := strconv.Atoi(f[4])
	store := openStore(t, f[0], f[1])
	a, err := liteagent.New(&liteagent.Options{Checkpointer: store, Workdir: f[2], TaskList: "team"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	for i := range n {
		u := session.TasksUpdated{Tasks: []session.Task{{ID: fmt.Sprintf("%s-%d", f[3], i), Text: "task from " + f[3]}}}
		if i > 0 {
			// Each update also changes a task of the same writer, so
			// updates touch the list's existing state too.
			u.Tasks = append(u.Tasks, session.Task{ID: fmt.Sprintf("%s-%d", f[3], i-1), Status: session.TaskDone})
		}
		if _, err := a.UpdateTasks(context.Background(), "", u); err != nil {
			t.Fatal(err)
		}
		// A short pause lets the other writer's attempts in, so that the
		// two processes' updates interleave on every backend.
		time.Sleep(time.Duration(i%3) * time.Millisecond)
	}
	fmt.Println("done")
}

func TestSharedTaskListAcrossProcesses(t *testing.T) {
	const updates = 25
	for _, kind := range []string{"file", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), "store")
			if kind == "sqlite" {
				loc += ".db"
			}
			dir := t.TempDir()
			store := openStore(t, kind, loc)
			var children []*exec.Cmd
			var stdins []interface{ Close() error }
			var outs []*bufio.Reader
			for _, prefix := range []string{"a", "b"} {
				cmd := exec.Command(os.Args[0], "-test.run=^TestTaskListChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), envTaskChild+"="+strings.Join([]string{kind, loc, dir, prefix, strconv.Itoa(updates)}, "|"))
				cmd.Stderr = os.Stderr
				in, err := cmd.StdinPipe()
				if err != nil {
					t.Fatal(err)
				}
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				children, stdins, outs = append(children, cmd), append(stdins, in), append(outs, bufio.NewReader(out))
			}
			t.Cleanup(func() {
				for _, c := range children {
					c.Process.Kill()
				}
			})
			for _, out := range outs {
				if line, err := out.ReadString('\n'); line != "ready\n" {
					t.Fatalf("child said %q, %v", line, err)
				}
			}
			for _, in := range stdins {
				in.Close()
			}
			for i, c := range children {
				rest, _ := outs[i].ReadString(0)
				if err := c.Wait(); err != nil || !strings.Contains(rest, "done") {
					t.Fatalf("child %d: %v, output %q", i, err, rest)
				}
			}
			a := newAgent(t, nil, liteagent.Options{Checkpointer: store, Workdir: dir, TaskList: "team"})
			l, err := a.Tasks(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, prefix := range []string{"a", "b"} {
				for i := range updates {
					status := session.TaskDone
					if i == updates-1 {
						status = session.TaskPending
					}
					want = append(want, fmt.Sprintf("%s-%d=%s", prefix, i, status))
				}
			}
			got := taskIDs(l)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("after %d updates from each of two processes the list has:\n%v\nwant:\n%v", updates, got, want)
			}
			// One event per update, after the list's two opening events.
			if l.Head != 2+2*updates {
				t.Fatalf("head %d, want %d", l.Head, 2+2*updates)
			}
		})
	}
}
