package liteagent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"path/filepath"
)

func blobCount(t *testing.T, bs checkpoint.BlobStore) int {
	t.Helper()
	n := 0
	for _, err := range bs.Blobs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// Blobs stay bounded: a stray blob and those only a deleted session named
// are collected, those a kept checkpoint needs never are; --session-info's
// figure counts them; the doctor names a referenced blob that went missing
// and a restore lists that file as not undone.
func TestBlobsCollectedAndChecked(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := runPromptsOn(t, store, map[string]file{"a.txt": {"old a\n", 0o644}, "b.txt": {"old b\n", 0o644}}, [][]op{
		{{kind: "bash", content: "echo new > a.txt && echo new > b.txt"}},
	})
	id := f.agent.SessionID()
	info, err := f.agent.SessionInfo(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.BlobBytes < int64(len("old a\n")+len("old b\n")) {
		t.Errorf("session info blob bytes %d, want at least the two prior contents", info.BlobBytes)
	}
	stray := checkpoint.NewBlob([]byte("nobody names me"))
	if err := store.PutBlobs(ctx, []checkpoint.Blob{stray}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	res, err := f.agent.CollectBlobs(ctx, &liteagent.CollectOptions{Grace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Blobs != 1 {
		t.Errorf("collected %+v, want only the stray blob", res)
	}
	if _, err := store.Blob(ctx, stray.Digest); !strings.Contains(errString(err), "not found") {
		t.Errorf("the stray blob is still there: %v", err)
	}
	// Retention never takes what a kept checkpoint needs: the restore works.
	rep, err := checkpoint.Doctor(ctx, store, checkpoint.DoctorOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("doctor after collection: %+v %v, want no problems", rep, err)
	}

	// A referenced blob that goes missing is named by the doctor, and the
	// restore lists the file instead of failing.
	if err := store.DeleteBlobs(ctx, []string{checkpoint.BlobDigest([]byte("old b\n"))}); err != nil {
		t.Fatal(err)
	}
	rep, err = checkpoint.Doctor(ctx, store, checkpoint.DoctorOptions{})
	if err != nil || len(rep.Problems) != 1 || rep.Problems[0].Kind != checkpoint.ProblemBlobMissing || rep.Problems[0].Session != id {
		t.Fatalf("doctor with a blob gone: %+v %v, want one %s for %s", rep, err, checkpoint.ProblemBlobMissing, id)
	}
	r, err := f.agent.Restore(ctx, id, f.checkpoints(t)[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, f.dir); got["a.txt"].content != "old a\n" || got["b.txt"].content != "new\n" {
		t.Errorf("after the restore: %v, want a.txt back and b.txt left", got)
	}
	if !strings.Contains(strings.Join(r.NotUndone, "\n"), "b.txt") {
		t.Errorf("not undone %q, want b.txt listed", r.NotUndone)
	}

	// Once every session is gone, so are their blobs.
	for _, s := range []string{id, r.UndoSession} {
		if err := f.agent.DeleteSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := f.agent.CollectBlobs(ctx, &liteagent.CollectOptions{Grace: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if n := blobCount(t, store); n != 0 {
		t.Errorf("%d blobs left after every session was deleted, want 0", n)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Deleting a session removes the blobs only its log named (no --prune
// needed), and keeps those another session still needs.
func TestDeleteSessionCollectsOnlyItsBlobs(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := runPromptsOn(t, store, map[string]file{"a.txt": {"old a\n", 0o644}, "shared.txt": {"shared\n", 0o644}}, [][]op{
		{{kind: "bash", content: "echo mine > a.txt"}},
	})
	first := f.agent.SessionID()
	_, p := startModel(t, "anthropic", turnReplies(1, []op{{kind: "bash", content: "echo b > b.txt"}})...)
	other := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: f.dir})
	if _, err := other.Send(ctx, "another session"); err != nil {
		t.Fatal(err)
	}
	before := blobCount(t, store)
	if err := f.agent.DeleteSession(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Blob(ctx, checkpoint.BlobDigest([]byte("old a\n"))); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Errorf("the prior content only the deleted session named: %v, want it collected", err)
	}
	for _, kept := range []string{"mine\n", "shared\n"} {
		if _, err := store.Blob(ctx, checkpoint.BlobDigest([]byte(kept))); err != nil {
			t.Errorf("blob of %q, which the other session's manifest holds: %v, want it kept", kept, err)
		}
	}
	if after := blobCount(t, store); after >= before {
		t.Errorf("%d blobs after the delete, %d before: want fewer", after, before)
	}
	cps, err := other.ListCheckpoints(ctx, other.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Restore(ctx, other.SessionID(), cps[0].Seq, nil); err != nil {
		t.Fatalf("the other session's restore after the delete: %v", err)
	}
	if got := tree(t, f.dir); got["a.txt"].content != "mine\n" || got["b.txt"].content != "" {
		t.Errorf("after the other session's restore: %v, want b.txt gone and a.txt left", got)
	}
}
