// Package todo is the todo tool: a task list the model keeps while it works
// (items with an id, a text and a status: pending, in_progress or done), so
// that long work stays on track and the user can follow it.
//
// The tool only reads and writes the list, never files, so it needs no
// approval. The list itself is kept by a Store; the agent's store is
// durable (a log of its own in the session store), private to a session by
// default or shared by name between sessions.
package todo

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// Store keeps the task list the tool works on.
type Store interface {
	// Load returns the list as it is now. A list nobody wrote yet is
	// empty, not an error.
	Load(ctx context.Context) (session.TaskList, error)
	// Update applies u to the latest list and stores the result durably,
	// retrying when another writer changed the list meanwhile, so that no
	// concurrent update is lost. It returns the list after u. An update
	// that is not valid against the list is an error worded for the model
	// (see session.UpdateTasks); nothing is stored then.
	Update(ctx context.Context, u session.TasksUpdated) (session.TaskList, error)
}

//go:embed todo.md
var description string

const schema = `{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["read", "set", "update"], "description": "read: show the list. set: replace the whole list with tasks. update: change the tasks given (by id) or add them, and drop the ids in remove; other tasks stay as they are. Default: set when tasks are given, else read."},
    "tasks": {
      "type": "array",
      "description": "The tasks to set, change or add.",
      "items": {
        "type": "object",
        "properties": {
          "id": {"type": "string", "description": "The task's id; leave it out for a new task to get the next number."},
          "text": {"type": "string", "description": "What to do, in one short line. For update, leave it out to keep the text."},
          "status": {"type": "string", "enum": ["pending", "in_progress", "done"], "description": "The task's status. For update, leave it out to keep the status; new tasks default to pending."}
        }
      }
    },
    "remove": {"type": "array", "items": {"type": "string"}, "description": "With update: ids of tasks to drop from the list."}
  },
  "additionalProperties": false
}`

// Tool is the todo tool over a Store.
type Tool struct {
	Store Store
}

// Spec implements tool.Tool. The kind is read: the tool changes no file.
func (t Tool) Spec() tool.Spec {
	return tool.Spec{Name: "todo", Description: description, InputSchema: json.RawMessage(schema), Kind: tool.KindRead}
}

type input struct {
	Action string     `json:"action"`
	Tasks  []taskIn   `json:"tasks"`
	Remove []flexText `json:"remove"`
}

type taskIn struct {
	ID     flexText `json:"id"`
	Text   string   `json:"text"`
	Status string   `json:"status"`
}

// flexText is a string that models sometimes send as a number (an id).
type flexText string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexText(s)
		return nil
	}
	if string(b) == "null" {
		*f = ""
		return nil
	}
	if _, err := strconv.ParseFloat(string(b), 64); err != nil {
		return fmt.Errorf("%s is not a string or a number", b)
	}
	*f = flexText(b)
	return nil
}

// Run implements tool.Tool.
func (t Tool) Run(ctx context.Context, call tool.Call) tool.Result {
	if t.Store == nil {
		return tool.Errorf("no task list is available here")
	}
	in, err := parse(call.Input)
	if err != nil {
		return tool.Errorf("invalid input: %v; send {\"action\": \"read\"}, {\"action\": \"set\", \"tasks\": [{\"text\": …}]} or {\"action\": \"update\", \"tasks\": [{\"id\": …, \"status\": …}]}", err)
	}
	action := strings.ToLower(strings.TrimSpace(in.Action))
	if action == "" {
		action = "read"
		if len(in.Tasks) > 0 {
			action = "set"
		}
	}
	var u session.TasksUpdated
	switch action {
	case "read", "get", "list":
		if len(in.Tasks) > 0 || len(in.Remove) > 0 {
			return tool.Errorf("read takes no tasks; use set to replace the list or update to change tasks")
		}
		l, err := t.Store.Load(ctx)
		if err != nil {
			return tool.Errorf("could not read the task list: %v", err)
		}
		return tool.Result{Output: Format(l)}
	case "set", "replace", "write":
		if len(in.Remove) > 0 {
			return tool.Errorf("set replaces the whole list, so remove does not apply; leave the tasks out instead")
		}
		u.Replace = true
	case "update", "add":
		if len(in.Tasks) == 0 && len(in.Remove) == 0 {
			return tool.Errorf("update needs tasks to change or add, or ids to remove")
		}
	default:
		return tool.Errorf("unknown action %q; use read, set or update", in.Action)
	}
	for _, ti := range in.Tasks {
		u.Tasks = append(u.Tasks, session.Task{ID: string(ti.ID), Text: ti.Text, Status: ti.Status})
	}
	for _, r := range in.Remove {
		u.Remove = append(u.Remove, string(r))
	}
	l, err := t.Store.Update(ctx, u)
	if err != nil {
		return tool.Errorf("the task list was not changed: %v", err)
	}
	return tool.Result{Output: Format(l)}
}

func parse(raw json.RawMessage) (input, error) {
	var in input
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return in, nil
	}
	if trimmed[0] != '{' {
		return in, errors.New("expected a JSON object")
	}
	err := json.Unmarshal(trimmed, &in)
	return in, err
}

// Format shows a list as the model and the user read it: a heading with
// counts, then one line per task: "[x]" done, "[~]" in progress, "[ ]"
// pending.
func Format(l session.TaskList) string {
	var b strings.Builder
	if l.Shared() {
		fmt.Fprintf(&b, "Task list %q (shared with other sessions of this workspace)", l.Name)
	} else {
		b.WriteString("Task list")
	}
	if len(l.Tasks) == 0 {
		b.WriteString(": empty.")
		return b.String()
	}
	pending, active, done := l.Counts()
	fmt.Fprintf(&b, ": %d done, %d in progress, %d pending\n", done, active, pending)
	for _, t := range l.Tasks {
		mark := "[ ]"
		switch t.Status {
		case session.TaskDone:
			mark = "[x]"
		case session.TaskInProgress:
			mark = "[~]"
		}
		fmt.Fprintf(&b, "%s %s. %s\n", mark, t.ID, t.Text)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
