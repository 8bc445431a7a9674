package checkpointtest

import (
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// testOldFoldVersion stores summaries stamped with older fold versions (as
// an older lite-agent would have left them, with counts and a title that
// are wrong today) and checks that Head and List give the fold of the log
// instead, that an Append folds on from the log rather than from the
// stale summary, and, for persistent stores, that this holds after
// reopening.
func testOldFoldVersion(t *testing.T, b Backend) {
	if b.StoreSummary == nil {
		t.Skip("the backend has no StoreSummary hook")
	}
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	ids := []string{"old-0", "old-1", "current"}
	logs := map[string][]session.Event{}
	for _, id := range ids {
		events := []session.Event{started(id, "ns"), prompt("the real title of " + id), toolStarted("c1")}
		mustAppend(t, c, id, 0, events...)
		logs[id] = numbered(0, events...)
	}
	for i, id := range ids[:2] {
		wrong := session.Summarize(id, logs[id])
		wrong.Fold = session.FoldVersion - 1 - i // older versions
		wrong.Title, wrong.Messages, wrong.Open = "stale title", 99, nil
		b.StoreSummary(t, c, loc, id, wrong)
	}
	check := func(c checkpoint.Checkpointer, when string) {
		t.Helper()
		for _, id := range ids {
			got, err := c.Head(t.Context(), id)
			if err != nil {
				t.Fatalf("%s: Head(%s): %v", when, id, err)
			}
			checkSummary(t, when+": Head", got, id, logs[id])
		}
		list, err := c.List(t.Context(), "ns", checkpoint.ListOptions{})
		if err != nil {
			t.Fatalf("%s: List: %v", when, err)
		}
		if len(list) != len(ids) {
			t.Fatalf("%s: List gave %d sessions, want %d", when, len(list), len(ids))
		}
		for _, got := range list {
			checkSummary(t, when+": List", got, got.ID, logs[got.ID])
		}
	}
	check(c, "stale summaries")

	// An append folds on from the log, not from a stale summary.
	wrong := session.Summarize("old-1", logs["old-1"])
	wrong.Fold, wrong.Title, wrong.Messages = session.FoldVersion-1, "stale again", 50
	b.StoreSummary(t, c, loc, "old-1", wrong)
	fin := toolFinished("c1")
	mustAppend(t, c, "old-1", 3, fin)
	logs["old-1"] = append(logs["old-1"], numbered(3, fin)...)
	check(c, "after an append")
	if !b.Persistent {
		return
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = b.Open(loc); err != nil {
		t.Fatal(err)
	}
	check(c, "reopened")
}
