package session

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Event types of task lists and background jobs.
//
// A task list is a log of its own (SessionStarted.Kind KindTaskList):
// session_started → task_list_created → tasks_updated*. Folding it with
// TaskList.Apply gives the list.
//
// Background jobs are recorded in the log of the session that started them:
// job_started is appended while the tool call that started the job runs,
// job_finished when the agent learns that the job ended (or stopped it). A
// job_started without a job_finished whose job no live agent runs is a
// recovery hazard: the process that ran it died, and the job may still be
// running or may have done anything.
const (
	TypeTaskListCreated Type = "task_list_created"
	TypeTasksUpdated    Type = "tasks_updated"
	TypeJobStarted      Type = "job_started"
	TypeJobFinished     Type = "job_finished"
)

// KindTaskList is the SessionStarted.Kind of a task list's log. Listing
// conversations (kind "") never shows such logs.
const KindTaskList = "tasklist"

// Task statuses.
const (
	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskDone       = "done"
)

// Limits of a task list, so that one update stays a small event.
const (
	MaxTasks       = 100  // tasks in one list
	MaxTaskText    = 1000 // bytes of one task's text
	MaxTaskIDBytes = 40   // bytes of one task's id
)

// Task is one item of a task list.
type Task struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"` // TaskPending, TaskInProgress or TaskDone
}

// TaskListCreated follows session_started in a task list's log.
type TaskListCreated struct {
	// Name is the name of a shared list; "" for a session's private list.
	Name string `json:"name,omitempty"`
	// Session is the session a private list belongs to.
	Session string `json:"session,omitempty"`
}

// TasksUpdated is one change to a task list. With Replace the list becomes
// Tasks; otherwise each of Tasks changes the task with its ID (its text and
// status, where given) or, when no task has that ID, is added at the end, and
// the tasks named in Remove are dropped. Tasks not named stay as they are, so
// updates from several sessions to different tasks never undo one another.
type TasksUpdated struct {
	Replace bool     `json:"replace,omitempty"`
	Tasks   []Task   `json:"tasks,omitempty"`
	Remove  []string `json:"remove,omitempty"`
	// Session is the session whose agent made the change.
	Session string `json:"session,omitempty"`
}

// TaskList is a task list: the fold of its log. The zero value is an empty
// list.
type TaskList struct {
	ID        string    `json:"id"`             // the log's id
	Name      string    `json:"name,omitempty"` // a shared list's name; "" for a private list
	Session   string    `json:"session,omitempty"`
	Tasks     []Task    `json:"tasks"`
	Head      int64     `json:"head"` // the log's head: 0 before anything was written
	Updated   time.Time `json:"updated,omitzero"`
	UpdatedBy string    `json:"updated_by,omitempty"` // the session of the latest change
}

// Shared reports whether the list is a named list several sessions use.
func (l *TaskList) Shared() bool { return l.Name != "" }

// Apply folds one event of a task list's log into the list. Events must be
// applied in seq order; events that do not decode, updates that are not
// valid against the list, and other types are skipped (an update that was
// valid when it was appended is valid here, since it was checked against
// the same list).
func (l *TaskList) Apply(e Event) {
	if e.Seq > l.Head {
		l.Head = e.Seq
	}
	switch e.Type {
	case TypeSessionStarted:
		var p SessionStarted
		if e.Decode(&p) == nil && p.ID != "" {
			l.ID = p.ID
		}
	case TypeTaskListCreated:
		var p TaskListCreated
		if e.Decode(&p) == nil {
			l.Name, l.Session = p.Name, p.Session
		}
	case TypeTasksUpdated:
		var p TasksUpdated
		if e.Decode(&p) != nil {
			return
		}
		next, err := UpdateTasks(l.Tasks, p)
		if err != nil {
			return
		}
		l.Tasks, l.Updated, l.UpdatedBy = next, e.Time, p.Session
	}
}

// Counts returns how many tasks are pending, in progress and done.
func (l *TaskList) Counts() (pending, inProgress, done int) {
	for _, t := range l.Tasks {
		switch t.Status {
		case TaskInProgress:
			inProgress++
		case TaskDone:
			done++
		default:
			pending++
		}
	}
	return pending, inProgress, done
}

// UpdateTasks returns the list after update u, a new slice (list is not
// modified). An update that is not valid against list is an error worded
// for the model that sent it: a task without text, an unknown status, an id
// used twice, an update of an unknown id without text, a removal of an
// unknown id, or a list over MaxTasks. Tasks added without an id get the
// next free number.
func UpdateTasks(list []Task, u TasksUpdated) ([]Task, error) {
	var out []Task
	if !u.Replace {
		out = slices.Clone(list)
	}
	seen := map[string]bool{}
	for i, t := range u.Tasks {
		t.ID = strings.TrimSpace(t.ID)
		t.Text = strings.TrimSpace(t.Text)
		status, err := NormalizeTaskStatus(t.Status)
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", i+1, err)
		}
		t.Status = status
		if err := checkTask(t); err != nil {
			return nil, fmt.Errorf("task %d: %w", i+1, err)
		}
		if t.ID != "" {
			if seen[t.ID] {
				return nil, fmt.Errorf("task id %q is given twice; give each task once", t.ID)
			}
			seen[t.ID] = true
		}
		j := -1
		if t.ID != "" {
			j = slices.IndexFunc(out, func(o Task) bool { return o.ID == t.ID })
		}
		if j >= 0 {
			if t.Text != "" {
				out[j].Text = t.Text
			}
			if t.Status != "" {
				out[j].Status = t.Status
			}
			continue
		}
		if t.Text == "" {
			if u.Replace {
				return nil, fmt.Errorf("task %d has no text; every task of a new list needs its text", i+1)
			}
			return nil, fmt.Errorf("there is no task with id %q to update; read the list for the ids, or give a text to add it", t.ID)
		}
		if t.Status == "" {
			t.Status = TaskPending
		}
		out = append(out, t)
	}
	for _, id := range u.Remove {
		id = strings.TrimSpace(id)
		j := slices.IndexFunc(out, func(o Task) bool { return o.ID == id })
		if j < 0 {
			return nil, fmt.Errorf("there is no task with id %q to remove; read the list for the ids", id)
		}
		out = slices.Delete(out, j, j+1)
	}
	if len(out) > MaxTasks {
		return nil, fmt.Errorf("a task list holds at most %d tasks, this update leaves %d; remove done tasks or merge small ones", MaxTasks, len(out))
	}
	next := nextTaskNumber(out)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = strconv.Itoa(next)
			next++
		}
	}
	if out == nil {
		out = []Task{}
	}
	return out, nil
}

// NormalizeTaskStatus maps the spellings models use to a task status:
// "completed" is done, "in-progress" is in_progress, "todo" is pending. ""
// stays "" (unchanged, or pending for a new task).
func NormalizeTaskStatus(s string) (string, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	switch k {
	case "":
		return "", nil
	case TaskPending, "todo", "open", "not_started":
		return TaskPending, nil
	case TaskInProgress, "inprogress", "active", "doing", "started", "in_work":
		return TaskInProgress, nil
	case TaskDone, "completed", "complete", "finished", "closed":
		return TaskDone, nil
	}
	return "", fmt.Errorf("status %q is not one of %s, %s or %s", s, TaskPending, TaskInProgress, TaskDone)
}

var errControl = errors.New("control characters other than tab are not allowed")

func checkTask(t Task) error {
	switch {
	case len(t.ID) > MaxTaskIDBytes:
		return fmt.Errorf("id %q is longer than %d bytes; use short ids such as 1, 2, 3", t.ID, MaxTaskIDBytes)
	case len(t.Text) > MaxTaskText:
		return fmt.Errorf("text is %d bytes, over the limit of %d; keep tasks to one short line", len(t.Text), MaxTaskText)
	case !utf8.ValidString(t.ID) || !utf8.ValidString(t.Text):
		return errors.New("text is not valid UTF-8")
	}
	for _, s := range []string{t.ID, t.Text} {
		if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }) {
			return errControl
		}
	}
	return nil
}

// nextTaskNumber returns one more than the largest numeric id of list.
func nextTaskNumber(list []Task) int {
	n := 0
	for _, t := range list {
		if v, err := strconv.Atoi(t.ID); err == nil && v > n {
			n = v
		}
	}
	return n + 1
}

// JobStarted records that a tool call started a background job.
type JobStarted struct {
	Job     string `json:"job"` // the job's id within the session ("j1", "j2", …)
	CallID  string `json:"call_id"`
	Command string `json:"command"`
	// PID is the job's process id, which is also its process group id.
	PID int `json:"pid,omitempty"`
}

// JobFinished records how a background job ended.
type JobFinished struct {
	Job string `json:"job"`
	// ExitCode is the command's exit code; -1 when a signal ended it.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"` // the signal that ended it, if any
	// Stopped says why the agent stopped it ("timed out after 5m0s",
	// "stopped with job_stop", "the agent was closed"); "" when it ended by
	// itself.
	Stopped string `json:"stopped,omitempty"`
	// Output is the end of its output, capped.
	Output string `json:"output,omitempty"`
	// Started is when it started.
	Started time.Time `json:"started,omitzero"`
}
