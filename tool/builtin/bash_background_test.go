package builtin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/tool"
)

// fakeRunner is a JobRunner that keeps the jobs it adopts, or refuses them.
type fakeRunner struct {
	mu     sync.Mutex
	jobs   []*Job
	refuse error
}

func (r *fakeRunner) Adopt(ctx context.Context, call tool.Call, j *Job) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.jobs = append(r.jobs, j)
	if r.refuse != nil {
		return "", r.refuse
	}
	return fmt.Sprintf("j%d", len(r.jobs)), nil
}

// only returns the one job adopted.
func (r *fakeRunner) only(t testing.TB) *Job {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.jobs) != 1 {
		t.Fatalf("%d jobs adopted, want 1", len(r.jobs))
	}
	return r.jobs[0]
}

// waitDone waits for a job to end, stopping it after a bound.
func waitDone(t testing.TB, j *Job) {
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
		wantState  JobState
		wantOutput string
	}{
		{name: "exit code", command: "echo building; echo warn >&2; exit 3",
			wantState: JobState{ExitCode: 3, Note: "[exit code 3]"}, wantOutput: "building\nwarn\n"},
		{name: "success", command: "printf done",
			wantState: JobState{ExitCode: 0, Note: "[exit code 0]"}, wantOutput: "done"},
		{name: "stopped", command: "echo $$ > pid; sleep 60 & echo $! > child; wait", stop: true,
			wantState: JobState{ExitCode: -1, Signal: "terminated", Stopped: "stopped by the test", Note: "[killed by signal terminated]"}},
		{name: "SIGTERM ignored", command: "trap '' TERM; echo $$ > pid; (trap '' TERM; exec sleep 60) & echo $! > child; wait", stop: true,
			wantState: JobState{ExitCode: -1, Signal: "killed", Stopped: "stopped by the test", Note: "[killed by signal killed]"}},
		{name: "timeout", command: "echo $$ > pid; sleep 60 & echo $! > child; wait", timeout: "0.5",
			wantState: JobState{ExitCode: -1, Signal: "terminated", Stopped: "timed out after 500ms", Note: "[killed by signal terminated]"}},
		{name: "leftovers stopped", command: "sleep 60 & echo $! > child; echo $$ > pid; echo bye",
			wantState: JobState{ExitCode: 0, Note: "[exit code 0]"}, wantOutput: "bye\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkdir(t)
			r := &fakeRunner{}
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
			j := r.only(t)
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

	r := &fakeRunner{refuse: errors.New("agent closed")}
	got = w.call(t, Bash{Jobs: r, Grace: 100 * time.Millisecond}, `{"command": "sleep 60", "background": true}`)
	check(t, "refused", got, true, []string{"could not be started, so it was stopped: agent closed"})
	j := r.only(t)
	select {
	case <-j.Done():
	default:
		t.Fatal("Run returned before the refused job ended")
	}
	if groupAlive(j.PID()) {
		syscall.Kill(-j.PID(), syscall.SIGKILL)
		t.Errorf("a refused job's process group %d is still running", j.PID())
	}
}

func TestBashBackgroundOutputWhileRunning(t *testing.T) {
	w := newWorkdir(t)
	r := &fakeRunner{}
	got := w.call(t, Bash{Jobs: r, Grace: 100 * time.Millisecond}, `{"command": "echo first; echo $$ > pid; sleep 60", "background": true}`)
	check(t, "start", got, false, []string{"j1"})
	j := r.only(t)
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

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		max    int
		writes []string
		n      int
		want   string
	}{
		{max: 10, writes: []string{"abc"}, want: "abc"},
		{max: 10, writes: []string{"0123456789abc"}, want: "3456789abc"},
		{max: 4, writes: []string{"ab", "cd", "ef", "gh", "ij"}, want: "ghij"},
		{max: 10, writes: []string{"hello world"}, n: 5, want: "world"},
		{max: 10, writes: []string{"ééééé"}, n: 3, want: "é"}, // no half character
	}
	for _, tt := range tests {
		b := &tailBuffer{max: tt.max}
		var total int
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			total += len(w)
		}
		got, n := b.tail(tt.n)
		if got != tt.want || n != int64(total) {
			t.Errorf("max %d writes %q tail(%d) = %q, %d; want %q, %d", tt.max, tt.writes, tt.n, got, n, tt.want, total)
		}
	}
}
