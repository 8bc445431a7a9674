package liteagent_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// TestSessionOfAnotherWorkdirIsRefused: an agent in another directory on
// the same store can neither resume nor restore the session (typed error,
// nothing written, the session's own directory untouched) until it
// re-targets the session, which the log records; the old workdir is then
// refused in turn.
func TestSessionOfAnotherWorkdirIsRefused(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "one\n"}},
		{{kind: "write", path: "a.txt", content: "two\n"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	before, _ := checkpoint.ReadAll(ctx, f.store, id)
	files := tree(t, f.dir)

	other := newAgent(t, nil, liteagent.Options{Checkpointer: f.store})
	var we *liteagent.WorkdirError
	if err := other.Resume(ctx, id); !errors.As(err, &we) || we.Recorded != f.agent.Workdir() || we.Workdir != other.Workdir() {
		t.Fatalf("Resume from another workdir = %v, want a *WorkdirError naming %s and %s", err, f.agent.Workdir(), other.Workdir())
	}
	if _, err := other.Restore(ctx, id, cps[0], &liteagent.RestoreOptions{Force: true}); !errors.As(err, &we) {
		t.Fatalf("Restore from another workdir = %v, want a *WorkdirError", err)
	}
	sameTree(t, "the session's workdir after refused operations", tree(t, f.dir), files)
	if after, _ := checkpoint.ReadAll(ctx, f.store, id); len(after) != len(before) {
		t.Fatalf("refused operations wrote %d event(s)", len(after)-len(before))
	}

	from, err := other.Retarget(ctx, id)
	if err != nil || from != f.agent.Workdir() {
		t.Fatalf("Retarget = %q, %v; want %q", from, err, f.agent.Workdir())
	}
	events, _ := checkpoint.ReadAll(ctx, f.store, id)
	var moved session.WorkdirChanged
	if last := events[len(events)-1]; last.Type != session.TypeWorkdirChanged || last.Decode(&moved) != nil ||
		moved.From != f.agent.Workdir() || moved.To != other.Workdir() {
		t.Fatalf("the log ends with %s %+v, want workdir_changed from %s to %s", last.Type, moved, f.agent.Workdir(), other.Workdir())
	}
	if err := other.Resume(ctx, id); err != nil {
		t.Fatalf("Resume after Retarget: %v", err)
	}
	if err := f.agent.Resume(ctx, id); !errors.As(err, &we) || we.Recorded != other.Workdir() {
		t.Fatalf("Resume in the old workdir after the move = %v, want a *WorkdirError naming the new one", err)
	}
	// A restore after the move writes in the new workdir only.
	if _, err := other.Restore(ctx, id, cps[0], nil); err != nil {
		t.Fatalf("Restore after Retarget: %v", err)
	}
	sameTree(t, "the old workdir after a restore in the new one", tree(t, f.dir), files)
}

// TestRestoreToMustBeACheckpoint: a seq that is not a checkpoint is refused
// by Restore and Fork with the checkpoints listed, and nothing changes.
func TestRestoreToMustBeACheckpoint(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "one\n"}},
		{{kind: "write", path: "a.txt", content: "two\n"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	files := tree(t, f.dir)
	head := f.agent.Head()
	for _, seq := range []int64{cps[1] + 2, head + 5, -1} {
		var nc *liteagent.NotCheckpointError
		_, err := f.agent.Restore(ctx, id, seq, &liteagent.RestoreOptions{Force: true})
		if !errors.As(err, &nc) || !slices.Equal(nc.Valid, cps) {
			t.Fatalf("Restore to %d = %v, want a *NotCheckpointError listing %v", seq, err, cps)
		}
		if _, err := f.agent.Fork(ctx, id, seq); err == nil {
			t.Fatalf("Fork at %d (not a checkpoint) succeeded", seq)
		}
	}
	sameTree(t, "after refused restores", tree(t, f.dir), files)
	if h, _ := f.store.Head(ctx, id); h.Head != head {
		t.Fatalf("head %d after refused restores, want %d", h.Head, head)
	}
}

// TestRestoreListsInterruptedCalls: a call cut off after the checkpoint
// (tool_started without tool_finished) is listed as not undone.
func TestRestoreListsInterruptedCalls(t *testing.T) {
	f := runPrompts(t, nil, [][]op{{{kind: "write", path: "a.txt", content: "one\n"}}})
	ctx := context.Background()
	id := f.agent.SessionID()
	head := f.agent.Head()
	cut := []session.Event{
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "run it"}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "x1", Tool: "bash", Input: []byte(`{"command":"make"}`)}),
	}
	if _, err := f.store.Append(ctx, id, head, cut); err != nil {
		t.Fatal(err)
	}
	res, err := f.agent.Restore(ctx, id, head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.NotUndone, func(s string) bool { return s == "bash x1 (interrupted: its outcome is unknown)" }) {
		t.Fatalf("not undone %q does not list the interrupted bash x1", res.NotUndone)
	}
}

// TestRestoreClaim: a restore appends restore_started before it writes a
// file, so an agent still holding the old head loses with a conflict; a
// restore cut off after its claim leaves the session refused for turns
// until the restore is re-run, which finishes it.
func TestRestoreClaim(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "one\n"}},
		{{kind: "write", path: "a.txt", content: "two\n"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	head := f.agent.Head()

	// A claim left by a restore that was cut off right after it.
	claim := session.MustNew(session.TypeRestoreStarted, session.RestoreStarted{ToSeq: cps[1], Head: head, Undo: id + "-r", Workdir: f.agent.Workdir()})
	if _, err := f.store.Append(ctx, id, head, []session.Event{claim}); err != nil {
		t.Fatal(err)
	}
	// A writer that read the log before the claim loses.
	late := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "late"})
	if _, err := f.store.Append(ctx, id, head, []session.Event{late}); !checkpoint.IsConflict(err) {
		t.Fatalf("append at the head the restore claimed = %v, want a conflict", err)
	}
	other := newAgent(t, nil, liteagent.Options{Checkpointer: f.store, Workdir: f.dir})
	var re *liteagent.RestoringError
	if err := other.Resume(ctx, id); !errors.As(err, &re) || re.ToSeq != cps[1] {
		t.Fatalf("Resume of a claimed session = %v, want a *RestoringError to %d", err, cps[1])
	}
	if _, err := other.Restore(ctx, id, cps[0], nil); err == nil {
		t.Fatal("a restore to another checkpoint went ahead of the unfinished one")
	}
	if _, err := other.Restore(ctx, id, cps[1], nil); err != nil {
		t.Fatalf("re-run of the cut-off restore: %v", err)
	}
	sameTree(t, "after the re-run", tree(t, f.dir), f.before[1])
	if h, _ := f.store.Head(ctx, id); h.Head != cps[1] || h.Status == session.StatusRestoring {
		t.Fatalf("after the re-run: head %d status %s, want %d and not restoring", h.Head, h.Status, cps[1])
	}

}
