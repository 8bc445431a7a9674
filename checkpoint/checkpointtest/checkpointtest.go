// Package checkpointtest is the conformance suite every checkpoint backend
// passes. A backend's tests call Run (and, for persistent backends, RunCrash)
// from a test whose name contains "Conformance", and Main from TestMain so
// the suite can start child processes of the test binary.
package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	{name: "EmptyBatch", run: testEmptyBatch},
	{name: "StaleHeadConflicts", run: testStaleHead},
	{name: "CreateExistingConflicts", run: testCreateExisting},
	{name: "UnknownSession", run: testUnknownSession},
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
	return session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: "/work", Model: "test-model"})
}

// prompt is a user_prompt event.
func prompt(text string) session.Event {
	return session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: text})
}

// reply is an assistant_message event with one text block.
func reply(text string) session.Event {
	return session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockText, Text: text}}})
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
	for i := range events {
		events[i].Seq = int64(i + 1)
	}
	return events
}

// readAll reads the whole log, failing the test on error.
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
	got := readAll(tb, c, id, 1)
	if diff := cmp.Diff(want, got, eventCmp); diff != "" {
		tb.Fatalf("log of %s (-want +got):\n%s", id, diff)
	}
}

// eventCmp compares events by value: times with Equal, data byte for byte.
var eventCmp = cmp.Comparer(func(a, b session.Event) bool {
	return a.Seq == b.Seq && a.Type == b.Type && a.Time.Equal(b.Time) &&
		a.Time.Location().String() == b.Time.Location().String() && string(a.Data) == string(b.Data)
})

// checkHead fails unless Head(id) reports head.
func checkHead(tb testing.TB, c checkpoint.Checkpointer, id string, head int64) {
	tb.Helper()
	s, err := c.Head(tb.Context(), id)
	if err != nil {
		tb.Fatalf("head of %s: %v", id, err)
	}
	if s.Head != head {
		tb.Fatalf("head of %s = %d, want %d", id, s.Head, head)
	}
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

func testAppendAndRead(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 2)
	head := int64(len(want))
	for i := range 3 {
		batch := []session.Event{reply(fmt.Sprintf("reply %d", i)), prompt(fmt.Sprintf("next %d", i))}
		head = mustAppend(t, c, "s1", head, batch...)
		for j := range batch {
			batch[j].Seq = int64(len(want) + 1)
			want = append(want, batch[j])
		}
	}
	checkLog(t, c, "s1", want)
	checkHead(t, c, "s1", head)
}

func testFirstEvent(t *testing.T, b Backend) {
	c := fresh(t, b)
	_, err := c.Append(t.Context(), "s1", 0, []session.Event{prompt("hello")})
	wantErr(t, "create with a user_prompt first", err, checkpoint.ErrInvalid)
	_, err = c.Head(t.Context(), "s1")
	wantErr(t, "head after a rejected create", err, checkpoint.ErrNotFound)
}

func testEmptyBatch(t *testing.T, b Backend) {
	c := fresh(t, b)
	for _, head := range []int64{0, 1} {
		if head == 1 {
			create(t, c, "s1", "ns", 0)
		}
		_, err := c.Append(t.Context(), "s1", head, nil)
		wantErr(t, fmt.Sprintf("empty append at head %d", head), err, checkpoint.ErrInvalid)
	}
	checkHead(t, c, "s1", 1)
}

func testStaleHead(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 2)
	for _, stale := range []int64{1, 2, 4, 10} {
		_, err := c.Append(t.Context(), "s1", stale, []session.Event{prompt("stale")})
		wantConflict(t, fmt.Sprintf("append at stale head %d", stale), err, stale, 3)
	}
	checkLog(t, c, "s1", want)
}

func testCreateExisting(t *testing.T, b Backend) {
	c := fresh(t, b)
	want := create(t, c, "s1", "ns", 1)
	_, err := c.Append(t.Context(), "s1", 0, []session.Event{started("s1", "other")})
	wantConflict(t, "create an existing session", err, 0, 2)
	checkLog(t, c, "s1", want)
}

func testUnknownSession(t *testing.T, b Backend) {
	c := fresh(t, b)
	create(t, c, "other", "ns", 0)
	ctx := t.Context()
	_, err := c.Head(ctx, "nope")
	wantErr(t, "head", err, checkpoint.ErrNotFound)
	wantErr(t, "delete", c.Delete(ctx, "nope"), checkpoint.ErrNotFound)
	_, err = c.Truncate(ctx, "nope", 1, 1)
	wantErr(t, "truncate", err, checkpoint.ErrNotFound)
	n := 0
	for e, err := range c.Read(ctx, "nope", 1) {
		n++
		if n == 1 {
			wantErr(t, "read", err, checkpoint.ErrNotFound)
			if e.Seq != 0 || e.Type != "" {
				t.Errorf("read of an unknown session yielded event %+v with its error", e)
			}
		}
	}
	if n != 1 {
		t.Fatalf("read of an unknown session yielded %d elements, want 1 (ErrNotFound)", n)
	}
}

var _ = context.Background
