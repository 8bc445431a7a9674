package liteagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool/todo"
)

// Task lists are logs of their own in the agent's checkpointer, so every
// backend keeps them: session_started (kind session.KindTaskList), then
// task_list_created, then one tasks_updated event per change. A session's
// private list has the id PrivateTaskListID(session); a shared list has the
// id SharedTaskListID(namespace, name), so every agent of the workspace that
// names it finds the same log. Updates are optimistic: read the list, check
// the update against it, append at the head that was read; when another
// writer got there first (a *checkpoint.ConflictError) read again and retry.
// So concurrent updates, from any number of processes, are never lost.

// maxTaskListName bounds a shared task list's name.
const maxTaskListName = 100

// taskUpdateAttempts bounds the retries of one update under contention.
const taskUpdateAttempts = 100

// PrivateTaskListID returns the log id of session id's private task list.
func PrivateTaskListID(session string) string { return "tasks-" + session }

// SharedTaskListID returns the log id of the task list called name in
// namespace. It is derived from both, so lists of different workspaces never
// meet, and it is a valid id for every backend.
func SharedTaskListID(namespace, name string) string {
	sum := sha256.Sum256([]byte(namespace + "\x00" + name))
	return "tasks-shared-" + hex.EncodeToString(sum[:12])
}

// CheckTaskListName reports whether name can name a shared task list: 1 to
// 100 bytes of printable text, without leading or trailing space.
func CheckTaskListName(name string) error {
	switch {
	case name == "":
		return errors.New("the task list name is empty; give a name such as \"release\"")
	case len(name) > maxTaskListName:
		return fmt.Errorf("the task list name is %d bytes long; use at most %d", len(name), maxTaskListName)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("the task list name %q starts or ends with space; remove it", name)
	case strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }):
		return fmt.Errorf("the task list name %q has control or unprintable characters; use plain text", name)
	}
	return nil
}

// taskListOf returns the id of the list session sid uses, and its name if
// it is shared.
func (a *Agent) taskListOf(sid string) (id, name string) {
	if a.opts.TaskList != "" {
		return SharedTaskListID(a.namespace, a.opts.TaskList), a.opts.TaskList
	}
	return PrivateTaskListID(sid), ""
}

// sessionOrCurrent returns id, or the current session's id when id is "".
func (a *Agent) sessionOrCurrent(id string) (string, error) {
	if id != "" {
		return id, nil
	}
	if cur := a.SessionID(); cur != "" {
		return cur, nil
	}
	return "", ErrNoSession
}

// Tasks returns the task list session id works with: the shared list
// Options.TaskList names, or else the session's private list. id "" means
// the current session. A list nobody wrote yet is empty. It writes nothing
// and contacts no model, so it suits read-only inspection.
func (a *Agent) Tasks(ctx context.Context, id string) (*session.TaskList, error) {
	if err := a.open(); err != nil {
		return nil, err
	}
	sid, err := a.sessionOrCurrent(id)
	if err != nil && a.opts.TaskList == "" {
		return nil, err
	}
	listID, name := a.taskListOf(sid)
	l, err := a.readTaskList(ctx, listID)
	if err != nil {
		return nil, err
	}
	if l.Head == 0 {
		l.Name = name
	}
	return &l, nil
}

// UpdateTasks applies u to the task list session id works with (see Tasks;
// id "" means the current session, and may be used without one for a
// shared list) and returns the list after it. Updates
// from several agents and processes at once are all kept. An update that
// is not valid against the list (see session.UpdateTasks) changes nothing.
func (a *Agent) UpdateTasks(ctx context.Context, id string, u session.TasksUpdated) (*session.TaskList, error) {
	if err := a.open(); err != nil {
		return nil, err
	}
	sid, err := a.sessionOrCurrent(id)
	if err != nil && a.opts.TaskList == "" {
		return nil, err
	}
	l, err := a.updateTaskList(ctx, sid, u)
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// open returns ErrClosed once the agent is closed.
func (a *Agent) open() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.isClosed {
		return ErrClosed
	}
	return nil
}

// readTaskList folds a task list's whole log; an unknown list is empty.
func (a *Agent) readTaskList(ctx context.Context, id string) (session.TaskList, error) {
	l := session.TaskList{ID: id}
	for e, err := range a.store.Read(ctx, id, 1) {
		if errors.Is(err, checkpoint.ErrNotFound) {
			return session.TaskList{ID: id, Tasks: []session.Task{}}, nil
		}
		if err != nil {
			return l, fmt.Errorf("read task list %s: %w", id, err)
		}
		l.Apply(e)
	}
	if l.Tasks == nil {
		l.Tasks = []session.Task{}
	}
	return l, nil
}

// updateTaskList applies u to the list session sid uses, creating the list
// on first use, and retries on conflicts with other writers.
func (a *Agent) updateTaskList(ctx context.Context, sid string, u session.TasksUpdated) (session.TaskList, error) {
	id, name := a.taskListOf(sid)
	u.Session = sid
	for attempt := 1; ; attempt++ {
		l, err := a.readTaskList(ctx, id)
		if err != nil {
			return l, err
		}
		if _, err := session.UpdateTasks(l.Tasks, u); err != nil {
			return l, err
		}
		var events []session.Event
		if l.Head == 0 {
			created := session.TaskListCreated{Name: name}
			if name == "" {
				created.Session = sid
			}
			events = append(events,
				mustEvent(session.TypeSessionStarted, session.SessionStarted{ID: id, Kind: session.KindTaskList, Namespace: a.namespace, Workdir: a.root.Dir()}),
				mustEvent(session.TypeTaskListCreated, created))
		}
		events = append(events, mustEvent(session.TypeTasksUpdated, u))
		_, err = a.store.Append(ctx, id, l.Head, events)
		if err == nil {
			for i := range events {
				events[i].Seq = l.Head + int64(i) + 1
				l.Apply(events[i])
			}
			return l, nil
		}
		if !checkpoint.IsConflict(err) {
			return l, fmt.Errorf("update task list %s: %w", id, err)
		}
		if attempt == taskUpdateAttempts {
			return l, fmt.Errorf("update task list %s: %d attempts all met concurrent updates; try again: %w", id, attempt, err)
		}
		// Back off a little, at random, so that writers that keep meeting
		// spread out.
		pause := time.Duration(rand.Int64N(int64(min(attempt, 20))*int64(time.Millisecond) + 1))
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return l, ctx.Err()
		}
	}
}

// deleteTaskList removes a task list's log; an unknown list is not an error.
func (a *Agent) deleteTaskList(ctx context.Context, id string) error {
	if err := a.store.Delete(ctx, id); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("delete task list %s: %w", id, err)
	}
	return nil
}

// sessionTasks is the todo tool's store: the list of its session.
type sessionTasks struct{ s *Session }

var _ todo.Store = sessionTasks{}

func (t sessionTasks) Load(ctx context.Context) (session.TaskList, error) {
	l, err := t.s.Tasks(ctx)
	if err != nil {
		return session.TaskList{}, err
	}
	return *l, nil
}

func (t sessionTasks) Update(ctx context.Context, u session.TasksUpdated) (session.TaskList, error) {
	l, err := t.s.UpdateTasks(ctx, u)
	if err != nil {
		return session.TaskList{}, err
	}
	return *l, nil
}
