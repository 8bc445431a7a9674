package checkpointtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	if _, ok := c.(checkpoint.Repairer); ok {
		// What Head and List recomputed was stored: the doctor, which
		// compares what is stored with the logs, finds nothing.
		noProblems(t, c, "after reading the stale summaries")
	}

	// An append folds on from the log, not from a stale summary.
	wrong := session.Summarize("old-1", logs["old-1"])
	wrong.Fold, wrong.Title, wrong.Messages = session.FoldVersion-1, "stale again", 50
	b.StoreSummary(t, c, loc, "old-1", wrong)
	fin := toolFinished("c1")
	mustAppend(t, c, "old-1", 3, fin)
	logs["old-1"] = append(logs["old-1"], numbered(3, fin)...)
	check(c, "after an append")
	reopen(t, b, loc, &c, check)
}

// testNewerFoldVersion stores a summary stamped with the next fold version,
// as a newer lite-agent would leave it, and checks that Head, List and
// Append each fail with checkpoint.ErrNewer and a message that says to
// upgrade (never one about damage), that the log still reads back whole
// (or its read is refused the same way), that the append wrote nothing,
// and, for persistent stores, that this holds after reopening.
func testNewerFoldVersion(t *testing.T, b Backend) {
	if b.StoreSummary == nil {
		t.Skip("the backend has no StoreSummary hook")
	}
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	events := []session.Event{started("newer", "ns"), prompt("written by a newer build")}
	mustAppend(t, c, "newer", 0, events...)
	log := numbered(0, events...)
	newer := session.Summarize("newer", log)
	newer.Fold = session.FoldVersion + 1
	b.StoreSummary(t, c, loc, "newer", newer)
	check := func(c checkpoint.Checkpointer, when string) {
		t.Helper()
		isNewer := func(op string, err error) {
			t.Helper()
			CheckNewer(t, when+": "+op, err)
		}
		_, err := c.Head(t.Context(), "newer")
		isNewer("Head", err)
		_, err = c.List(t.Context(), "ns", checkpoint.ListOptions{})
		isNewer("List", err)
		_, err = c.Append(t.Context(), "newer", 2, []session.Event{prompt("from this build")})
		isNewer("Append", err)
		// A store that checks reads against its summaries (the file
		// store's index) may refuse the read as well; one that reads must
		// give the log whole, without the refused append.
		var got []session.Event
		for e, err := range c.Read(t.Context(), "newer", 1) {
			if err != nil {
				isNewer("Read", err)
				return
			}
			got = append(got, e)
		}
		if err := sameLog(log, got); err != nil {
			t.Fatalf("%s: the log: %v", when, err)
		}
	}
	check(c, "newer summary")
	reopen(t, b, loc, &c, check)
}

// CheckNewer fails tb unless err is a checkpoint.ErrNewer whose message
// says a newer lite-agent wrote the data and to upgrade, and never speaks
// of damage or backups: what a newer build wrote is not damage.
func CheckNewer(tb testing.TB, what string, err error) {
	tb.Helper()
	if !errors.Is(err, checkpoint.ErrNewer) {
		tb.Fatalf("%s: error %v, want checkpoint.ErrNewer", what, err)
	}
	msg := err.Error()
	for _, bad := range []string{"damaged", "corrupt", "backup", "salvage"} {
		if strings.Contains(msg, bad) {
			tb.Errorf("%s: %q speaks of %q: what a newer lite-agent wrote is not damage", what, msg, bad)
		}
	}
	if !strings.Contains(msg, "newer lite-agent") || !strings.Contains(msg, "upgrade") {
		tb.Errorf("%s: %q should say a newer lite-agent wrote it and to upgrade", what, msg)
	}
}

// CheckRefusesNewer checks store c, in which a newer lite-agent wrote the
// stored summary of session id (namespace ns, head events) in a format
// this build does not know: Head, List, the doctor (repairing unless
// readOnly) and an append to id fail as CheckNewer wants, the log of id
// reads back whole (or is refused the same way), and appends to session
// other (at head *otherHead, moved on) go on beside the refused ones, some
// in one group commit. Backends plant the newer summary their own way.
func CheckRefusesNewer(t *testing.T, c checkpoint.Checkpointer, id, ns string, head int64, other string, otherHead *int64, readOnly bool) {
	t.Helper()
	ctx := t.Context()
	_, err := c.Head(ctx, id)
	CheckNewer(t, "Head", err)
	_, err = c.List(ctx, ns, checkpoint.ListOptions{})
	CheckNewer(t, "List", err)
	_, err = checkpoint.Doctor(ctx, c, checkpoint.DoctorOptions{Repair: !readOnly})
	CheckNewer(t, "Doctor", err)
	var n int64
	for _, err := range c.Read(ctx, id, 1) {
		if err != nil {
			CheckNewer(t, "Read", err)
			n = head
			break
		}
		n++
	}
	if n != head {
		t.Fatalf("read %d events of %s, want %d", n, id, head)
	}
	if readOnly {
		return
	}
	for range 20 {
		var wg sync.WaitGroup
		var idErr, otherErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, idErr = c.Append(ctx, id, head, []session.Event{prompt("from an older build")})
		}()
		go func() {
			defer wg.Done()
			*otherHead, otherErr = c.Append(ctx, other, *otherHead, []session.Event{prompt(other + " goes on")})
		}()
		wg.Wait()
		CheckNewer(t, "Append", idErr)
		if otherErr != nil {
			t.Fatalf("append to %s beside a refused append to %s: %v", other, id, otherErr)
		}
	}
}

// reopen closes *c and, for a persistent backend, runs check on the store
// reopened at loc (left in *c for the caller to close).
func reopen(t *testing.T, b Backend, loc string, c *checkpoint.Checkpointer, check func(checkpoint.Checkpointer, string)) {
	t.Helper()
	if !b.Persistent {
		return
	}
	if err := (*c).Close(); err != nil {
		t.Fatal(err)
	}
	var err error
	if *c, err = b.Open(loc); err != nil {
		t.Fatal(err)
	}
	check(*c, "reopened")
}

// noProblems fails t unless the doctor finds nothing in c.
func noProblems(t *testing.T, c checkpoint.Checkpointer, when string) {
	t.Helper()
	rep, err := checkpoint.Doctor(t.Context(), c, checkpoint.DoctorOptions{})
	if err != nil {
		t.Fatalf("%s: doctor: %v", when, err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("%s: the doctor found %+v", when, rep.Problems)
	}
}

// testDoctorOldFold stores summaries stamped with an older fold version
// and checks that the doctor of a store that checks what it derives
// (a checkpoint.Repairer) names each as summary_old_fold, that a repair
// stores the recomputed ones (marked repaired), and that the doctor is
// clean afterwards, also reopened.
func testDoctorOldFold(t *testing.T, b Backend) {
	if b.StoreSummary == nil {
		t.Skip("the backend has no StoreSummary hook")
	}
	loc := b.NewLocation(t)
	c, err := b.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	if _, ok := c.(checkpoint.Repairer); !ok {
		t.Skip("the backend checks nothing it derives (no checkpoint.Repairer): its reads recompute old summaries")
	}
	ids := []string{"old-a", "old-b", "current"}
	for _, id := range ids {
		create(t, c, id, "ns", 2)
	}
	plant := func() {
		for _, id := range ids[:2] {
			var log []session.Event
			for e, err := range c.Read(t.Context(), id, 1) {
				if err != nil {
					t.Fatal(err)
				}
				log = append(log, e)
			}
			old := session.Summarize(id, log)
			old.Fold = session.FoldVersion - 1
			b.StoreSummary(t, c, loc, id, old)
		}
	}
	found := func(repair bool) {
		t.Helper()
		rep, err := checkpoint.Doctor(t.Context(), c, checkpoint.DoctorOptions{Repair: repair})
		if err != nil {
			t.Fatalf("doctor (repair %v): %v", repair, err)
		}
		var got []string
		for _, p := range rep.Problems {
			if p.Kind != checkpoint.ProblemSummaryOld || p.Repaired != repair || p.Fix == "" {
				t.Fatalf("doctor (repair %v) found %+v, want summary_old_fold problems only", repair, p)
			}
			got = append(got, p.Session)
		}
		slices.Sort(got)
		if want := []string{"old-a", "old-b"}; !slices.Equal(got, want) {
			t.Fatalf("doctor (repair %v) reported summary_old_fold for %v, want %v", repair, got, want)
		}
	}
	plant()
	found(false)
	plant() // the doctor's own listing may have written them back
	found(true)
	noProblems(t, c, "after the repair")
	reopen(t, b, loc, &c, func(c checkpoint.Checkpointer, when string) { noProblems(t, c, when) })
}

// testOldFoldDuringWrites: summaries of an older fold, recomputed and
// written back by readers (Head, List) while a writer appends to the same
// session, never end up older than the log: after each round the stored
// summary is the fold of the whole log (Head, and the doctor on stores
// that check what they store).
func testOldFoldDuringWrites(t *testing.T, b Backend) {
	if b.StoreSummary == nil {
		t.Skip("the backend has no StoreSummary hook")
	}
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	log := create(t, c, "busy", "ns", 1)
	_, repairer := c.(checkpoint.Repairer)
	for round := range 8 {
		old := session.Summarize("busy", log)
		old.Fold, old.Title = session.FoldVersion-1, "stale"
		b.StoreSummary(t, c, loc, "busy", old)
		done := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for r := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var err error
					if r == 0 {
						_, err = c.Head(t.Context(), "busy")
					} else {
						_, err = c.List(t.Context(), "ns", checkpoint.ListOptions{})
					}
					if err != nil {
						errs <- err
						return
					}
					select {
					case <-done:
						return
					default:
					}
				}
			}()
		}
		for range 5 {
			e := prompt(fmt.Sprintf("round %d", round))
			mustAppend(t, c, "busy", int64(len(log)), e)
			log = append(log, numbered(int64(len(log)), e)...)
		}
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: a reader beside the writer: %v", round, err)
		}
		got, err := c.Head(t.Context(), "busy")
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, fmt.Sprintf("round %d: Head", round), got, "busy", log)
		if repairer {
			noProblems(t, c, fmt.Sprintf("round %d", round))
		}
	}
}
