package checkpointtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// turnLog is a log with every kind of summary change: two turns, tool calls
// finished and not, and a turn left running.
func turnLog(id, ns string) []session.Event {
	return []session.Event{
		started(id, ns), // 1
		prompt("first prompt of " + id + ", long enough to be cut short in the title: " + strings.Repeat("word ", 30)), // 2
		reply("one"),       // 3
		completed(),        // 4
		prompt("second"),   // 5
		toolStarted("c1"),  // 6
		toolFinished("c1"), // 7
		toolStarted("c2"),  // 8
		reply("two"),       // 9
		toolStarted("c3"),  // 10
	}
}

func testTruncate(t *testing.T, b Backend) {
	c := fresh(t, b)
	for _, keep := range []int64{10, 9, 8, 7, 6, 5, 4, 2, 1} {
		id := fmt.Sprintf("keep-%d", keep)
		log := numbered(0, turnLog(id, "ns")...)
		mustAppend(t, c, id, 0, log...)
		head, err := c.Truncate(t.Context(), id, keep, 10)
		if err != nil {
			t.Fatalf("truncate %s to %d: %v", id, keep, err)
		}
		if head != keep {
			t.Fatalf("truncate %s to %d returned head %d", id, keep, head)
		}
		kept := log[:keep]
		checkLog(t, c, id, kept)
		checkHead(t, c, id, kept)
		list, err := c.List(t.Context(), "ns", checkpoint.ListOptions{AllKinds: true})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list, func(s session.Summary) bool { return s.ID == id })
		if i < 0 {
			t.Fatalf("list after truncating %s does not show it: [%s]", id, ids(list))
		}
		checkSummary(t, "list after truncate", list[i], id, kept)
		if keep < 10 {
			_, err := c.Append(t.Context(), id, 10, []session.Event{prompt("at the old head")})
			wantConflict(t, fmt.Sprintf("append to %s at the head before truncating", id), err, 10, keep)
		}
		// Appends continue from the new head with the next seq.
		more := []session.Event{prompt("again"), reply("again")}
		mustAppend(t, c, id, keep, more...)
		kept = append(slices.Clone(kept), numbered(keep, more...)...)
		checkLog(t, c, id, kept)
		checkHead(t, c, id, kept)
	}
	// Truncating twice, with appends between.
	log := numbered(0, turnLog("twice", "ns")...)
	mustAppend(t, c, "twice", 0, log...)
	if _, err := c.Truncate(t.Context(), "twice", 3, 10); err != nil {
		t.Fatal(err)
	}
	more := numbered(3, prompt("three"), reply("three"), completed())
	mustAppend(t, c, "twice", 3, more...)
	if _, err := c.Truncate(t.Context(), "twice", 5, 6); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(log[:3]), more[:2]...)
	checkLog(t, c, "twice", want)
	checkHead(t, c, "twice", want)
}

func testTruncateInvalid(t *testing.T, b Backend) {
	c := fresh(t, b)
	log := numbered(0, turnLog("s1", "ns")...)
	mustAppend(t, c, "s1", 0, log...)
	for _, stale := range []int64{9, 11, 0} {
		_, err := c.Truncate(t.Context(), "s1", 5, stale)
		wantConflict(t, fmt.Sprintf("truncate with stale head %d", stale), err, stale, 10)
	}
	for _, keep := range []int64{0, -1, 11, 100} {
		_, err := c.Truncate(t.Context(), "s1", keep, 10)
		wantErr(t, fmt.Sprintf("truncate keeping through %d of 10", keep), err, checkpoint.ErrInvalid)
	}
	checkLog(t, c, "s1", log)
	checkHead(t, c, "s1", log)
}

func testDelete(t *testing.T, b Backend) {
	c := fresh(t, b)
	ctx := t.Context()
	keep := create(t, c, "keep", "ns", 2)
	create(t, c, "gone", "ns", 3)
	if err := c.Delete(ctx, "gone"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantNotFound(t, c, "gone")
	wantErr(t, "delete again", c.Delete(ctx, "gone"), checkpoint.ErrNotFound)
	_, err := c.Truncate(ctx, "gone", 1, 4)
	wantErr(t, "truncate a deleted session", err, checkpoint.ErrNotFound)
	_, err = c.Append(ctx, "gone", 4, []session.Event{prompt("late")})
	if !checkpoint.IsConflict(err) {
		wantErr(t, "append to a deleted session at its old head", err, checkpoint.ErrNotFound)
	}
	list, err := c.List(ctx, "ns", checkpoint.ListOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "keep" {
		t.Fatalf("list after delete = [%s], want [keep]", got)
	}
	checkLog(t, c, "keep", keep)
	// The id can be used again, for a session that shares nothing with the
	// deleted one (not even its namespace).
	again := []session.Event{startedKind("gone", "elsewhere", "tasklist")}
	mustAppend(t, c, "gone", 0, again...)
	again = numbered(0, again...)
	checkLog(t, c, "gone", again)
	checkHead(t, c, "gone", again)
	list, err = c.List(ctx, "ns", checkpoint.ListOptions{AllKinds: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "keep" {
		t.Fatalf("list of the old namespace after re-creating = [%s], want [keep]", got)
	}
	list, err = c.List(ctx, "elsewhere", checkpoint.ListOptions{Kind: "tasklist"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); got != "gone" {
		t.Fatalf("list of the new namespace after re-creating = [%s], want [gone]", got)
	}
}

// listFixture writes sessions of two namespaces and two kinds, with event
// times chosen so that the order of Updated is not the order of creation.
// It returns the logs by id.
func listFixture(tb testing.TB, c checkpoint.Checkpointer, base time.Time) map[string][]session.Event {
	tb.Helper()
	type spec struct {
		id      string
		minutes int // Updated is base + minutes
		events  []session.Event
	}
	fork := session.MustNew(session.TypeSessionStarted, session.SessionStarted{
		ID: "a4", Namespace: "a", Parent: &session.ForkRef{Session: "a1", Seq: 4}, Model: "m2",
	})
	specs := []spec{
		{"a1", 30, append(turnLog("a1", "a")[:4], prompt("more"), reply("done"), completed())},
		{"a2", 50, turnLog("a2", "a")},
		{"a3", 40, []session.Event{startedKind("a3", "a", "tasklist")}},
		{"a4", 10, []session.Event{fork, prompt("forked"), toolStarted("x"),
			session.MustNew(session.TypeTurnInterrupted, session.TurnInterrupted{Reason: "cancelled"}),
			session.MustNew(session.TypeRecoveryAcknowledged, session.RecoveryAcknowledged{Tokens: []string{"t"}, CallIDs: []string{"x"}})}},
		{"a5", 20, []session.Event{started("a5", "a")}},
		{"b1", 60, turnLog("b1", "b")[:3]},
		{"b2", 5, []session.Event{startedKind("b2", "b", "tasklist"), prompt("tasks")}},
	}
	logs := make(map[string][]session.Event)
	for _, s := range specs {
		events := s.events
		// Times step back from Updated, one second per event.
		for i := range events {
			events[i].Time = base.Add(time.Duration(s.minutes)*time.Minute - time.Duration(len(events)-1-i)*time.Second)
		}
		// Write in two appends, so stores fold summaries across appends.
		half := (len(events) + 1) / 2
		mustAppend(tb, c, s.id, 0, events[:half]...)
		if half < len(events) {
			mustAppend(tb, c, s.id, int64(half), events[half:]...)
		}
		logs[s.id] = numbered(0, events...)
	}
	return logs
}

// checkList fails unless List returns exactly the sessions named in want, in
// that order, with the summaries of their logs.
func checkList(tb testing.TB, c checkpoint.Checkpointer, logs map[string][]session.Event, ns string, opts checkpoint.ListOptions, want string) {
	tb.Helper()
	got, err := c.List(tb.Context(), ns, opts)
	if err != nil {
		tb.Fatalf("list %q %+v: %v", ns, opts, err)
	}
	if ids(got) != want {
		tb.Fatalf("list %q %+v = [%s], want [%s]", ns, opts, ids(got), want)
	}
	for _, s := range got {
		checkSummary(tb, fmt.Sprintf("list %q %+v", ns, opts), s, s.ID, logs[s.ID])
	}
}

func testList(t *testing.T, b Backend) {
	c := fresh(t, b)
	base := session.Now().Add(-2 * time.Hour)
	logs := listFixture(t, c, base)
	cases := []struct {
		ns   string
		opts checkpoint.ListOptions
		want string
	}{
		{"a", checkpoint.ListOptions{}, "a2 a1 a5 a4"},
		{"a", checkpoint.ListOptions{Limit: 2}, "a2 a1"},
		{"a", checkpoint.ListOptions{Limit: 1}, "a2"},
		{"a", checkpoint.ListOptions{Limit: 10}, "a2 a1 a5 a4"},
		{"a", checkpoint.ListOptions{Kind: "tasklist"}, "a3"},
		{"a", checkpoint.ListOptions{AllKinds: true}, "a2 a3 a1 a5 a4"},
		{"a", checkpoint.ListOptions{AllKinds: true, Limit: 3}, "a2 a3 a1"},
		{"b", checkpoint.ListOptions{}, "b1"},
		{"b", checkpoint.ListOptions{Kind: "tasklist"}, "b2"},
		{"", checkpoint.ListOptions{}, "b1 a2 a1 a5 a4"},
		{"", checkpoint.ListOptions{AllKinds: true}, "b1 a2 a3 a1 a5 a4 b2"},
		{"", checkpoint.ListOptions{Kind: "tasklist", Limit: 5}, "a3 b2"},
		{"nope", checkpoint.ListOptions{AllKinds: true}, ""},
		{"a", checkpoint.ListOptions{Kind: "nope"}, ""},
	}
	for _, tc := range cases {
		checkList(t, c, logs, tc.ns, tc.opts, tc.want)
	}
	for id, log := range logs {
		checkHead(t, c, id, log)
	}
	// Spot-check the fold itself, so a wrong fixture cannot pass silently.
	want := map[string]session.Summary{
		"a1": {Messages: 4, Status: session.StatusCompleted, Head: 7},
		"a2": {Messages: 4, Status: session.StatusRunning, Head: 10, Open: []string{"c2", "c3"}},
		"a3": {Messages: 0, Status: session.StatusNew, Head: 1, Kind: "tasklist"},
		"a4": {Messages: 1, Status: session.StatusInterrupted, Head: 5},
	}
	for id, w := range want {
		s, err := c.Head(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		got := session.Summary{Messages: s.Messages, Status: s.Status, Head: s.Head, Open: s.Open, Kind: s.Kind}
		if diff := cmp.Diff(w, got, summaryCmp); diff != "" {
			t.Errorf("summary of %s (-want +got):\n%s", id, diff)
		}
	}
	if s, _ := c.Head(t.Context(), "a4"); s.Parent == nil || *s.Parent != (session.ForkRef{Session: "a1", Seq: 4}) {
		t.Errorf("summary of fork a4 has parent %v, want a1 at 4", s.Parent)
	}
	if s, _ := c.Head(t.Context(), "a1"); !strings.HasPrefix(s.Title, "first prompt of a1") || len([]rune(s.Title)) != session.TitleLen {
		t.Errorf("summary of a1 has title %q, want the first %d runes of the first prompt", s.Title, session.TitleLen)
	}
}

func testListOrder(t *testing.T, b Backend) {
	c := fresh(t, b)
	base := session.Now().Add(-2 * time.Hour)
	logs := listFixture(t, c, base)
	checkList(t, c, logs, "a", checkpoint.ListOptions{}, "a2 a1 a5 a4")
	// An append moves a session to the top.
	e := prompt("newest")
	e.Time = base.Add(55 * time.Minute)
	mustAppend(t, c, "a4", 5, e)
	logs["a4"] = append(logs["a4"], numbered(5, e)...)
	checkList(t, c, logs, "a", checkpoint.ListOptions{}, "a4 a2 a1 a5")
	checkList(t, c, logs, "", checkpoint.ListOptions{Limit: 2}, "b1 a4")
	// Deleting and creating sessions changes the list at once.
	if err := c.Delete(t.Context(), "a2"); err != nil {
		t.Fatal(err)
	}
	delete(logs, "a2")
	n := started("a6", "a")
	n.Time = base.Add(45 * time.Minute)
	mustAppend(t, c, "a6", 0, n)
	logs["a6"] = numbered(0, n)
	checkList(t, c, logs, "a", checkpoint.ListOptions{}, "a4 a6 a1 a5")
}
