package liteagent_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// op is one file operation a scripted model asks a tool for.
type op struct {
	kind          string // write, edit, delete, bash
	path, content string // write: the content; edit: the new content (old is the whole file); bash: the command
	old           string
}

func (o op) call(id string) fakemodel.ToolCall {
	switch o.kind {
	case "edit":
		return call(id, "edit", map[string]any{"path": o.path, "old_string": o.old, "new_string": o.content})
	case "delete":
		return call(id, "delete", map[string]any{"path": o.path})
	case "bash":
		return call(id, "bash", map[string]any{"command": o.content})
	}
	return call(id, "write", map[string]any{"path": o.path, "content": o.content})
}

// turnReplies scripts one prompt: one model call per op, then a final text.
func turnReplies(prompt int, ops []op) []fakemodel.Reply {
	var out []fakemodel.Reply
	for i, o := range ops {
		out = append(out, fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{o.call(callID(prompt, i))}})
	}
	return append(out, fakemodel.Reply{Text: "done"})
}

func callID(prompt, i int) string { return "p" + string(rune('a'+prompt)) + "_" + string(rune('a'+i)) }

// tree reads every regular file under dir: path → content and mode.
type file struct {
	content string
	mode    fs.FileMode
}

// failer is what the rewind helpers need to fail a test: testing.TB and
// rapid's *T both have it.
type failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

func tree(t failer, dir string) map[string]file {
	t.Helper()
	out := map[string]file{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = file{string(b), fi.Mode().Perm()}
		return nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

func sameTree(t failer, what string, got, want map[string]file) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// rewindFixture runs prompts of ops in a fresh workdir and records the tree
// before each prompt.
type rewindFixture struct {
	agent  *liteagent.Agent
	store  checkpoint.Checkpointer
	dir    string
	before []map[string]file // the tree before prompt i
}

func runPrompts(t testing.TB, pre map[string]file, prompts [][]op) *rewindFixture {
	return runPromptsFailing(t, t, pre, prompts)
}

// runPromptsFailing is runPrompts with failures reported to fail (for
// property tests) and resources cleaned up by t.
func runPromptsFailing(t testing.TB, fail failer, pre map[string]file, prompts [][]op) *rewindFixture {
	fail.Helper()
	return runPromptsWith(t, fail, pre, prompts, nil)
}

// runPromptsObserving is runPromptsFailing with observe called with the
// workdir before each prompt.
func runPromptsObserving(t testing.TB, fail failer, prompts [][]op, observe func(dir string)) *rewindFixture {
	fail.Helper()
	return runPromptsWith(t, fail, nil, prompts, observe)
}

// runPromptsOn is runPrompts with the given store.
func runPromptsOn(t testing.TB, store checkpoint.Checkpointer, pre map[string]file, prompts [][]op) *rewindFixture {
	return runPromptsStore(t, t, store, pre, prompts, nil)
}

func runPromptsWith(t testing.TB, fail failer, pre map[string]file, prompts [][]op, observe func(dir string)) *rewindFixture {
	fail.Helper()
	return runPromptsStore(t, fail, memory.New(), pre, prompts, observe)
}

func runPromptsStore(t testing.TB, fail failer, store checkpoint.Checkpointer, pre map[string]file, prompts [][]op, observe func(dir string)) *rewindFixture {
	fail.Helper()
	var replies []fakemodel.Reply
	for i, ops := range prompts {
		replies = append(replies, turnReplies(i, ops)...)
	}
	srv, p := startModel(t, "anthropic", replies...)
	f := &rewindFixture{store: store, dir: t.TempDir()}
	for path, fl := range pre {
		full := filepath.Join(f.dir, path)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(fl.content), fl.mode); err != nil {
			fail.Fatalf("%v", err)
		}
		os.Chmod(full, fl.mode)
	}
	f.agent = newAgent(t, p, liteagent.Options{Checkpointer: f.store, Workdir: f.dir})
	for i := range prompts {
		f.before = append(f.before, tree(fail, f.dir))
		if observe != nil {
			observe(f.dir)
		}
		if _, err := f.agent.Send(context.Background(), "prompt "+string(rune('A'+i))); err != nil {
			fail.Fatalf("prompt %d: %v", i, err)
		}
	}
	if err := srv.Err(); err != nil {
		fail.Fatalf("fake model: %v", err)
	}
	return f
}

func (f *rewindFixture) checkpoints(t failer) []int64 {
	t.Helper()
	cps, err := f.agent.ListCheckpoints(context.Background(), f.agent.SessionID())
	if err != nil {
		t.Fatalf("%v", err)
	}
	var out []int64
	for _, c := range cps {
		out = append(out, c.Seq)
	}
	return out
}

func TestRestoreAcrossPrompts(t *testing.T) {
	pre := map[string]file{"keep.txt": {"untouched\n", 0o644}, "old.sh": {"#!/bin/sh\necho old\n", 0o750}}
	f := runPrompts(t, pre, [][]op{
		{{kind: "write", path: "a.txt", content: "v1\n"}},
		{{kind: "edit", path: "a.txt", old: "v1\n", content: "v2\n"}, {kind: "write", path: "dir/b.txt", content: "b\n"}},
		{{kind: "delete", path: "old.sh"}, {kind: "write", path: "a.txt", content: "v3\n"}, {kind: "edit", path: "dir/b.txt", old: "b\n", content: "bb\n"}},
	})
	end := tree(t, f.dir)
	cps := f.checkpoints(t)
	if len(cps) != 3 {
		t.Fatalf("%d checkpoints, want 3", len(cps))
	}
	ctx := context.Background()
	id := f.agent.SessionID()

	res, err := f.agent.Restore(ctx, id, cps[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after restore to checkpoint 2", tree(t, f.dir), f.before[1])
	if head, _ := f.store.Head(ctx, id); head.Head != cps[1] {
		t.Fatalf("log head %d after restore, want %d", head.Head, cps[1])
	}
	if len(res.NotUndone) != 0 {
		t.Fatalf("nothing ran a shell command, yet %v", res.NotUndone)
	}

	// The restore can be undone from the fork that keeps the old log.
	if _, err := f.agent.Restore(ctx, res.UndoSession, res.UndoSeq, nil); err != nil {
		t.Fatalf("undo: %v", err)
	}
	sameTree(t, "after undoing the restore", tree(t, f.dir), end)

	// Restoring the (undone) fork again to the first prompt works from
	// there: created files removed, the deleted script back with its mode.
	undoCps, err := f.agent.ListCheckpoints(ctx, res.UndoSession)
	if err != nil || len(undoCps) != 3 {
		t.Fatalf("fork checkpoints %v %v", undoCps, err)
	}
	if _, err := f.agent.Restore(ctx, res.UndoSession, undoCps[0].Seq, nil); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after restore to checkpoint 1", tree(t, f.dir), f.before[0])
}

func TestRestoreRefusesDriftUnlessForced(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "agent\n"}},
		{{kind: "write", path: "a.txt", content: "agent 2\n"}, {kind: "write", path: "b.txt", content: "b\n"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	// Someone else edits a file the session changed.
	if err := os.WriteFile(filepath.Join(f.dir, "a.txt"), []byte("human edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := tree(t, f.dir)
	headBefore, _ := f.store.Head(ctx, id)
	_, err := f.agent.Restore(ctx, id, cps[1], nil)
	var de *liteagent.DriftError
	if !errors.As(err, &de) || !slices.Equal(de.Files, []string{"a.txt"}) {
		t.Fatalf("Restore = %v, want a drift error naming a.txt", err)
	}
	sameTree(t, "a refused restore writes nothing", tree(t, f.dir), before)
	if h, _ := f.store.Head(ctx, id); h.Head != headBefore.Head {
		t.Fatal("a refused restore truncated the log")
	}
	if _, err := f.agent.Restore(ctx, id, cps[1], &liteagent.RestoreOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "forced restore", tree(t, f.dir), f.before[1])
}

func TestRestoreRerunAfterFailureHalfway(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "a0\n"}, {kind: "write", path: "z/z.txt", content: "z0\n"}},
		{{kind: "write", path: "a.txt", content: "a1\n"}, {kind: "write", path: "z/z.txt", content: "z1\n"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	// Make the second file impossible to write back: its directory is
	// read-only to the restore because a file sits where a temp file would
	// go... simplest portable way: replace z/ with a file of the same name.
	z := filepath.Join(f.dir, "z")
	saved, _ := os.ReadFile(filepath.Join(z, "z.txt"))
	os.RemoveAll(z)
	os.WriteFile(z, []byte("blocker"), 0o644)
	if _, err := f.agent.Restore(ctx, id, cps[1], &liteagent.RestoreOptions{Force: true}); err == nil {
		t.Fatal("restore succeeded with a file in the way")
	}
	if h, _ := f.store.Head(ctx, id); h.Head == cps[1] {
		t.Fatal("a restore that failed half-way truncated the log")
	}
	// Clear the obstacle (as after a crash: a.txt is already back) and re-run.
	os.Remove(z)
	os.MkdirAll(z, 0o755)
	os.WriteFile(filepath.Join(z, "z.txt"), saved, 0o644)
	res, err := f.agent.Restore(ctx, id, cps[1], nil)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	sameTree(t, "after the re-run", tree(t, f.dir), f.before[1])
	// And again: nothing left to do, still fine.
	if _, err := f.agent.Restore(ctx, id, cps[1], nil); err != nil {
		t.Fatalf("third run: %v", err)
	}
	if res.UndoSession == "" {
		t.Fatal("no undo session")
	}
}

// A store that keeps no blobs (no checkpoint.BlobStore) still runs shell
// commands: a restore lists them as not undone, as the documented fallback.
func TestRestoreWithoutBlobsListsShellCommands(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("w1", "write", map[string]any{"path": "a.txt", "content": "a"})}},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("b1", "bash", map[string]any{"command": "echo hi > shell.txt"})}},
		fakemodel.Reply{Text: "done"},
	)
	noBlobs := struct{ checkpoint.Checkpointer }{memory.New()}
	a := newAgent(t, p, liteagent.Options{Checkpointer: noBlobs})
	if _, err := a.Send(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	checkServer(t, srv)
	cps, err := a.ListCheckpoints(context.Background(), a.SessionID())
	if err != nil || len(cps) == 0 {
		t.Fatalf("checkpoints: %v %v", cps, err)
	}
	res, err := a.Restore(context.Background(), a.SessionID(), cps[0].Seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotUndone) != 1 || res.NotUndone[0] != "bash b1" {
		t.Fatalf("not undone: %v", res.NotUndone)
	}
	if _, err := os.Stat(filepath.Join(a.Workdir(), "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a.txt, written by a tool after the checkpoint, is still there")
	}
	if _, err := os.Stat(filepath.Join(a.Workdir(), "shell.txt")); err != nil {
		t.Fatalf("shell.txt, which the restore says it cannot undo, is gone: %v", err)
	}
}

func TestForkKeepsOriginal(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "a.txt", content: "1"}},
		{{kind: "write", path: "a.txt", content: "2"}},
	})
	ctx := context.Background()
	id := f.agent.SessionID()
	cps := f.checkpoints(t)
	orig, _ := checkpoint.ReadAll(ctx, f.store, id)
	fork, err := f.agent.Fork(ctx, id, cps[1])
	if err != nil {
		t.Fatal(err)
	}
	forked, _ := checkpoint.ReadAll(ctx, f.store, fork)
	if int64(len(forked)) != cps[1] {
		t.Fatalf("fork has %d events, want %d", len(forked), cps[1])
	}
	info, err := f.agent.SessionInfo(ctx, fork)
	if err != nil || info.Parent == nil || info.Parent.Session != id || info.Parent.Seq != cps[1] {
		t.Fatalf("fork parent %+v %v", info, err)
	}
	for i := 1; i < len(forked); i++ {
		if string(forked[i].Data) != string(orig[i].Data) || forked[i].Type != orig[i].Type {
			t.Fatalf("fork event %d differs from the original", i+1)
		}
	}
	after, _ := checkpoint.ReadAll(ctx, f.store, id)
	if len(after) != len(orig) {
		t.Fatal("fork changed the original")
	}
	if err := f.agent.DeleteSession(ctx, fork); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Head(ctx, fork); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("deleted fork still there: %v", err)
	}
}
