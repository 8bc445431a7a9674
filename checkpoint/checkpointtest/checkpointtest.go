// Package checkpointtest is the conformance suite every checkpoint backend
// passes, with the crash test and the standard benchmarks.
//
// A backend's test package describes how to open the backend with a Backend
// value and hooks the suite in with three functions:
//
//	func TestMain(m *testing.M)          { checkpointtest.Main(m, backend()) }
//	func TestConformance(t *testing.T)   { checkpointtest.Run(t, backend()) }
//	func TestCrash(t *testing.T)         { checkpointtest.RunCrash(t, backend(), 50) }
//	func BenchmarkStore(b *testing.B)    { checkpointtest.Bench(b, backend()) }
//
// Run checks the whole checkpoint.Checkpointer contract: seqs and order,
// validation (checkpoint.ErrInvalid, checkpoint.ErrTooLarge), conflicts,
// unknown sessions, exact round trips of times and payloads (including event
// types this version does not know), Truncate, Delete, List and the
// summaries behind it, Close, concurrent writers and readers, and, through
// Backend.Damage, that damaged data is reported as a
// *checkpoint.CorruptError and never read as a shorter or altered log. Checks that
// need data to outlive Close (reopening, several OS processes) run only for
// backends marked Persistent.
//
// RunCrash kills a writer process the number of times its caller asks (CI
// uses 50); the -torture flag of the test binary makes it 1,000 (see
// TortureKills).
//
// Some checks need other OS processes. The suite re-executes the test binary
// with environment variables naming a role, a location and a
// session; Main sees them and plays that role with Backend.Open instead of
// running the tests. That is why Main must be called from TestMain.
//
// Events the suite writes are built the way the agent builds them: with
// session.MustNew, times from session.Now (UTC, to the microsecond) and
// compact JSON payloads, which every backend must give back byte for byte.
package checkpointtest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// Backend tells the suite how to open one backend.
type Backend struct {
	// Name appears in messages.
	Name string
	// NewLocation returns a fresh, empty location for one test: a directory,
	// a database file path or a server URL. The suite may open it several
	// times, in this process and in child processes.
	NewLocation func(tb testing.TB) string
	// Open opens the store at a location.
	Open func(location string) (checkpoint.Checkpointer, error)
	// Persistent is set for backends whose data outlives Close and is shared
	// between processes; reopen, multi-process and crash tests need it.
	Persistent bool
	// MaxEventBytes is the backend's limit on one event's data, 0 if none.
	MaxEventBytes int
	// Damage, when set, inflicts damage d on the stored log of session id
	// at seq, in the store c opened at loc (still open; the suite reopens
	// persistent stores afterwards). The damage checks are skipped without
	// it.
	Damage func(tb testing.TB, c checkpoint.Checkpointer, loc, id string, d Damage, seq int64)
	// StoreSummary, when set, replaces the stored summary of session id
	// with s, behind the store's back, in the store c opened at loc (still
	// open), as another version of lite-agent would have left it: the
	// suite stamps s with an older or a newer fold version. The
	// OldFoldVersion and NewerFoldVersion checks are skipped without it.
	StoreSummary func(tb testing.TB, c checkpoint.Checkpointer, loc, id string, s session.Summary)
	// Quarantined, when set, returns the events a repair moved aside from
	// the log of session id, from seq from on, in the store c opened at
	// loc (those of damaged frames or rows left out). The
	// RepairDuringWrites check is skipped without it.
	Quarantined func(tb testing.TB, c checkpoint.Checkpointer, loc, id string, from int64) []session.Event
}

// subtest is one conformance check.
type subtest struct {
	name string
	// persistent marks checks that need a Persistent backend.
	persistent bool
	run        func(t *testing.T, b Backend)
}

// subtests lists the checks Run performs, in order.
var subtests = []subtest{
	{name: "AppendAndRead", run: testAppendAndRead},
	{name: "FirstEventMustStartSession", run: testFirstEvent},
	{name: "InvalidAppend", run: testInvalidAppend},
	{name: "StaleHeadConflicts", run: testStaleHead},
	{name: "CreateExistingConflicts", run: testCreateExisting},
	{name: "UnknownSession", run: testUnknownSession},
	{name: "ReadFrom", run: testReadFrom},
	{name: "ReadStoppedEarly", run: testReadStoppedEarly},
	{name: "RoundTrip", run: testRoundTrip},
	{name: "UnknownEventType", run: testUnknownType},
	{name: "CallerOwnsEvents", run: testCallerOwnsEvents},
	{name: "CancelledContext", run: testCancelledContext},
	{name: "Truncate", run: testTruncate},
	{name: "TruncateInvalid", run: testTruncateInvalid},
	{name: "Delete", run: testDelete},
	{name: "List", run: testList},
	{name: "ListOrderFollowsUpdates", run: testListOrder},
	{name: "LargeEvents", run: testLargeEvents},
	{name: "Closed", run: testClosed},
	{name: "Reopen", persistent: true, run: testReopen},
	{name: "TwoHandles", persistent: true, run: testTwoHandles},
	{name: "ConcurrentAppendsOneSession", run: testConcurrentOneSession},
	{name: "ConcurrentAppendsManySessions", run: testConcurrentSessions},
	{name: "ReadersDuringWrites", run: testReadersDuringWrites},
	{name: "ReadsPastTheHeadDuringWrites", run: testReadsPastTheHeadDuringWrites},
	{name: "CloseDuringWrites", run: testCloseDuringWrites},
	{name: "MultiProcess", persistent: true, run: testMultiProcess},
	{name: "DoctorDuringWrites", persistent: true, run: testDoctorDuringWrites},
	{name: "RepairDuringWrites", persistent: true, run: testRepairDuringWrites}, // repair.go
	{name: "Damage", run: testDamage},
	{name: "OldFoldVersion", run: testOldFoldVersion},
	{name: "NewerFoldVersion", run: testNewerFoldVersion},
	{name: "DoctorOldFold", run: testDoctorOldFold},
	{name: "OldFoldDuringWrites", run: testOldFoldDuringWrites},
	{name: "Search", run: testSearch},
	{name: "SearchFollowsChanges", run: testSearchFollowsChanges},
	{name: "SearchMatchesScan", run: testSearchMatchesScan},
	{name: "Blobs", run: testBlobs},             // blob.go
	{name: "StateFolds", run: testStateFolds},   // statefold.go
	{name: "Mailbox", run: testMailbox},         // mailbox.go
	{name: "MailboxRace", run: testMailboxRace}, // mailbox.go
	{name: "Watch", persistent: true, run: testWatch},
}

// Run runs every conformance subtest against b. Backends call it from
// TestConformance.
func Run(t *testing.T, b Backend) {
	t.Helper()
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) {
			if st.persistent && !b.Persistent {
				t.Skipf("%s is not persistent", b.Name)
			}
			st.run(t, b)
		})
	}
}

// open opens a store at loc and closes it when the test ends.
func open(tb testing.TB, b Backend, loc string) checkpoint.Checkpointer {
	tb.Helper()
	c, err := b.Open(loc)
	if err != nil {
		tb.Fatalf("open %s at %s: %v", b.Name, loc, err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close %s: %v", b.Name, err)
		}
	})
	return c
}

// fresh opens a store at a new location.
func fresh(tb testing.TB, b Backend) checkpoint.Checkpointer {
	tb.Helper()
	return open(tb, b, b.NewLocation(tb))
}

// started is a session_started event for session id in namespace ns.
func started(id, ns string) session.Event {
	return startedKind(id, ns, "")
}

// startedKind is a session_started event of the given kind.
func startedKind(id, ns, kind string) session.Event {
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{
		ID: id, Kind: kind, Namespace: ns, Workdir: "/work/" + ns, Provider: "fake", Model: "test-model",
	})
}

// prompt is a user_prompt event.
func prompt(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// reply is an assistant_message event with one text block.
func reply(text string) session.Event {
	return session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{
		Blocks: []session.Block{{Type: session.BlockText, Text: text}},
	})
}

// toolStarted and toolFinished bracket a tool call.
func toolStarted(callID string) session.Event {
	return session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: callID, Tool: "bash", Input: []byte(`{"command":"ls"}`)})
}

func toolFinished(callID string) session.Event {
	return session.MustNew(session.TypeToolFinished, session.ToolFinished{CallID: callID, Tool: "bash", Output: "ok"})
}

// completed ends a turn.
func completed() session.Event {
	return session.MustNew(session.TypeTurnCompleted, session.TurnCompleted{StopReason: "end_turn"})
}

// blob is an assistant_message whose Data is exactly n bytes of valid JSON
// (n ≥ 64).
func blob(n int, fill byte) session.Event {
	const prefix, suffix = `{"blocks":[{"type":"text","text":"`, `"}]}`
	data := make([]byte, 0, n)
	data = append(data, prefix...)
	for len(data) < n-len(suffix) {
		data = append(data, fill)
	}
	data = append(data, suffix...)
	return session.Event{Type: session.TypeAssistantMessage, Time: session.Now(), Data: data}
}

// numbered gives events seqs from+1, from+2, … (as a store assigns them).
func numbered(from int64, events ...session.Event) []session.Event {
	out := make([]session.Event, len(events))
	for i, e := range events {
		e.Seq = from + int64(i) + 1
		out[i] = e
	}
	return out
}

// mustAppend appends and fails the test on error, checking the new head.
func mustAppend(tb testing.TB, c checkpoint.Checkpointer, id string, head int64, events ...session.Event) int64 {
	tb.Helper()
	got, err := c.Append(tb.Context(), id, head, events)
	if err != nil {
		tb.Fatalf("append %d events to %s at head %d: %v", len(events), id, head, err)
	}
	if want := head + int64(len(events)); got != want {
		tb.Fatalf("append %d events to %s at head %d: new head %d, want %d", len(events), id, head, got, want)
	}
	return got
}

// create creates session id in namespace ns with a session_started event and
// n prompts, returning the events as written (with seqs).
func create(tb testing.TB, c checkpoint.Checkpointer, id, ns string, n int) []session.Event {
	tb.Helper()
	events := []session.Event{started(id, ns)}
	for i := range n {
		events = append(events, prompt(fmt.Sprintf("prompt %d of %s", i+1, id)))
	}
	mustAppend(tb, c, id, 0, events...)
	return numbered(0, events...)
}

// readAll reads the log from seq from, failing the test on error.
func readAll(tb testing.TB, c checkpoint.Checkpointer, id string, from int64) []session.Event {
	tb.Helper()
	var out []session.Event
	for e, err := range c.Read(tb.Context(), id, from) {
		if err != nil {
			tb.Fatalf("read %s from %d: %v", id, from, err)
		}
		out = append(out, e)
	}
	return out
}

// checkLog fails unless the stored log of id equals want exactly.
func checkLog(tb testing.TB, c checkpoint.Checkpointer, id string, want []session.Event) {
	tb.Helper()
	if err := sameLog(want, readAll(tb, c, id, 1)); err != nil {
		tb.Fatalf("log of %s: %v", id, err)
	}
}

// sameLog describes the first difference between two logs, nil if none.
// Events must match exactly: seq, type, the same instant in UTC, the same
// data byte for byte.
func sameLog(want, got []session.Event) error {
	for i := range max(len(want), len(got)) {
		if i >= len(got) {
			return fmt.Errorf("%d events, want %d: seq %d (%s) is missing", len(got), len(want), want[i].Seq, want[i].Type)
		}
		if i >= len(want) {
			return fmt.Errorf("%d events, want %d: unexpected seq %d (%s)", len(got), len(want), got[i].Seq, got[i].Type)
		}
		if err := sameEvent(want[i], got[i]); err != nil {
			return fmt.Errorf("event %d of %d: %w", i+1, len(want), err)
		}
	}
	return nil
}

// sameEvent describes how got differs from want, nil if it does not.
func sameEvent(want, got session.Event) error {
	switch {
	case got.Seq != want.Seq:
		return fmt.Errorf("seq %d (%s), want seq %d (%s)", got.Seq, got.Type, want.Seq, want.Type)
	case got.Type != want.Type:
		return fmt.Errorf("seq %d has type %q, want %q", got.Seq, got.Type, want.Type)
	case !got.Time.Equal(want.Time):
		return fmt.Errorf("seq %d has time %v, want %v (times are kept to the microsecond)", got.Seq, got.Time, want.Time)
	case got.Time.Location() != time.UTC:
		return fmt.Errorf("seq %d has time %v in location %q; return times in UTC", got.Seq, got.Time, got.Time.Location())
	case !bytes.Equal(got.Data, want.Data):
		return fmt.Errorf("seq %d has data %s, want %s (data must come back byte for byte)", got.Seq, short(got.Data), short(want.Data))
	}
	return nil
}

// short quotes data, eliding the middle of long data.
func short(data []byte) string {
	if len(data) <= 200 {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%q…(%d bytes)…%q", data[:120], len(data), data[len(data)-60:])
}

// summaryCmp compares summaries as the fold computes them.
var summaryCmp = cmp.Options{cmpopts.EquateEmpty()}

// checkSummary fails unless got is what session.Summarize makes of log.
func checkSummary(tb testing.TB, what string, got session.Summary, id string, log []session.Event) {
	tb.Helper()
	want := session.Summarize(id, log)
	if diff := cmp.Diff(want, got, summaryCmp); diff != "" {
		tb.Fatalf("%s: summary of %s differs from session.Summarize of its log (-want +got):\n%s", what, id, diff)
	}
}

// checkHead fails unless Head(id) is the summary of log.
func checkHead(tb testing.TB, c checkpoint.Checkpointer, id string, log []session.Event) {
	tb.Helper()
	s, err := c.Head(tb.Context(), id)
	if err != nil {
		tb.Fatalf("head of %s: %v", id, err)
	}
	checkSummary(tb, "head", s, id, log)
}

// headOf returns Head(id).Head, failing the test on error.
func headOf(tb testing.TB, c checkpoint.Checkpointer, id string) int64 {
	tb.Helper()
	s, err := c.Head(tb.Context(), id)
	if err != nil {
		tb.Fatalf("head of %s: %v", id, err)
	}
	return s.Head
}

// wantErr fails unless err is (or wraps) target.
func wantErr(tb testing.TB, what string, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// wantConflict fails unless err is a *ConflictError with the given heads.
func wantConflict(tb testing.TB, what string, err error, expected, actual int64) {
	tb.Helper()
	var ce *checkpoint.ConflictError
	if !errors.As(err, &ce) {
		tb.Fatalf("%s: error %v, want a *checkpoint.ConflictError", what, err)
	}
	if ce.Expected != expected || ce.Actual != actual {
		tb.Fatalf("%s: conflict expected=%d actual=%d, want expected=%d actual=%d", what, ce.Expected, ce.Actual, expected, actual)
	}
}

// wantNotFound fails unless the session is unknown to Head and Read.
func wantNotFound(tb testing.TB, c checkpoint.Checkpointer, id string) {
	tb.Helper()
	_, err := c.Head(tb.Context(), id)
	wantErr(tb, "head of "+id, err, checkpoint.ErrNotFound)
	wantReadErr(tb, c, id, checkpoint.ErrNotFound)
}

// wantReadErr fails unless Read(id) yields exactly one element: target.
func wantReadErr(tb testing.TB, c checkpoint.Checkpointer, id string, target error) {
	tb.Helper()
	n := 0
	for e, err := range c.Read(tb.Context(), id, 1) {
		n++
		if n == 1 {
			wantErr(tb, "read "+id, err, target)
			if e.Seq != 0 || e.Type != "" {
				tb.Errorf("read %s yielded event %d %q with its error; want a zero event", id, e.Seq, e.Type)
			}
		}
	}
	if n != 1 {
		tb.Fatalf("read %s yielded %d elements, want only the error %v", id, n, target)
	}
}

// promptText decodes a user_prompt event's text.
func promptText(tb testing.TB, e session.Event) string {
	tb.Helper()
	var p session.UserPrompt
	if err := e.Decode(&p); err != nil {
		tb.Fatalf("event %d: %v", e.Seq, err)
	}
	return p.Text
}

// contiguous returns an error unless events carry seqs from, from+1, ….
func contiguous(events []session.Event, from int64) error {
	for i, e := range events {
		if want := from + int64(i); e.Seq != want {
			return fmt.Errorf("event %d of the read has seq %d, want %d (a gap or a reordering)", i, e.Seq, want)
		}
	}
	return nil
}

// ids lists the summaries' ids.
func ids(list []session.Summary) string {
	var b strings.Builder
	for i, s := range list {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.ID)
	}
	return b.String()
}
