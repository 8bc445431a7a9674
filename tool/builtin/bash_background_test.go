package builtin

import (
	"context"
	"errors"
	"fmt"
	"github.com/lite-agent/lite-agent/jobs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testOwner owns the jobs of one test session in a real jobs.Table.
type testOwner struct{ started int }

func (*testOwner) SessionID() string                                   { return "s1" }
func (o *testOwner) JobsStarted() int                                  { return o.started }
func (*testOwner) Goal() string                                        { return "" }
func (*testOwner) JobsEnded(ctx context.Context, js []*jobs.Job) error { return nil }

// jobTable returns a job table, shut and waited for when the test ends,
// and the starter of a test session's jobs.
func jobTable(t testing.TB) (*jobs.Table, *jobs.Starter) {
	t.Helper()
	tab := jobs.New(nil)
	t.Cleanup(tab.Close)
	return tab, tab.For(&testOwner{})
}

// onlyJob returns the one job the table holds.
func onlyJob(t testing.TB, tab *jobs.Table) *jobs.Job {
	t.Helper()
	all := tab.All()
	if len(all) != 1 {
		t.Fatalf("%d jobs started, want 1", len(all))
	}
	return all[0]
}

// waitDone waits for a job to end, stopping it after a bound.
func waitDone(t testing.TB, j *jobs.Job) {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(20 * time.Second):
		j.Stop("test bound")
		<-j.Done()
		t.Fatal("the job did not end")
	}
}

func TestBashBackground(t *testing.T) {
	tests := []struct {
		name       string
		command    string
		timeout    string
		stop       bool
		wantState  jobs.State
		wantOutput string
	}{
		{name: "exit code", command: "echo building; echo warn >&2; exit 3",
			wantState: jobs.State{ExitCode: 3, Note: "[exit code 3]"}, wantOutput: "building\nwarn\n"},
		{name: "success", command: "printf done",
			wantState: jobs.State{ExitCode: 0, Note: "[exit code 0]"}, wantOutput: "done"},
		{name: "stopped", command: "echo $$ > pid; sleep 60 & echo $! > child; wait", stop: true,
			wantState: jobs.State{ExitCode: -1, Signal: "terminated", Stopped: "stopped by the test", Note: "[killed by signal terminated]"}},
		{name: "SIGTERM ignored", command: "trap '' TERM; echo $$ > pid; (trap '' TERM; exec sleep 60) & echo $! > child; wait", stop: true,
			wantState: jobs.State{ExitCode: -1, Signal: "killed", Stopped: "stopped by the test", Note: "[killed by signal killed]"}},
		{name: "timeout", command: "echo $$ > pid; sleep 60 & echo $! > child; wait", timeout: "0.5",
			wantState: jobs.State{ExitCode: -1, Signal: "terminated", Stopped: "timed out after 500ms", Note: "[killed by signal terminated]"}},
		{name: "leftovers stopped", command: "sleep 60 & echo $! > child; echo $$ > pid; echo bye",
			wantState: jobs.State{ExitCode: 0, Note: "[exit code 0]"}, wantOutput: "bye\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkdir(t)
			tab, r := jobTable(t)
			input := fmt.Sprintf(`{"command": %q, "background": true}`, tt.command)
			if tt.timeout != "" {
				input = fmt.Sprintf(`{"command": %q, "background": "true", "timeout_seconds": %s}`, tt.command, tt.timeout)
			}
			ctx, cancel := contextWithCancel(t)
			got := Bash{Jobs: r, Grace: 200 * time.Millisecond}.Run(ctx, callFor(w, input))
			// The call's context does not stop a started job.
			cancel()
			check(t, tt.name, got, false, []string{"Started background job j1 (process group", "job_output"})
			if !got.Untracked {
				t.Error("result not marked Untracked")
			}
			j := onlyJob(t, tab)
			if j.Command() != tt.command || j.PID() <= 0 || j.Started().IsZero() {
				t.Errorf("job %q pid %d started %v", j.Command(), j.PID(), j.Started())
			}
			var pids []int
			if strings.Contains(tt.command, "> pid") {
				pids = append(pids, waitPID(t, filepath.Join(w.dir, "pid")), waitPID(t, filepath.Join(w.dir, "child")))
				if pids[0] != j.PID() {
					t.Errorf("the job's shell is pid %d, the job says %d", pids[0], j.PID())
				}
			}
			if tt.stop {
				if st := j.State(); !st.Running {
					t.Fatalf("state before Stop: %+v", st)
				}
				j.Stop("stopped by the test")
				j.Stop("a second reason is ignored")
			}
			waitDone(t, j)
			if st := j.State(); st != tt.wantState {
				t.Errorf("state %+v, want %+v", st, tt.wantState)
			}
			if out, total := j.Output(0); out != tt.wantOutput || total != int64(len(tt.wantOutput)) {
				t.Errorf("output %q (%d bytes), want %q", out, total, tt.wantOutput)
			}
			for _, pid := range pids {
				if !processGone(pid) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("process %d of the job is still running", pid)
				}
			}
		})
	}
}

func TestBashBackgroundRefused(t *testing.T) {
	w := newWorkdir(t)
	got := w.call(t, Bash{}, `{"command": "true", "background": true}`)
	check(t, "no runner", got, true, []string{"background jobs are not available here"})

	tab, r := jobTable(t)
	tab.Shut("the test shut it")
	got = w.call(t, Bash{Jobs: r, Grace: 100 * time.Millisecond}, `{"command": "echo $$ > pid; sleep 60", "background": true}`)
	check(t, "refused", got, true, []string{"could not be started: background jobs are shut down"})
	if len(tab.All()) != 0 {
		t.Errorf("a shut table holds %d jobs", len(tab.All()))
	}
	if _, err := os.Stat(filepath.Join(w.dir, "pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused job ran: %v", err)
	}
}

func TestBashBackgroundOutputWhileRunning(t *testing.T) {
	w := newWorkdir(t)
	tab, r := jobTable(t)
	got := w.call(t, Bash{Jobs: r, Grace: 100 * time.Millisecond}, `{"command": "echo first; echo $$ > pid; sleep 60", "background": true}`)
	check(t, "start", got, false, []string{"j1"})
	j := onlyJob(t, tab)
	waitPID(t, filepath.Join(w.dir, "pid"))
	var out string
	for range 500 {
		if out, _ = j.Output(100); out != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out != "first\n" || !j.State().Running {
		t.Errorf("output while running %q, state %+v", out, j.State())
	}
	j.Stop("done with it")
	waitDone(t, j)
}
