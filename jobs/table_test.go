package jobs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/jobs"
	"github.com/lite-agent/lite-agent/tool"
	"github.com/lite-agent/lite-agent/tool/shell"
)

// owner is a session as a test sees it: it records every batch of ended
// jobs it is given, as its log would. Like the SDK's session it deals
// with ends only between turns: turn is held while a call starts jobs and
// logs them.
type owner struct {
	turn    sync.Mutex
	sid     string
	started int
	t       *jobs.Table
	mu      sync.Mutex
	ended   [][]string // job ids per JobsEnded call
	tell    []string   // the ids the model would be told about
}

func (o *owner) SessionID() string { return o.sid }
func (o *owner) JobsStarted() int  { return o.started }
func (o *owner) Goal() string      { return "make the build pass" }
func (o *owner) JobsEnded(ctx context.Context, js []*jobs.Job) error {
	o.turn.Lock()
	defer o.turn.Unlock()
	var ids []string
	for _, j := range js {
		ids = append(ids, j.ID())
	}
	tell := o.t.Recorded(o.t.Unrecorded(js))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, ids)
	for _, j := range tell {
		o.tell = append(o.tell, j.ID())
	}
	return nil
}

func start(t testing.TB, s *jobs.Starter, dir, line string) (string, error) {
	t.Helper()
	id, _, err := s.StartJob(t.Context(), tool.Call{ID: "c1"}, shell.Command{Line: line, Dir: dir, Env: os.Environ()}, 0, 200*time.Millisecond)
	return id, err
}

// TestTableLifecycle starts jobs for two sessions through a real table:
// ids continue after the log's count, ends reach their own owner once
// logged, a job the model saw end is not told again, and Wait
// returns once everything was dealt with.
func TestTableLifecycle(t *testing.T) {
	dir := t.TempDir()
	tab := jobs.New(nil)
	defer tab.Close()
	a := &owner{sid: "s1", started: 2, t: tab}
	b := &owner{sid: "s2", t: tab}
	sa, sb := tab.For(a), tab.For(b)
	a.turn.Lock()
	b.turn.Lock()

	id1, err := start(t, sa, dir, "echo one > one.txt")
	if err != nil || id1 != "j3" {
		t.Fatalf("first job of s1 = %q, %v; want j3 (the log has 2)", id1, err)
	}
	id2, err := start(t, sa, dir, "echo two")
	if err != nil || id2 != "j4" {
		t.Fatalf("second job of s1 = %q, %v; want j4", id2, err)
	}
	idb, err := start(t, sb, dir, "exit 3")
	if err != nil || idb != "j1" {
		t.Fatalf("first job of s2 = %q, %v; want j1", idb, err)
	}
	if got := tab.StartedBy("s1", "c1"); len(got) != 2 {
		t.Fatalf("StartedBy(s1) = %d jobs, want 2", len(got))
	}
	// The model reads j4's end before it is recorded.
	j4 := tab.Find("s1", "j4")
	<-j4.Done()
	tab.Seen(j4)
	tab.Logged(tab.StartedBy("s1", "c1")...)
	tab.Logged(tab.StartedBy("s2", "c1")...)
	a.turn.Unlock()
	b.turn.Unlock()

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := tab.Wait(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "one.txt")); err != nil || string(b) != "one\n" {
		t.Errorf("the job's output file: %q, %v", b, err)
	}
	a.mu.Lock()
	var gotA []string
	for _, ids := range a.ended {
		gotA = append(gotA, ids...)
	}
	slices.Sort(gotA)
	tellA := slices.Clone(a.tell)
	a.mu.Unlock()
	if !slices.Equal(gotA, []string{"j3", "j4"}) || !slices.Equal(tellA, []string{"j3"}) {
		t.Errorf("s1 was given %v and would tell %v; want [j3 j4] and [j3]", gotA, tellA)
	}
	b.mu.Lock()
	if len(b.ended) != 1 || !slices.Equal(b.ended[0], []string{"j1"}) {
		t.Errorf("s2 was given %v, want [[j1]]", b.ended)
	}
	b.mu.Unlock()
	if st := tab.Find("s2", "j1").State(); st.ExitCode != 3 || st.Running {
		t.Errorf("s2/j1 state %+v", st)
	}

	if tab.Running("s1", "j3") || tab.Running("s2", "j1") {
		t.Error("a job dealt with still counts as running")
	}
}

// TestTableShut stops a running job at Shut, refuses new ones, and hands
// back the jobs whose end is not dealt with; Wait then says so.
func TestTableShut(t *testing.T) {
	dir := t.TempDir()
	tab := jobs.New(nil)
	o := &owner{sid: "s1", t: tab}
	s := tab.For(o)
	if _, err := start(t, s, dir, "sleep 60"); err != nil {
		t.Fatal(err)
	}
	j := tab.Find("s1", "j1")
	if !j.State().Running || !tab.Running("s1", "j1") {
		t.Fatalf("state %+v", j.State())
	}
	waited := make(chan error, 1)
	go func() { waited <- tab.Wait(context.Background(), "s1") }()
	open := tab.Shut("the test shut it")
	if len(open) != 1 || open[0] != j {
		t.Fatalf("Shut returned %d jobs, want the running one", len(open))
	}
	if err := <-waited; !errors.Is(err, jobs.ErrClosed) {
		t.Errorf("Wait across Shut = %v, want ErrClosed", err)
	}
	tab.Close()
	if st := j.State(); st.Running || st.Stopped != "the test shut it" || st.Signal != "terminated" {
		t.Errorf("state after Close: %+v", st)
	}
	if _, err := start(t, s, dir, "true"); !errors.Is(err, jobs.ErrClosed) {
		t.Errorf("start after Shut = %v, want ErrClosed", err)
	}
	if shell.GroupAlive(j.PID()) {
		t.Errorf("process group %d outlived Close", j.PID())
	}
}

// TestRefuseAndDrop: a job whose start could not be logged is stopped and
// never reaches its owner; a deleted session's jobs are stopped and their
// ends are not recorded.
func TestRefuseAndDrop(t *testing.T) {
	dir := t.TempDir()
	tab := jobs.New(nil)
	defer tab.Close()
	o := &owner{sid: "s1", t: tab}
	s := tab.For(o)
	for range 2 {
		if _, err := start(t, s, dir, "sleep 60"); err != nil {
			t.Fatal(err)
		}
	}
	js := tab.StartedBy("s1", "c1")
	tab.Refuse("its start could not be recorded", js[0])
	tab.Logged(js[1])
	tab.Drop("s1", "its session was deleted")
	<-js[1].Done()
	if err := tab.Wait(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got := tab.Unrecorded(js); len(got) != 0 {
		t.Errorf("%d dropped jobs still to record", len(got))
	}
	if st := js[0].State(); st.Stopped != "its start could not be recorded" {
		t.Errorf("refused job state %+v", st)
	}
	if st := js[1].State(); st.Stopped != "its session was deleted" {
		t.Errorf("dropped job state %+v", st)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.tell) != 0 {
		t.Errorf("the owner would tell the model about %v", o.tell)
	}
}
