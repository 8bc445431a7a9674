package liteagent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
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

// A command that touches 10,000 files: every one is put back.
func TestRestoreCommandTouching10000Files(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 files")
	}
	f := runPrompts(t, nil, [][]op{
		{{kind: "bash", content: "mkdir -p many && for i in $(seq 1 10000); do echo $i > many/f$i; done"}},
		{{kind: "bash", content: "for f in many/*; do echo more >> $f; done && rm many/f1 && chmod 600 many/f2"}},
	})
	cps := f.checkpoints(t)
	ctx := context.Background()
	id := f.agent.SessionID()
	if got := len(tree(t, f.dir)); got != 9999 {
		t.Fatalf("%d files after the commands, want 9,999", got)
	}
	res, err := f.agent.Restore(ctx, id, cps[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 10000 {
		t.Errorf("restore put back %d files, want 10,000", len(res.Files))
	}
	sameTree(t, "tree after undoing the second command", tree(t, f.dir), f.before[1])
	if _, err := f.agent.Restore(ctx, id, cps[0], nil); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "tree after undoing both", tree(t, f.dir), f.before[0])
	if got := dirs(t, f.dir); len(got) != 0 {
		t.Errorf("directories left: %v", got)
	}
}

// A file over the per-file cap is hashed but its content is not kept: a
// command's change to it is listed as not undone, the rest is undone, and
// the big file is left as the command left it.
func TestShellChangeOverTheCapIsListed(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", (10<<20)/16+1) // just over 10 MiB
	f := runPrompts(t, map[string]file{"big.bin": {big, 0o644}, "small.txt": {"s\n", 0o644}}, [][]op{
		{{kind: "bash", content: "echo tail >> big.bin && echo t >> small.txt"}},
	})
	ctx := context.Background()
	res, err := f.agent.Restore(ctx, f.agent.SessionID(), f.checkpoints(t)[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	for _, n := range res.NotUndone {
		listed = listed || strings.Contains(n, "big.bin") && strings.Contains(n, "over the size limit")
	}
	if !listed {
		t.Errorf("not undone %q, want big.bin listed as over the size limit", res.NotUndone)
	}
	got := tree(t, f.dir)
	if got["small.txt"].content != "s\n" {
		t.Errorf("small.txt after restore: %q, want it put back", got["small.txt"].content)
	}
	if got["big.bin"].content != big+"tail\n" {
		t.Errorf("big.bin changed by the restore (%d bytes), want it left as the command left it", len(got["big.bin"].content))
	}
}

// A background job that writes after its turn ended, while the agent is
// idle: its changes are recorded when it ends and a restore undoes them.
func TestRestoreUndoesAJobThatWroteWhileIdle(t *testing.T) {
	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("c1", "bash", map[string]any{"command": "sleep 0.3; echo built > out.bin; echo more >> a.txt; mkdir -p cache && echo c > cache/x", "background": true})}},
		fakemodel.Reply{Text: "It runs in the background."},
		fakemodel.Reply{Text: "The build is done."},
	)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, p, liteagent.Options{Workdir: dir, Checkpointer: memory.New()})
	if _, err := a.Send(t.Context(), "build it in the background"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.bin")); err == nil {
		t.Fatal("the job wrote before the turn ended; the test needs it to write while the agent is idle")
	}
	waitJobs(t, a)
	checkServer(t, srv)
	if b, _ := os.ReadFile(filepath.Join(dir, "out.bin")); string(b) != "built\n" {
		t.Fatalf("the job did not run: out.bin %q", b)
	}
	cps, err := a.ListCheckpoints(t.Context(), a.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Restore(t.Context(), a.SessionID(), cps[0].Seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NotUndone) != 0 {
		t.Errorf("not undone %q, want nothing: the job's changes are recorded", res.NotUndone)
	}
	sameTree(t, "tree after the restore", tree(t, dir), map[string]file{"a.txt": {"a\n", 0o644}})
	if got := dirs(t, dir); len(got) != 0 {
		t.Errorf("directories left: %v", got)
	}
}

// snapshotDir reads every file under dir (content and mode).
func snapshotDir(t *testing.T, dir string) map[string]file {
	t.Helper()
	return tree(t, dir)
}

// Inside a git repository, a tracked command and its restore leave .git
// (index, objects, refs) byte for byte as it was, honour .gitignore, and
// never touch a file outside the workdir the command wrote.
func TestShellRewindInsideAGitRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitRun("init", "-q")
	for p, c := range map[string]string{"src.go": "package main\n", ".gitignore": "build/\n"} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun("add", ".")
	gitRun("commit", "-q", "-m", "first")
	gitBefore := snapshotDir(t, filepath.Join(dir, ".git"))

	srv, p := startModel(t, "anthropic",
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{call("b1", "bash", map[string]any{"command": "echo changed >> src.go && mkdir -p build && echo bin > build/out && echo new > new.go && echo out > " + outside})}},
		fakemodel.Reply{Text: "done"},
	)
	a := newAgent(t, p, liteagent.Options{Workdir: dir, Checkpointer: memory.New()})
	if _, err := a.Send(t.Context(), "change it"); err != nil {
		t.Fatal(err)
	}
	checkServer(t, srv)
	cps, err := a.ListCheckpoints(t.Context(), a.SessionID())
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Restore(t.Context(), a.SessionID(), cps[0].Seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Files {
		if strings.HasPrefix(f.Path, ".git") || strings.HasPrefix(f.Path, "build") {
			t.Errorf("the restore touched %s (%s): .git and ignored paths are not the session's", f.Path, f.Action)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src.go")); string(b) != "package main\n" {
		t.Errorf("src.go after the restore: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.go")); !os.IsNotExist(err) {
		t.Errorf("new.go, made by the command, is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "build/out")); string(b) != "bin\n" {
		t.Errorf("build/out, ignored, was changed by the restore: %q", b)
	}
	if b, _ := os.ReadFile(outside); string(b) != "out\n" {
		t.Errorf("a file outside the workdir was changed by the restore: %q", b)
	}
	sameTree(t, ".git after the command and the restore", snapshotDir(t, filepath.Join(dir, ".git")), gitBefore)
}

// The directories a file tool created go with a restore, when empty.
func TestRestoreRemovesDirectoriesFileToolsMade(t *testing.T) {
	f := runPrompts(t, nil, [][]op{
		{{kind: "write", path: "keep/a.txt", content: "a\n"}},
		{{kind: "write", path: "new/deep/b.txt", content: "b\n"}, {kind: "write", path: "keep/sub/c.txt", content: "c\n"}},
	})
	cps := f.checkpoints(t)
	if _, err := f.agent.Restore(context.Background(), f.agent.SessionID(), cps[1], nil); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "tree after the restore", tree(t, f.dir), f.before[1])
	if got, want := dirs(t, f.dir), []string{"keep"}; !slices.Equal(got, want) {
		t.Errorf("directories after the restore: %v, want %v", got, want)
	}
}
