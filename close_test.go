package liteagent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
	"go.uber.org/goleak"
)

// proc is a process of the process table.
type proc struct {
	pid, ppid, pgrp int
	state           byte
}

// processes reads the process table from /proc.
func processes(t testing.TB) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no process table to check: %v", err)
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid pgrp ...", where comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		f := bytes.Fields(stat[i+1:])
		if i < 0 || len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		out = append(out, proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out
}

// live reports whether the process table holds p as a running process
// (not a zombie waiting to be reaped).
func (p proc) live() bool { return p.state != 'Z' && p.state != 'X' }

// leftovers returns the live processes that are children of this test
// process or members of one of the process groups.
func leftovers(t testing.TB, groups ...int) []proc {
	t.Helper()
	var out []proc
	for _, p := range processes(t) {
		if p.live() && (p.ppid == os.Getpid() || slices.Contains(groups, p.pgrp)) {
			out = append(out, p)
		}
	}
	return out
}

// processGone reports whether pid has exited (or is a zombie).
func processGone(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	f := bytes.Fields(stat[i+1:])
	return len(f) > 0 && (f[0][0] == 'Z' || f[0][0] == 'X')
}

// closeWithin closes the agent and fails the test if Close hangs.
func closeWithin(t testing.TB, a *liteagent.Agent) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Close = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

// firstDelta waits for the first streamed delta on updates.
func firstDelta(t testing.TB, updates <-chan liteagent.Update) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case u := <-updates:
			if u.Delta != nil {
				return
			}
		case <-timeout:
			t.Fatal("no delta was streamed")
		}
	}
}

func TestCloseStopsTurnAndJobProcessGroups(t *testing.T) {
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("sessions=%v", persist), func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			srv, p := startModel(t, "anthropic",
				fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{
					call("c1", "bash", map[string]any{"command": "echo $$ > a.pid; sleep 60 & echo $! > a.child; wait", "background": true}),
					// This one ignores SIGTERM, and so does its child: SIGKILL it is.
					call("c2", "bash", map[string]any{"command": "trap '' TERM; echo $$ > b.pid; (trap '' TERM; exec sleep 60) & echo $! > b.child; wait", "background": true}),
				}},
				fakemodel.Reply{Text: "both started"},
				fakemodel.Reply{Text: strings.Repeat("still talking ", 200), DeltaDelayMS: 20},
			)
			store := memory.New()
			opts := liteagent.Options{DisableSessions: !persist}
			if persist {
				opts.Checkpointer = store
			}
			a := newAgent(t, p, opts)
			if _, err := a.Send(t.Context(), "start two jobs"); err != nil {
				t.Fatal(err)
			}
			var groups, pids []int
			for _, name := range []string{"a", "b"} {
				pg, _ := strconv.Atoi(waitFile(t, filepath.Join(a.Workdir(), name+".pid")))
				child, _ := strconv.Atoi(waitFile(t, filepath.Join(a.Workdir(), name+".child")))
				groups, pids = append(groups, pg), append(pids, pg, child)
			}
			if left := leftovers(t, groups...); len(left) != 4 {
				t.Fatalf("before Close, the job processes are %+v, want 4", left)
			}
			// A foreground turn streams while Close comes.
			updates, _ := a.Subscribe()
			sent := make(chan error, 1)
			go func() { _, err := a.Send(context.Background(), "keep talking"); sent <- err }()
			firstDelta(t, updates)
			id := a.SessionID()
			closeWithin(t, a)
			if err := <-sent; err == nil {
				t.Fatal("the streaming turn succeeded although the agent was closed")
			}
			if left := leftovers(t, groups...); len(left) != 0 {
				t.Fatalf("processes left after Close: %+v", left)
			}
			for _, pid := range pids {
				if !processGone(pid) {
					t.Errorf("process %d outlived Close", pid)
				}
			}
			if err := a.Close(); err != nil {
				t.Fatalf("second Close = %v", err)
			}
			if _, err := a.WaitJobs(t.Context()); !errors.Is(err, liteagent.ErrClosed) && err != nil {
				t.Fatalf("WaitJobs after Close = %v", err)
			}
			if persist {
				events := eventsOf(t, newAgent(t, nil, liteagent.Options{Checkpointer: store, Workdir: a.Workdir()}), id)
				if got := typesOf(events); !strings.HasSuffix(got, "user_prompt turn_interrupted workspace_changed job_finished job_finished") {
					t.Fatalf("log ends: %s", got)
				}
				var fin session.JobFinished
				lastOf(t, events, session.TypeJobFinished, &fin)
				if fin.Stopped != "the agent was closed" || fin.Signal != "killed" {
					t.Errorf("job_finished %+v", fin)
				}
			}
			srv.Close()
			goleak.VerifyNone(t, ignore)
		})
	}
}

func TestCloseDuringCompletionTurn(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv, p := startModel(t, "openai",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "echo quick", "background": true})}},
		fakemodel.Reply{Text: "started"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"j1 finished", "the goal"}}, Text: strings.Repeat("thinking about it ", 200), DeltaDelayMS: 20},
	)
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	updates, _ := a.Subscribe()
	if _, err := a.Send(t.Context(), "the goal"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := a.WaitJobs(context.Background()); waited <- err }()
	// The completion turn's prompt, then its first delta.
	for u := range updates {
		var prompt session.UserPrompt
		if u.Event != nil && u.Event.Type == session.TypeUserPrompt && u.Event.Decode(&prompt) == nil && prompt.Background {
			break
		}
	}
	firstDelta(t, updates)
	id := a.SessionID()
	closeWithin(t, a)
	if err := <-waited; !errors.Is(err, liteagent.ErrClosed) {
		t.Fatalf("WaitJobs across Close = %v", err)
	}
	checkServer(t, srv)
	events := eventsOf(t, newAgent(t, nil, liteagent.Options{Checkpointer: store, Workdir: a.Workdir()}), id)
	if got := typesOf(events); !strings.HasSuffix(got, "turn_completed workspace_changed job_finished user_prompt turn_interrupted") {
		t.Fatalf("log ends: %s", got)
	}
	if left := leftovers(t); len(left) != 0 {
		t.Fatalf("processes left: %+v", left)
	}
	srv.Close()
	goleak.VerifyNone(t, ignore)
}

func TestDeleteSessionStopsItsJobs(t *testing.T) {
	_, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "echo $$ > pid; exec sleep 60", "background": true})}},
		fakemodel.Reply{Text: "started"},
	)
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	if _, err := a.Send(t.Context(), "start"); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(waitFile(t, filepath.Join(a.Workdir(), "pid")))
	if err := a.DeleteSession(t.Context(), a.SessionID()); err != nil {
		t.Fatal(err)
	}
	if res := waitJobs(t, a); len(res) != 0 {
		t.Fatalf("completion turns for a deleted session: %+v", res)
	}
	if !processGone(pid) {
		t.Fatalf("the deleted session's job %d still runs", pid)
	}
	if all, _ := store.List(t.Context(), "", checkpointListAll); len(all) != 0 {
		t.Fatalf("logs left after deleting the only session: %+v", all)
	}
}

var checkpointListAll = checkpoint.ListOptions{AllKinds: true}
