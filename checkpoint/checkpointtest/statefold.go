package checkpointtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// testStateFolds checks a FoldKeeper: a saved fold loads back, LoadState
// starts from it and folds on what came after, Truncate past it and
// Delete drop it, and a fold that is damaged, or whose event the log no
// longer has, is ignored (the whole log replayed); persistent stores keep
// folds across a reopen.
func testStateFolds(t *testing.T, b Backend) {
	loc := b.NewLocation(t)
	c := open(t, b, loc)
	fk, ok := c.(checkpoint.FoldKeeper)
	if !ok {
		t.Skipf("%s is not a checkpoint.FoldKeeper", b.Name)
	}
	ctx := t.Context()
	if _, err := fk.LoadFold(ctx, "nobody"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LoadFold of an unknown session: %v, want ErrNotFound", err)
	}
	if err := fk.SaveFold(ctx, "nobody", checkpoint.Fold{Seq: 1, Check: "x", State: []byte("x")}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("SaveFold of an unknown session: %v, want ErrNotFound", err)
	}
	head := mustAppend(t, c, "f1", 0, started("f1", "ns"), prompt("first"), toolStarted("c1"), toolFinished("c1"), reply("one"), completed())
	if _, err := fk.LoadFold(ctx, "f1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LoadFold before any save: %v, want ErrNotFound", err)
	}
	if err := fk.SaveFold(ctx, "f1", checkpoint.Fold{Seq: head + 1, Check: "x", State: []byte("x")}); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("SaveFold past the head: %v, want ErrNotFound", err)
	}
	st, info := loadState(t, c, "f1", 0, int(head))
	last := lastEvent(t, c, "f1")
	if err := checkpoint.SaveState(ctx, c, "f1", st, last); err != nil {
		t.Fatalf("SaveState: %v", err)
	}
	f, err := fk.LoadFold(ctx, "f1")
	if err != nil || f.Seq != head || f.Check != checkpoint.FoldCheck(last) || string(f.State) != string(session.EncodeState(nil, st)) {
		t.Fatalf("LoadFold after a save: seq %d, check %q, %d bytes, %v; want seq %d, check %q", f.Seq, f.Check, len(f.State), err, head, checkpoint.FoldCheck(last))
	}
	f.State[0] ^= 0xff // the caller's copy
	foldHead := head
	head = mustAppend(t, c, "f1", head, prompt("second"), reply("two"), completed())
	loadState(t, c, "f1", foldHead, 3)
	if b.Persistent {
		c.Close()
		c = open(t, b, loc)
		fk = c.(checkpoint.FoldKeeper)
		loadState(t, c, "f1", foldHead, 3)
	}

	// Cut at the fold keeps it; cut before it drops it, and a log written
	// again past the old seq does not match it anyway.
	if _, err := c.Truncate(ctx, "f1", foldHead, head); err != nil {
		t.Fatal(err)
	}
	loadState(t, c, "f1", foldHead, 0)
	if _, err := c.Truncate(ctx, "f1", 2, foldHead); err != nil {
		t.Fatal(err)
	}
	if _, err := fk.LoadFold(ctx, "f1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LoadFold after a Truncate before it: %v, want ErrNotFound", err)
	}
	head = mustAppend(t, c, "f1", 2, prompt("other"), reply("other"), completed(), prompt("more"), reply("more"), completed())
	_, info = loadState(t, c, "f1", 0, int(head))
	if info.Ignored != "" {
		t.Fatalf("no fold kept, yet LoadState says one was ignored: %s", info.Ignored)
	}

	// A fold of another log's event at the same seq, or a damaged one, is
	// ignored.
	st, _ = loadState(t, c, "f1", 0, int(head))
	good := session.EncodeState(nil, st)
	damaged := append([]byte(nil), good...)
	damaged[len(damaged)/2] ^= 1
	for _, bad := range []checkpoint.Fold{
		{Seq: head, Check: "not the event's", State: good},
		{Seq: head, Check: checkpoint.FoldCheck(lastEvent(t, c, "f1")), State: damaged},
		{Seq: head, Check: checkpoint.FoldCheck(lastEvent(t, c, "f1")), State: []byte("not a state")},
	} {
		if err := fk.SaveFold(ctx, "f1", bad); err != nil {
			t.Fatal(err)
		}
		if _, info := loadState(t, c, "f1", 0, int(head)); info.Ignored == "" {
			t.Fatalf("a bad fold (check %q) was not reported as ignored", bad.Check)
		}
	}

	// Concurrent saves: one of them is kept, whole.
	st, _ = loadState(t, c, "f1", 0, int(head))
	last = lastEvent(t, c, "f1")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := checkpoint.SaveState(ctx, c, "f1", st, last); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	loadState(t, c, "f1", head, 0)

	// Delete drops it: a new session of the same id starts clean.
	if err := c.Delete(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, c, "f1", 0, started("f1", "ns"))
	if _, err := fk.LoadFold(ctx, "f1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LoadFold after Delete and a new log: %v, want ErrNotFound", err)
	}
}

// loadState loads session id through checkpoint.LoadState, checks that
// it started from seq from and folded n events, and that the state is the
// whole log's replay.
func loadState(tb testing.TB, c checkpoint.Checkpointer, id string, from int64, n int) (*session.State, checkpoint.Loaded) {
	tb.Helper()
	st, info, err := checkpoint.LoadState(tb.Context(), c, id)
	if err != nil {
		tb.Fatalf("LoadState(%s): %v", id, err)
	}
	if info.From != from || info.Replayed != n {
		tb.Fatalf("LoadState(%s) started from seq %d and folded %d events (%s), want %d and %d", id, info.From, info.Replayed, info.Ignored, from, n)
	}
	var events []session.Event
	for e, err := range c.Read(tb.Context(), id, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		events = append(events, e)
	}
	want := session.Replay(events)
	for _, d := range []struct {
		what      string
		got, want any
	}{
		{"summary", st.Summary, want.Summary},
		{"transcript", st.Transcript(), want.Transcript()},
		{"checkpoints", st.Checkpoints(), want.Checkpoints()},
		{"hazards", st.Hazards(), want.Hazards()},
		{"usage", st.Usage, want.Usage},
		{"pending", st.Pending(), want.Pending()},
	} {
		if diff := cmp.Diff(d.want, d.got); diff != "" {
			tb.Fatalf("LoadState(%s): the %s differs from the log's (-log +loaded):\n%s", id, d.what, diff)
		}
	}
	return st, info
}

// lastEvent reads the last event of session id.
func lastEvent(tb testing.TB, c checkpoint.Checkpointer, id string) session.Event {
	tb.Helper()
	h, err := c.Head(tb.Context(), id)
	if err != nil {
		tb.Fatal(err)
	}
	for e, err := range c.Read(tb.Context(), id, h.Head) {
		if err != nil {
			tb.Fatal(err)
		}
		return e
	}
	tb.Fatal(fmt.Sprintf("session %s has no event %d", id, h.Head))
	return session.Event{}
}
