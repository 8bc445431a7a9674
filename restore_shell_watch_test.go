package liteagent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

// countingStore is a memory store that counts the blobs put in it: the
// file contents a scan read, and the manifests.
type countingStore struct {
	*memory.Store
	put atomic.Int64
}

func (s *countingStore) PutBlobs(ctx context.Context, bs []checkpoint.Blob) error {
	s.put.Add(int64(len(bs)))
	return s.Store.PutBlobs(ctx, bs)
}

// scannedEvents returns the session's workspace_scanned records.
func scannedEvents(t *testing.T, store checkpoint.Checkpointer, id string) []session.WorkspaceScanned {
	t.Helper()
	var out []session.WorkspaceScanned
	for e, err := range store.Read(context.Background(), id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == session.TypeWorkspaceScanned {
			var ws session.WorkspaceScanned
			if err := e.Decode(&ws); err != nil {
				t.Fatal(err)
			}
			out = append(out, ws)
		}
	}
	return out
}

// After the first, a session's manifests are stored as deltas against the
// last whole one; after a restart the session reads its latest manifest
// back from the log, so its first command reads only the files that
// changed rather than the whole tree; and the restores across the restart
// put the tree back.
func TestShellManifestsReloadedAfterRestart(t *testing.T) {
	// Files written an hour ago: none is "racy" (modified within two
	// seconds of a manifest, and so read again whatever its stat).
	fill := func(dir string) {
		old := time.Now().Add(-time.Hour)
		for i := range 300 {
			p := filepath.Join(dir, fmt.Sprintf("d%d/f%03d.txt", i/100, i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, old, old)
		}
	}
	store := &countingStore{Store: memory.New()}
	f := runPromptsStore(t, t, store, nil, [][]op{
		{{kind: "bash", content: "echo one > d0/f000.txt"}, {kind: "bash", content: "echo two > d1/f100.txt && mkdir -p new/deep && echo n > new/deep/n.txt"}},
	}, fill)
	id := f.agent.SessionID()
	if got := store.put.Load(); got < 300 {
		t.Fatalf("the first manifest put %d blobs, want every file's content (300 or more)", got)
	}
	scanned := scannedEvents(t, store, id)
	if len(scanned) != 2 || scanned[0].Base != "" || scanned[1].Base != scanned[0].Manifest {
		t.Fatalf("manifests %+v: want the first whole and the second a delta against it", scanned)
	}
	afterFirst := tree(t, f.dir)
	if err := f.agent.Close(); err != nil {
		t.Fatal(err)
	}

	// Someone else edits a file while no agent runs.
	if err := os.WriteFile(filepath.Join(f.dir, "d2/f250.txt"), []byte("someone else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, p := startModel(t, "anthropic", turnReplies(1, []op{{kind: "bash", content: "echo three > d2/f200.txt"}})...)
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: f.dir})
	ctx := context.Background()
	if err := a.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	store.put.Store(0)
	if _, err := a.Send(ctx, "after the restart"); err != nil {
		t.Fatal(err)
	}
	// The files the two commands of the first process changed, the one
	// edited meanwhile, the one this command changed, the manifests.
	if got := store.put.Load(); got > 12 {
		t.Errorf("the first command after a restart put %d blobs, want only what changed (at most 12), not the tree", got)
	}
	scanned = scannedEvents(t, store, id)
	// 301 files and 5 directories.
	if last := scanned[len(scanned)-1]; last.Base == "" || last.Files != 306 {
		t.Errorf("manifest after the restart %+v: want a delta with 306 entries", last)
	}
	cps, err := a.ListCheckpoints(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// Someone else edits a file the first process's command changed: a
	// restore to before that command stops on it and changes nothing.
	if err := os.WriteFile(filepath.Join(f.dir, "d1/f100.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := tree(t, f.dir)
	var drift *liteagent.DriftError
	if _, err := a.Restore(ctx, id, cps[0].Seq, nil); !errors.As(err, &drift) || !slices.Equal(drift.Files, []string{"d1/f100.txt"}) {
		t.Fatalf("restore over someone's edit = %v, want a *DriftError naming d1/f100.txt", err)
	}
	sameTree(t, "tree after the refused restore", tree(t, f.dir), now)
	// To just before the command after the restart: only its change goes.
	res, err := a.Restore(ctx, id, cps[len(cps)-1].Seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := now
	want["d2/f200.txt"] = afterFirst["d2/f200.txt"]
	sameTree(t, "tree after restoring across the restart", tree(t, f.dir), want)
	if len(res.NotUndone) != 0 {
		t.Errorf("not undone: %v", res.NotUndone)
	}
}
