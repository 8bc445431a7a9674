package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

func TestJobAndTaskFlagRules(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no-wait without prompt", []string{"--no-wait"}, "--no-wait goes with a one-shot PROMPT"},
		{"task list name with newline", []string{"--task-list", "a\nb", "hi"}, "--task-list: the task list name"},
		{"task list name too long", []string{"--task-list", strings.Repeat("x", 101), "hi"}, "at most 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, dir, "", tt.args...)
			if code != ExitUsage || out != "" || !strings.Contains(errs, tt.want) {
				t.Fatalf("exit %d out %q err %q, want usage error %q", code, out, errs, tt.want)
			}
		})
	}
	code, out, _ := runCLI(t, "", "", "--help")
	if code != 0 || !strings.Contains(out, "--task-list") || !strings.Contains(out, "--no-wait") {
		t.Fatalf("--help lacks the job and task flags:\n%s", out)
	}
}

func TestOneShotWaitsForBackgroundJobs(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "sleep 0.2; echo tests passed", "background": true})}},
		fakemodel.Reply{Text: "Tests are running."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"exit code 0", "tests passed", "run the tests"}}, Text: "All tests passed."},
	)
	work := t.TempDir()
	code, out, errs := runCLI(t, work, "", "--allow", "bash", "--output", "json", "run the tests")
	if code != 0 {
		t.Fatalf("exit %d err %q", code, errs)
	}
	var results []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		results = append(results, m)
	}
	if len(results) != 2 || results[0]["text"] != "Tests are running." || results[1]["text"] != "All tests passed." || results[1]["background"] != true {
		t.Fatalf("results %v", results)
	}
	if !strings.Contains(errs, "waiting for background jobs") {
		t.Errorf("stderr does not say it waits: %q", errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}

	// Text mode tells when the job ended.
	model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "exit 4", "background": true})}},
		fakemodel.Reply{Text: "started"},
		fakemodel.Reply{Text: "it failed with 4"},
	)
	code, out, errs = runCLI(t, work, "", "--allow", "bash", "go")
	if code != 0 || !strings.Contains(errs, "background job j1 ended: exit code 4") || !strings.Contains(out, "it failed with 4") {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
}

func TestOneShotNoWaitStopsJobs(t *testing.T) {
	isolate(t)
	srv := model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo $$ > pid; exec sleep 60", "background": true})}},
		fakemodel.Reply{Text: "Server started."},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	code, out, errs := runCLI(t, work, "", "--session-db", db, "--allow", "bash", "--no-wait", "--output", "json", "start the server")
	if code != 0 {
		t.Fatalf("exit %d err %q", code, errs)
	}
	var res struct {
		Session string `json:"session"`
		Text    string `json:"text"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Text != "Server started." {
		t.Fatalf("output %q: %v", out, err)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	// The log says the job was stopped, so the session has nothing to
	// review, and names its process, which is gone.
	code, out, errs = runCLI(t, work, "", "--session-db", db, "--export", res.Session)
	if code != 0 || !strings.Contains(out, `"stopped":"the agent was closed"`) {
		t.Fatalf("export: exit %d err %q:\n%s", code, errs, out)
	}
	var pid int
	for _, line := range strings.Split(out, "\n") {
		var e struct {
			Type string
			Data struct{ PID int }
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "job_started" {
			pid = e.Data.PID
		}
	}
	if pid <= 0 {
		t.Fatalf("no job_started with a pid in the log:\n%s", out)
	}
	if syscall.Kill(pid, 0) == nil && !zombie(pid) {
		syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("the job's process %d outlived the run", pid)
	}
	code, out, _ = runCLI(t, work, "", "--session-db", db, "--recovery-info", res.Session)
	if code != 0 || !strings.Contains(out, `"hazards": []`) {
		t.Fatalf("recovery info %s", out)
	}
}

// zombie reports whether pid is a zombie (exited, waiting to be reaped).
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

func TestSessionInfoShowsTasks(t *testing.T) {
	isolate(t)
	setTasks := func(id string, texts ...string) fakemodel.ToolCall {
		var tasks []map[string]string
		for _, x := range texts {
			tasks = append(tasks, map[string]string{"text": x})
		}
		return toolCall(id, "todo", map[string]any{"action": "set", "tasks": tasks})
	}
	model(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{setTasks("t1", "write code", "test it")}},
		fakemodel.Reply{Text: "planned privately"},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{setTasks("t2", "release")}},
		fakemodel.Reply{Text: "planned together"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	var ids []string
	for _, args := range [][]string{{"plan"}, {"--task-list", "team", "plan together"}} {
		code, out, errs := runCLI(t, work, "", append([]string{"--session-db", db, "--output", "json"}, args...)...)
		var res struct{ Session string }
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("%v: exit %d out %q err %q", args, code, out, errs)
		}
		ids = append(ids, res.Session)
	}
	type info struct {
		TaskList string `json:"task_list"`
		Tasks    []struct {
			ID, Text, Status string
		} `json:"tasks"`
	}
	tests := []struct {
		args     []string
		list     string
		texts    string
		noTasks  bool
		sessions int
	}{
		{args: []string{"--session-info", ids[0]}, texts: "write code,test it"},
		{args: []string{"--task-list", "team", "--session-info", ids[1]}, list: "team", texts: "release"},
		{args: []string{"--session-info", ids[1]}, noTasks: true}, // it used the shared list, not a private one
		{args: []string{"--task-list", "other", "--session-info", ids[0]}, list: "other", noTasks: true},
	}
	for _, tt := range tests {
		code, out, errs := runCLI(t, work, "", append([]string{"--session-db", db}, tt.args...)...)
		var got info
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
			t.Fatalf("%v: exit %d err %q out %q", tt.args, code, errs, out)
		}
		var texts []string
		for _, task := range got.Tasks {
			texts = append(texts, task.Text)
			if task.Status != "pending" || task.ID == "" {
				t.Errorf("%v: task %+v", tt.args, task)
			}
		}
		if got.TaskList != tt.list || strings.Join(texts, ",") != tt.texts || got.Tasks == nil || !strings.Contains(out, `"tasks": [`) {
			t.Errorf("%v: %s", tt.args, out)
		}
	}
	// Task lists are not sessions.
	code, out, _ := runCLI(t, work, "", "--session-db", db, "--sessions")
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("--sessions lists %s", out)
	}
}
