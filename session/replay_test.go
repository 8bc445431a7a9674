package session

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logBuilder writes logs for table tests.
type logBuilder struct{ events []Event }

func (l *logBuilder) add(t Type, p any) *logBuilder {
	e := MustNew(t, p)
	e.Seq = int64(len(l.events) + 1)
	e.Time = goldenTime.Add(time.Duration(e.Seq) * time.Millisecond)
	l.events = append(l.events, e)
	return l
}

func newLog() *logBuilder {
	return (&logBuilder{}).add(TypeSessionStarted, SessionStarted{ID: "s1", Namespace: "ns"})
}

func text(s string) Block { return Block{Type: BlockText, Text: s} }
func use(id, name string) Block {
	return Block{Type: BlockToolUse, ID: id, Name: name, Input: json.RawMessage(`{}`)}
}
func result(id, out string, isErr bool) Block {
	return Block{Type: BlockToolResult, ToolUseID: id, Text: out, IsError: isErr}
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name        string
		log         *logBuilder
		transcript  []Message
		checkpoints []int64 // seqs
		hazards     []string
		pending     []string
		status      Status
		messages    int
	}{
		{
			name:   "empty session",
			log:    newLog(),
			status: StatusNew,
		},
		{
			name: "one plain turn",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "hi"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("hello")}}).
				add(TypeTurnCompleted, TurnCompleted{}),
			transcript:  []Message{{RoleUser, []Block{text("hi")}}, {RoleAssistant, []Block{text("hello")}}},
			checkpoints: []int64{1},
			status:      StatusCompleted,
			messages:    2,
		},
		{
			name: "tool round trip, two results merged into one user message",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "go"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "read"), use("b", "write")}}).
				add(TypeToolStarted, ToolStarted{CallID: "a", Tool: "read"}).
				add(TypeToolFinished, ToolFinished{CallID: "a", Output: "content"}).
				add(TypeToolStarted, ToolStarted{CallID: "b", Tool: "write"}).
				add(TypeFileSnapshot, FileSnapshot{CallID: "b", Path: "x"}).
				add(TypeToolFinished, ToolFinished{CallID: "b", Output: "denied", IsError: true, Denied: true}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("done")}}).
				add(TypeTurnCompleted, TurnCompleted{}).
				add(TypeUserPrompt, UserPrompt{Text: "again"}),
			transcript: []Message{
				{RoleUser, []Block{text("go")}},
				{RoleAssistant, []Block{use("a", "read"), use("b", "write")}},
				{RoleUser, []Block{result("a", "content", false), result("b", "denied", true)}},
				{RoleAssistant, []Block{text("done")}},
				{RoleUser, []Block{text("again")}},
			},
			checkpoints: []int64{1, 10},
			status:      StatusRunning,
			messages:    4,
		},
		{
			name: "crash mid-tool leaves a hazard and no result",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "run"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "bash")}}).
				add(TypeToolStarted, ToolStarted{CallID: "a", Tool: "bash", Paths: []string{"out.txt"}}),
			transcript: []Message{
				{RoleUser, []Block{text("run")}},
				{RoleAssistant, []Block{use("a", "bash")}},
			},
			checkpoints: []int64{1},
			hazards:     []string{"a"},
			status:      StatusRunning,
			messages:    2,
		},
		{
			name: "acknowledged hazard becomes an unknown outcome",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "run"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "bash")}}).
				add(TypeToolStarted, ToolStarted{CallID: "a", Tool: "bash"}).
				add(TypeRecoveryAcknowledged, RecoveryAcknowledged{Tokens: []string{ReviewToken("a", 4)}, CallIDs: []string{"a"}}),
			transcript: []Message{
				{RoleUser, []Block{text("run")}},
				{RoleAssistant, []Block{use("a", "bash")}},
				{RoleUser, []Block{result("a", UnknownOutcome, true)}},
			},
			checkpoints: []int64{1},
			status:      StatusRunning,
			messages:    2,
		},
		{
			name: "crash before a call started leaves it pending",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "edit"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "edit")}}),
			transcript: []Message{
				{RoleUser, []Block{text("edit")}},
				{RoleAssistant, []Block{use("a", "edit")}},
			},
			checkpoints: []int64{1},
			pending:     []string{"a"},
			status:      StatusRunning,
			messages:    2,
		},
		{
			name: "interrupted turn closes calls that never started",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "edit"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "edit")}}).
				add(TypeTurnInterrupted, TurnInterrupted{Reason: "cancelled"}).
				add(TypeUserPrompt, UserPrompt{Text: "next"}),
			transcript: []Message{
				{RoleUser, []Block{text("edit")}},
				{RoleAssistant, []Block{use("a", "edit")}},
				{RoleUser, []Block{result("a", NotRun, true), text("next")}},
			},
			checkpoints: []int64{1, 4},
			status:      StatusRunning,
			messages:    3,
		},
		{
			name: "background prompt is not a checkpoint",
			log: newLog().add(TypeUserPrompt, UserPrompt{Text: "start"}).
				add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{text("ok")}}).
				add(TypeTurnCompleted, TurnCompleted{}).
				add(TypeUserPrompt, UserPrompt{Text: "job 1 finished", Background: true}).
				add(TypeTurnInterrupted, TurnInterrupted{Reason: "error"}),
			transcript: []Message{
				{RoleUser, []Block{text("start")}},
				{RoleAssistant, []Block{text("ok")}},
				{RoleUser, []Block{text("job 1 finished")}},
			},
			checkpoints: []int64{1},
			status:      StatusInterrupted,
			messages:    3,
		},
		{
			name: "unknown and undecodable events are skipped",
			log: func() *logBuilder {
				l := newLog().add(TypeUserPrompt, UserPrompt{Text: "x"})
				l.events = append(l.events, Event{Seq: 3, Type: "x_future", Time: goldenTime, Data: json.RawMessage(`{"a":1}`)},
					Event{Seq: 4, Type: TypeAssistantMessage, Time: goldenTime, Data: json.RawMessage(`[1,2]`)})
				return l
			}(),
			transcript:  []Message{{RoleUser, []Block{text("x")}}},
			checkpoints: []int64{1},
			status:      StatusRunning,
			messages:    2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Replay(tt.log.events)
			if diff := cmp.Diff(tt.transcript, st.Transcript()); diff != "" {
				t.Errorf("transcript (-want +got):\n%s", diff)
			}
			var cps []int64
			for _, c := range st.Checkpoints() {
				cps = append(cps, c.Seq)
				if c.PromptSeq != c.Seq+1 {
					t.Errorf("checkpoint %d: prompt seq %d", c.Seq, c.PromptSeq)
				}
			}
			if diff := cmp.Diff(tt.checkpoints, cps); diff != "" {
				t.Errorf("checkpoints (-want +got):\n%s", diff)
			}
			var hz []string
			for _, h := range st.Hazards() {
				hz = append(hz, h.CallID)
				if h.Token != ReviewToken(h.CallID, h.Seq) {
					t.Errorf("hazard %s: token %s", h.CallID, h.Token)
				}
			}
			if diff := cmp.Diff(tt.hazards, hz); diff != "" {
				t.Errorf("hazards (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.pending, st.Pending()); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
			if st.Summary.Status != tt.status || st.Summary.Messages != tt.messages {
				t.Errorf("status %s messages %d, want %s %d", st.Summary.Status, st.Summary.Messages, tt.status, tt.messages)
			}
			if st.Summary.Hazards() != len(tt.hazards) {
				t.Errorf("summary counts %d hazards, replay %d", st.Summary.Hazards(), len(tt.hazards))
			}
			if st.Summary.Head != int64(len(tt.log.events)) {
				t.Errorf("head %d, want %d", st.Summary.Head, len(tt.log.events))
			}
		})
	}
}

func TestSnapshottedResetsAtCheckpoints(t *testing.T) {
	l := newLog().add(TypeUserPrompt, UserPrompt{Text: "one"}).
		add(TypeFileSnapshot, FileSnapshot{Path: "a.txt"})
	st := Replay(l.events)
	if !st.Snapshotted("a.txt") || st.Snapshotted("b.txt") {
		t.Fatal("snapshot of a.txt not tracked")
	}
	st.Apply(l.add(TypeUserPrompt, UserPrompt{Text: "bg", Background: true}).events[3])
	if !st.Snapshotted("a.txt") {
		t.Fatal("a background prompt is not a checkpoint: the snapshot still holds")
	}
	st.Apply(l.add(TypeUserPrompt, UserPrompt{Text: "two"}).events[4])
	if st.Snapshotted("a.txt") {
		t.Fatal("a new prompt is a checkpoint: files must be snapshotted again")
	}
}

func TestSummaryIncrementalEqualsWhole(t *testing.T) {
	l := newLog().add(TypeUserPrompt, UserPrompt{Text: "first prompt\nwith two lines"}).
		add(TypeAssistantMessage, AssistantMessage{Blocks: []Block{use("a", "bash")}}).
		add(TypeToolStarted, ToolStarted{CallID: "a"})
	whole := Summarize("s1", l.events)
	var inc Summary
	for _, e := range l.events {
		inc.Apply(e)
	}
	if diff := cmp.Diff(whole, inc); diff != "" {
		t.Fatalf("(-whole +incremental):\n%s", diff)
	}
	if whole.Title != "first prompt with two lines" || whole.Namespace != "ns" || whole.Hazards() != 1 {
		t.Fatalf("summary %+v", whole)
	}
}

func TestTitle(t *testing.T) {
	long := ""
	for range 100 {
		long += "é"
	}
	for in, want := range map[string]string{
		"  a\n\tb  ": "a b",
		"":           "",
		long:         long[:2*(TitleLen-1)] + "…",
		"fix \x1b]0;owned\x07the \x1b[31mbug\u009b": "fix ]0;ownedthe [31mbug",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummaryCountsOpenJobs(t *testing.T) {
	started := func(l *logBuilder) *logBuilder {
		return l.add(TypeJobStarted, JobStarted{Job: "j1", CallID: "c1", Command: "make", PID: 42})
	}
	tests := []struct {
		name string
		log  *logBuilder
		want int
	}{
		{"running or orphaned job", started(newLog()), 1},
		{"finished job", started(newLog()).add(TypeJobFinished, JobFinished{Job: "j1"}), 0},
		{"acknowledged job", started(newLog()).add(TypeRecoveryAcknowledged, RecoveryAcknowledged{Tokens: []string{ReviewToken("c1/j1", 2)}}), 0},
		{"another job's token", started(newLog()).add(TypeRecoveryAcknowledged, RecoveryAcknowledged{Tokens: []string{ReviewToken("c9/j9", 2)}}), 1},
		{"job copied into a fork", started((&logBuilder{}).add(TypeSessionStarted, SessionStarted{ID: "f", Namespace: "ns", Parent: &ForkRef{Session: "p", Seq: 2}})), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := Summarize("s1", tt.log.events)
			st := Replay(tt.log.events)
			if whole.Hazards() != tt.want || st.Summary.Hazards() != tt.want || len(st.Hazards()) != tt.want {
				t.Fatalf("hazards: Summarize %d, Replay %d (%d in State), want %d (%v)", whole.Hazards(), st.Summary.Hazards(), len(st.Hazards()), tt.want, whole.Open)
			}
			// The summary is the projection of the state's hazards.
			var keys []string
			for _, h := range st.Hazards() {
				keys = append(keys, h.Key())
				if h.Job != "j1" || h.PID != 42 || h.Token != ReviewToken("c1/j1", 2) || h.Tool != "bash background job j1 (process group 42): make" {
					t.Errorf("job hazard %+v", h)
				}
			}
			if !slices.Equal(keys, whole.Open) {
				t.Errorf("State's hazard keys %q, Summary.Open %q", keys, whole.Open)
			}
			if st.JobsStarted() != 1 {
				t.Errorf("JobsStarted = %d, want 1", st.JobsStarted())
			}
		})
	}
}
