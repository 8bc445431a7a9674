package liteagent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/session"
)

// dirs lists the directories under dir (relative, slash-separated).
func dirs(t failer, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// A shell command's changes are undone like a file tool's: created files
// and directories go, changed and deleted files come back with their
// modes, and the restore can itself be undone.
func TestRestoreUndoesShellCommands(t *testing.T) {
	pre := map[string]file{"keep.txt": {"untouched\n", 0o644}, "edit.txt": {"old\n", 0o644}, "gone.txt": {"bye\n", 0o600}, "run.sh": {"echo\n", 0o644}}
	f := runPrompts(t, pre, [][]op{
		{{kind: "write", path: "a.txt", content: "v1\n"}},
		{{kind: "bash", content: "echo new > edit.txt && rm gone.txt && chmod 755 run.sh && mkdir -p made/deep && echo x > made/deep/x.txt && echo v2 > a.txt && mv keep.txt kept.txt"}},
	})
	cps := f.checkpoints(t)
	ctx := context.Background()
	id := f.agent.SessionID()
	end := tree(t, f.dir)
	if end["edit.txt"].content != "new\n" || end["made/deep/x.txt"].content != "x\n" {
		t.Fatalf("the command did not run as scripted: %v", end)
	}
	res, err := f.agent.Restore(ctx, id, cps[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "tree after restoring to before the command", tree(t, f.dir), f.before[1])
	if got := dirs(t, f.dir); len(got) != 0 {
		t.Errorf("directories left after the restore: %v, want none (the command made them)", got)
	}
	for _, n := range res.NotUndone {
		if strings.Contains(n, "bash") {
			t.Errorf("a tracked command is listed as not undone: %q", n)
		}
	}
	if _, err := f.agent.Restore(ctx, res.UndoSession, res.UndoSeq, nil); err != nil {
		t.Fatalf("undo the restore: %v", err)
	}
	sameTree(t, "tree after undoing the restore", tree(t, f.dir), end)
	if got, want := dirs(t, f.dir), []string{"made", "made/deep"}; !slices.Equal(got, want) {
		t.Errorf("directories after undoing: %v, want %v", got, want)
	}
}

// The log records the manifest before the command with its tool_started
// and the changes with its receipt, in the same appends.
func TestShellChangesRecordedWithTheReceipt(t *testing.T) {
	f := runPrompts(t, map[string]file{"a.txt": {"a\n", 0o644}}, [][]op{
		{{kind: "bash", content: "echo b > b.txt && echo aa > a.txt"}},
	})
	events, err := checkpoint.ReadAll(context.Background(), f.store, f.agent.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	var typ []session.Type
	var rec session.WorkspaceChanged
	for _, e := range events {
		switch e.Type {
		case session.TypeToolStarted, session.TypeWorkspaceScanned, session.TypeWorkspaceChanged, session.TypeToolFinished:
			typ = append(typ, e.Type)
		}
		if e.Type == session.TypeWorkspaceChanged {
			if err := e.Decode(&rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []session.Type{session.TypeToolStarted, session.TypeWorkspaceScanned, session.TypeWorkspaceChanged, session.TypeToolFinished}
	if !slices.Equal(typ, want) {
		t.Fatalf("events %v, want %v", typ, want)
	}
	var got []string
	for _, c := range rec.Changes {
		got = append(got, c.Kind+" "+c.Path)
	}
	if w := []string{"changed a.txt", "created b.txt"}; !slices.Equal(got, w) {
		t.Errorf("changes %v, want %v", got, w)
	}
	if rec.BlobBytes != 2 {
		t.Errorf("blob bytes %d, want 2 (the old a.txt)", rec.BlobBytes)
	}
}
