package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/cli"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/server/servecmd"
)

// The test binary doubles as lite-agent: with LITE_AGENT_TEST_MAIN set it
// runs main, so these tests drive the real command in real processes.
func TestMain(m *testing.M) {
	if os.Getenv("LITE_AGENT_TEST_MAIN") == "1" {
		os.Args = append([]string{"lite-agent"}, os.Args[1:]...)
		if len(os.Args) > 1 && os.Args[1] == "serve" {
			// lite-agent hands serve to lite-agent-serve installed beside
			// it (TestServeHandedToLiteAgentServe builds both); the test
			// binary links the server in as lite-agent-serve does.
			os.Exit(cli.Command(&cli.Linked{Serving: servecmd.New}))
		}
		main()
		return
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *bytes.Buffer
}

// start runs lite-agent with args in workdir against the fake model.
func start(t testing.TB, srv *fakemodel.Server, workdir string, args ...string) *proc {
	t.Helper()
	return startEnv(t, srv, workdir, nil, args...)
}

// startEnv is start with extra environment variables.
func startEnv(t testing.TB, srv *fakemodel.Server, workdir string, env []string, args ...string) *proc {
	t.Helper()
	return startIn(t, srv, workdir, nil, env, args...)
}

// startIn is startEnv with stdin.
func startIn(t testing.TB, srv *fakemodel.Server, workdir string, stdin io.Reader, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--workdir", workdir}, args...)...)
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "LITE_AGENT_TEST_MAIN=1", "ANTHROPIC_API_KEY=test-key", "OPENAI_API_KEY=",
		"HOME="+t.TempDir(), "XDG_STATE_HOME=", "XDG_CONFIG_HOME="+configHome)
	cmd.Env = append(cmd.Env, env...)
	if srv != nil {
		cmd.Env = append(cmd.Env, "ANTHROPIC_BASE_URL="+srv.URL())
	}
	p := &proc{cmd: cmd, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

// startInput is startEnv with input as the process's stdin.
func startInput(t testing.TB, srv *fakemodel.Server, workdir string, env []string, input string, args ...string) *proc {
	t.Helper()
	return startIn(t, srv, workdir, strings.NewReader(input), env, args...)
}

// run runs lite-agent to completion and returns its exit status.
func run(t testing.TB, srv *fakemodel.Server, workdir string, args ...string) (int, string, string) {
	t.Helper()
	return runEnv(t, srv, workdir, nil, args...)
}

// runEnv is run with extra environment variables.
func runEnv(t testing.TB, srv *fakemodel.Server, workdir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	p := startEnv(t, srv, workdir, env, args...)
	err := p.cmd.Wait()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, p.stdout.String(), p.stderr.String()
}

func startModel(t testing.TB, replies ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	srv, err := fakemodel.Start(&fakemodel.Script{Replies: replies})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func toolCall(id, name string, input any) fakemodel.ToolCall {
	b, _ := json.Marshal(input)
	return fakemodel.ToolCall{ID: id, Name: name, Input: b}
}

// waitFor polls fn until it is true or the deadline passes.
func waitFor(t testing.TB, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type info struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Hazards []struct {
		Token  string   `json:"token"`
		Tool   string   `json:"tool"`
		CallID string   `json:"call_id"`
		Paths  []string `json:"paths"`
	} `json:"hazards"`
}

func sessionInfo(t testing.TB, work, db, id string) info {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--session-info", id)
	if code != 0 {
		t.Fatalf("--session-info: %d %s", code, errs)
	}
	var in info
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("--session-info output %q: %v", out, err)
	}
	return in
}

func onlySession(t testing.TB, work, db string) string {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--sessions")
	var list []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("--sessions: %d %q %q", code, out, errs)
	}
	return list[0].ID
}

// firstCheckpoint returns the seq of session id's first checkpoint, as
// --checkpoints prints it.
func firstCheckpoint(t testing.TB, work, db, id string) string {
	t.Helper()
	code, out, errs := run(t, nil, work, "--session-db", db, "--checkpoints", id)
	var cps []struct{ Seq int64 }
	if code != 0 || json.Unmarshal([]byte(out), &cps) != nil || len(cps) == 0 {
		t.Fatalf("--checkpoints: %d %q %q", code, out, errs)
	}
	return strconv.FormatInt(cps[0].Seq, 10)
}

// TestKillMidToolLeavesHazard: a SIGKILL while bash runs leaves a hazard
// that inspection shows, resume refuses, and acknowledgement clears without
// re-running the tool.
func TestKillMidToolLeavesHazard(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo SECRET-TOOL-OUTPUT; echo $$ > tool.pid; touch started; sleep 60"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"b1"}, BodyContains: []string{"outcome of this tool call is unknown"}, LastUserContains: []string{"carry on"}}, Text: "carried on"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	p := start(t, srv, work, "--session-db", db, "--allow", "bash", "run the slow thing")
	waitFor(t, "the tool to start", func() bool { _, err := os.Stat(filepath.Join(work, "started")); return err == nil })
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	// The tool's process group outlives lite-agent: stop it.
	if b, err := os.ReadFile(filepath.Join(work, "tool.pid")); err == nil {
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
			t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) })
		}
	}

	id := onlySession(t, work, db)
	in := sessionInfo(t, work, db, id)
	if len(in.Hazards) != 1 || in.Hazards[0].Tool != "bash" || in.Hazards[0].CallID != "b1" {
		t.Fatalf("--session-info hazards: %+v", in)
	}
	code, out, errs := run(t, nil, work, "--session-db", db, "--recovery-info", id)
	if code != 0 || !strings.Contains(out, in.Hazards[0].Token) || strings.Contains(out, "SECRET-TOOL-OUTPUT") || strings.Contains(out, "run the slow thing") {
		t.Fatalf("--recovery-info: %d %q %q", code, out, errs)
	}
	code, _, errs = run(t, srv, work, "--session-db", db, "--resume", id, "carry on")
	if code != 3 || !strings.Contains(errs, "--recovery-info") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("resume with a hazard: exit %d, stderr %q", code, errs)
	}
	if len(srv.Requests()) != 1 {
		t.Fatal("a refused resume contacted the model")
	}
	code, out, errs = run(t, srv, work, "--session-db", db, "--resume", id, "--acknowledge", in.Hazards[0].Token, "carry on")
	if code != 0 || !strings.Contains(out, "carried on") {
		t.Fatalf("resume after acknowledging: %d %q %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
	if in := sessionInfo(t, work, db, id); len(in.Hazards) != 0 || in.Status != "completed" {
		t.Fatalf("after acknowledging: %+v", in)
	}
}

// TestSecondWriterGetsConflict: two processes on one session; the one that
// comes second while the first runs its turn is refused before it writes
// anything, with exit status 4 and a message naming the running process
// (the turn's lease), and the log stays whole.
func TestSecondWriterGetsConflict(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{Text: "first"},
		fakemodel.Reply{Text: "slow answer", DelayMS: 1500},
		fakemodel.Reply{Text: "fast answer"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "start"); code != 0 {
		t.Fatal(errs)
	}
	id := onlySession(t, work, db)
	slow := start(t, srv, work, "--session-db", db, "--resume", id, "slow one")
	waitFor(t, "the slow request", func() bool { return len(srv.Requests()) >= 2 })
	fastCode, _, fastErr := run(t, srv, work, "--session-db", db, "--resume", id, "fast one")
	slow.cmd.Wait()
	slowCode := slow.cmd.ProcessState.ExitCode()
	if fastCode != 4 || slowCode != 0 {
		t.Fatalf("exit codes fast %d (%s), slow %d (%s); want 4 and 0", fastCode, fastErr, slowCode, slow.stderr)
	}
	if want := fmt.Sprintf("running now in process %d", slow.cmd.Process.Pid); !strings.Contains(fastErr, want) {
		t.Fatalf("conflict message %q does not say %q", fastErr, want)
	}
	code, out, _ := run(t, nil, work, "--session-db", db, "--export", id)
	if code != 0 {
		t.Fatal("export failed")
	}
	var last int64
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if i == 0 && strings.HasPrefix(line, `{"v":1,"export":`) {
			continue // the export's header line
		}
		var e struct{ Seq int64 }
		json.Unmarshal([]byte(line), &e)
		if e.Seq != last+1 {
			t.Fatalf("log has a gap or interleaving at %d after %d", e.Seq, last)
		}
		last = e.Seq
	}
}

// TestKillWhileBackgroundJobRuns: lite-agent dies (SIGKILL) while a
// background job it started still runs; the job is then an interrupted
// outcome like a tool cut off: shown, refused on resume, acknowledged.
func TestKillWhileBackgroundJobRuns(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "touch job-started; sleep 60", "background": true})}},
		fakemodel.Reply{Text: "The job runs in the background."},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"after the crash"}}, Text: "noted"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	p := start(t, srv, work, "--session-db", db, "--allow", "bash", "start the long job")
	waitFor(t, "the job to start", func() bool { _, err := os.Stat(filepath.Join(work, "job-started")); return err == nil })
	waitFor(t, "the turn to end", func() bool { return len(srv.Requests()) >= 2 })
	time.Sleep(200 * time.Millisecond) // let the turn's last events land
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	id := onlySession(t, work, db)
	// The job outlived lite-agent (it runs in its own session): stop it.
	_, exported, _ := run(t, nil, work, "--session-db", db, "--export", id)
	for _, line := range strings.Split(exported, "\n") {
		var e struct {
			Type string
			Data struct{ PID int }
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "job_started" && e.Data.PID > 0 {
			t.Cleanup(func() { syscall.Kill(-e.Data.PID, syscall.SIGKILL) })
		}
	}
	in := sessionInfo(t, work, db, id)
	if len(in.Hazards) != 1 || !strings.Contains(in.Hazards[0].Tool, "background job") {
		t.Fatalf("hazards after the kill: %+v", in.Hazards)
	}
	code, _, errs := run(t, srv, work, "--session-db", db, "--resume", id, "after the crash")
	if code != 3 || !strings.Contains(errs, "--recovery-info") {
		t.Fatalf("resume with a job hazard: exit %d, %q", code, errs)
	}
	code, out, errs := run(t, srv, work, "--session-db", db, "--resume", id, "--acknowledge", in.Hazards[0].Token, "--no-wait", "after the crash")
	if code != 0 || !strings.Contains(out, "noted") {
		t.Fatalf("after acknowledging: %d %q %q", code, out, errs)
	}
	if err := srv.Err(); err != nil {
		t.Fatal(err)
	}
}
