package liteagent_test

import (
	"errors"
	"strings"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/faulty"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestJobStartNotRecorded fails the append that records a background
// job's start with its call's receipt: the job, already running, is
// stopped at once (nothing the log does not name keeps running), the turn
// ends with the append's error, and the log replays to the cut-off bash
// call as the one hazard, with no job to review.
func TestJobStartNotRecorded(t *testing.T) {
	startCall := fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "sleep 60", "background": true})}}
	// A run without faults finds which append records the job's start.
	_, p0 := startModel(t, "anthropic", startCall, fakemodel.Reply{Text: "started"})
	dry := faulty.New(memory.New())
	a0 := newAgent(t, p0, liteagent.Options{Checkpointer: dry})
	if _, err := a0.Send(t.Context(), "start the server"); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 1; i <= dry.Appends(); i++ {
		if strings.Join(dry.AppendTypes(i), " ") == "job_started tool_finished" {
			n = i
		}
	}
	if n == 0 {
		t.Fatal("no append carried job_started with the call's receipt")
	}
	a0.Close()

	srv, p := startModel(t, "anthropic", startCall)
	store := faulty.New(memory.New())
	store.Fail(n)
	a := newAgent(t, p, liteagent.Options{Checkpointer: store})
	_, err := a.Send(t.Context(), "start the server")
	var ae *liteagent.AppendError
	if !errors.As(err, &ae) || !errors.Is(err, faulty.ErrInjected) {
		t.Fatalf("Send: %v, want an *AppendError of the injected failure", err)
	}
	jobs := a.Jobs()
	if len(jobs) != 1 || jobs[0].Running || jobs[0].Stopped != "its start could not be recorded" || jobs[0].PID <= 0 {
		t.Fatalf("jobs %+v, want the one job, stopped", jobs)
	}
	if !processGone(jobs[0].PID) {
		t.Errorf("job process %d runs on though its start is not in the log", jobs[0].PID)
	}
	if log := strings.Join(types(t, store, ae.Session), " "); strings.Contains(log, "job_started") || !strings.HasSuffix(log, "assistant_message tool_started turn_interrupted") {
		t.Fatalf("log: %s", log)
	}
	info, err := a.SessionInfo(t.Context(), ae.Session)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Hazards) != 1 || info.Hazards[0].CallID != "c1" || info.Hazards[0].Job != "" {
		t.Fatalf("hazards %+v, want the cut-off bash call c1 only", info.Hazards)
	}
	checkServer(t, srv)
}
