package liteagent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// eventsOf reads session id's log through the agent, so that it works with
// sessions off too.
func eventsOf(t testing.TB, a *liteagent.Agent, id string) []session.Event {
	t.Helper()
	var out []session.Event
	for e, err := range a.Events(context.Background(), id) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func typesOf(events []session.Event) string {
	var out []string
	for _, e := range events {
		out = append(out, string(e.Type))
	}
	return strings.Join(out, " ")
}

// lastOf decodes the last event of type ty.
func lastOf(t testing.TB, events []session.Event, ty session.Type, p any) {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == ty {
			if err := events[i].Decode(p); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no %s event in the log", ty)
}

// waitJobs waits for the agent's jobs and completion turns, bounded.
func waitJobs(t testing.TB, a *liteagent.Agent) []*liteagent.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := a.WaitJobs(ctx)
	if err != nil {
		t.Fatalf("WaitJobs = %v", err)
	}
	return res
}

func TestBackgroundJobCompletionTurn(t *testing.T) {
	const goal = "run the slow build and fix what fails"
	for _, kind := range providers {
		for _, persist := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/sessions=%v", kind, persist), func(t *testing.T) {
				srv, p := startModel(t, kind,
					fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "echo compiling; echo 'main.go:3: undefined: x' >&2; exit 3", "background": true})}},
					fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c1"}, BodyContains: []string{"Started background job j1"}}, Text: "The build runs in the background."},
					fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"Background job j1 finished: exit code 3", "main.go:3: undefined: x", goal}}, Text: "The build failed: x is undefined."},
				)
				opts := liteagent.Options{DisableSessions: !persist}
				if persist {
					opts.Checkpointer = memory.New()
				}
				a := newAgent(t, p, opts)
				res, err := a.Send(t.Context(), goal)
				if err != nil || res.Text != "The build runs in the background." {
					t.Fatalf("Send = %+v, %v", res, err)
				}
				// A user prompt in between must not replace the goal the job
				// carries: the completion turn names the prompt that started it.
				results := waitJobs(t, a)
				if len(results) != 1 || results[0].Text != "The build failed: x is undefined." || results[0].Session != a.SessionID() {
					t.Fatalf("completion results %+v", results)
				}
				checkServer(t, srv)
				events := eventsOf(t, a, a.SessionID())
				want := "session_started project_context user_prompt assistant_message tool_started workspace_scanned job_started workspace_changed tool_finished assistant_message turn_completed workspace_changed job_finished user_prompt assistant_message turn_completed"
				if got := typesOf(events); got != want {
					t.Fatalf("log:\n got %s\nwant %s", got, want)
				}
				var fin session.JobFinished
				lastOf(t, events, session.TypeJobFinished, &fin)
				if fin.Job != "j1" || fin.ExitCode != 3 || fin.Stopped != "" || !strings.Contains(fin.Output, "undefined: x") {
					t.Errorf("job_finished %+v", fin)
				}
				var prompt session.UserPrompt
				lastOf(t, events, session.TypeUserPrompt, &prompt)
				if !prompt.Background {
					t.Error("the completion prompt is not marked Background")
				}
				if persist {
					info := sessionState(t, a)
					if len(info.Checkpoints) != 1 || len(info.Hazards) != 0 {
						t.Errorf("checkpoints %+v hazards %+v: a completion prompt is no checkpoint", info.Checkpoints, info.Hazards)
					}
				}
				if jobs := a.Jobs(); len(jobs) != 1 || jobs[0].Running || jobs[0].ExitCode != 3 {
					t.Errorf("Jobs = %+v", jobs)
				}
			})
		}
	}
}

func TestJobEndingDuringTurnIsToldAfterIt(t *testing.T) {
	// The job ends while the model still streams its second answer; the
	// completion turn comes after that turn, and names the goal of the
	// prompt that started the job, not of the prompt sent meanwhile.
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "exit 0", "background": true})}},
		fakemodel.Reply{Text: strings.Repeat("waiting ", 20), DeltaDelayMS: 10},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"j1 finished: exit code 0", "first goal"}}, Text: "done"},
	)
	a := newAgent(t, p, liteagent.Options{})
	if _, err := a.Send(t.Context(), "first goal"); err != nil {
		t.Fatal(err)
	}
	if res := waitJobs(t, a); len(res) != 1 || res[0].Text != "done" {
		t.Fatalf("completion results %+v", res)
	}
	checkServer(t, srv)
	got := typesOf(eventsOf(t, a, a.SessionID()))
	if !strings.HasSuffix(got, "assistant_message turn_completed workspace_changed job_finished user_prompt assistant_message turn_completed") {
		t.Fatalf("log %s", got)
	}
}

func TestJobOutputAndStopNeedNoCompletionTurn(t *testing.T) {
	srv, p := startModel(t, "openai",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "echo serving; echo $$ > pid; exec sleep 60", "background": true})}},
		fakemodel.Reply{Text: "server started"},
		fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"check the server"}},
			ToolCalls: []fakemodel.ToolCall{call("c2", "job_output", map[string]any{"job_id": "j1"}), call("c3", "job_output", map[string]any{})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{"is running, for", "serving", "j1: still running: echo serving"}},
			ToolCalls: []fakemodel.ToolCall{call("c4", "job_stop", map[string]any{"job_id": 1}), call("c5", "job_stop", map[string]any{"job_id": "j9"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{BodyContains: []string{"stopped (stopped with job_stop); killed by signal terminated", `no background job \"j9\"`}}, Text: "stopped it"},
	)
	a := newAgent(t, p, liteagent.Options{})
	if _, err := a.Send(t.Context(), "start the server"); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(a.Workdir(), "pid"))
	waitRunning(t, a, "j1")
	if res, err := a.Send(t.Context(), "check the server, then stop it"); err != nil || res.Text != "stopped it" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	// The model saw the end: no completion turn (the script has no reply
	// for one), but the end is recorded.
	if res := waitJobs(t, a); len(res) != 0 {
		t.Fatalf("completion turns %+v", res)
	}
	checkServer(t, srv)
	events := eventsOf(t, a, a.SessionID())
	var fin session.JobFinished
	lastOf(t, events, session.TypeJobFinished, &fin)
	if fin.Stopped != "stopped with job_stop" || fin.Signal != "terminated" || fin.ExitCode != -1 {
		t.Errorf("job_finished %+v", fin)
	}
	if events[len(events)-1].Type != session.TypeJobFinished {
		t.Errorf("log ends %s", typesOf(events[len(events)-3:]))
	}
}

// waitFile waits for a command under test to write a file and a newline.
func waitFile(t testing.TB, name string) string {
	t.Helper()
	for range 2000 {
		if b, err := os.ReadFile(name); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s was not written", name)
	return ""
}

// waitRunning waits until the agent lists job id as running.
func waitRunning(t testing.TB, a *liteagent.Agent, id string) {
	t.Helper()
	for range 2000 {
		for _, j := range a.Jobs() {
			if j.ID == id && j.Running {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %s is not running", id)
}

// orphanSession writes the log a process leaves when it dies while a
// background job it started still runs.
func orphanSession(t testing.TB, a *liteagent.Agent, store *memory.Store) string {
	t.Helper()
	id := liteagent.NewSessionID()
	ns := a.Namespace()
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "deploy"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{
			{Type: session.BlockToolUse, ID: "c7", Name: "bash", Input: []byte(`{"command":"./deploy.sh","background":true}`)},
		}}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c7", Tool: "bash"}),
		session.MustNew(session.TypeJobStarted, session.JobStarted{Job: "j1", CallID: "c7", Command: "./deploy.sh", PID: 99999}),
		session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: "c7", Tool: "bash", Output: "Started background job j1"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: "deploying"}}}),
		session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{}),
	}
	if _, err := store.Append(context.Background(), id, 0, events); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOrphanJobIsHazardUntilAcknowledged(t *testing.T) {
	srv, p := startModel(t, "anthropic", fakemodel.Reply{Expect: &fakemodel.Expect{LastUserContains: []string{"status?"}}, Text: "checking"})
	store := memory.New()
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	id := orphanSession(t, a, store)
	info, err := a.SessionInfo(t.Context(), id)
	if err != nil || len(info.Hazards) != 1 || !strings.Contains(info.Hazards[0].Tool, "background job j1 (process group 99999): ./deploy.sh") || info.Hazards[0].CallID != "c7" {
		t.Fatalf("SessionInfo hazards %+v, %v", info, err)
	}
	if err := a.Resume(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	hz := a.Hazards()
	if len(hz) != 1 || hz[0].Token != info.Hazards[0].Token {
		t.Fatalf("Hazards %+v", hz)
	}
	var he *liteagent.HazardError
	if _, err := a.Send(t.Context(), "status?"); !errors.As(err, &he) {
		t.Fatalf("Send with an orphaned job = %v", err)
	}
	if err := a.Acknowledge(t.Context(), hz[0].Token); err != nil {
		t.Fatal(err)
	}
	if hz := a.Hazards(); len(hz) != 0 {
		t.Fatalf("hazards after acknowledging: %+v", hz)
	}
	if res, err := a.Send(t.Context(), "status?"); err != nil || res.Text != "checking" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	checkServer(t, srv)
	// The acknowledgement names the token only: the call has its result.
	events := eventsOf(t, a, id)
	var ack session.RecoveryAcknowledged
	lastOf(t, events, session.TypeRecoveryAcknowledged, &ack)
	if len(ack.Tokens) != 1 || len(ack.CallIDs) != 0 {
		t.Errorf("acknowledgement %+v", ack)
	}
	// A fresh agent reading the log agrees: nothing to review.
	b := newAgent(t, nil, liteagent.Options{Checkpointer: store, Workdir: a.Workdir()})
	if info, err := b.SessionInfo(t.Context(), id); err != nil || len(info.Hazards) != 0 {
		t.Fatalf("hazards seen by another agent: %+v, %v", info, err)
	}
}

func TestRunningJobIsNoHazardForItsAgent(t *testing.T) {
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
	if hz := a.Hazards(); len(hz) != 0 {
		t.Fatalf("the agent's own running job is a hazard: %+v", hz)
	}
	// Another agent (as after a crash) sees a job nobody runs.
	b := newAgent(t, nil, liteagent.Options{Checkpointer: store, Workdir: a.Workdir()})
	if info, err := b.SessionInfo(t.Context(), a.SessionID()); err != nil || len(info.Hazards) != 1 {
		t.Fatalf("another agent's view: %+v, %v", info, err)
	}
	// A fork copies the job_started, not the job: the job's end is recorded
	// in the session that runs it, so the fork has nothing to review.
	fork, err := a.Fork(t.Context(), a.SessionID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := b.SessionInfo(t.Context(), fork); err != nil || len(info.Hazards) != 0 {
		t.Fatalf("the fork's hazards: %+v, %v", info, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !processGone(pid) {
		t.Fatalf("job process %d outlived Close", pid)
	}
	if info, err := b.SessionInfo(t.Context(), a.SessionID()); err != nil || len(info.Hazards) != 0 {
		t.Fatalf("after Close recorded the end: %+v, %v", info, err)
	}
}

func TestCompletionTurnApprovalsAreMarked(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "exit 0", "background": true})}},
		fakemodel.Reply{Text: "started"},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c2", "write", map[string]string{"path": "report.txt", "content": "ok\n"})}},
		fakemodel.Reply{Expect: &fakemodel.Expect{ToolResultFor: []string{"c2"}}, Text: "wrote the report"},
	)
	var asked []liteagent.ApprovalRequest
	a := newAgent(t, p, liteagent.Options{Approve: func(ctx context.Context, r liteagent.ApprovalRequest) (liteagent.Decision, error) {
		asked = append(asked, r)
		return liteagent.AllowOnce, nil
	}})
	if _, err := a.Send(t.Context(), "build, then write a report"); err != nil {
		t.Fatal(err)
	}
	if res := waitJobs(t, a); len(res) != 1 || res[0].Text != "wrote the report" {
		t.Fatalf("completion results %+v", res)
	}
	checkServer(t, srv)
	if len(asked) != 2 || asked[0].Tool != "bash" || asked[0].Background || asked[1].Tool != "write" || !asked[1].Background {
		t.Fatalf("approval requests %+v", asked)
	}
}
