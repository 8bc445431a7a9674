package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// writeTree creates files under dir (path → content).
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readOr(path, missing string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return missing
	}
	return string(b)
}

// TestRestoreUndoesShellCommand: what a bash command changed is shown by
// the line mode's /rewind preview and put back by --restore; a file
// someone else edited since stops the restore until --force.
func TestRestoreUndoesShellCommand(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo changed > a.txt && rm gone.txt && mkdir -p gen/deep && echo out > gen/deep/o.txt"})}},
		fakemodel.Reply{Text: "done"},
	)
	work := t.TempDir()
	writeTree(t, work, map[string]string{"a.txt": "original\n", "gone.txt": "keep me\n"})
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "bash", "change things"); code != 0 {
		t.Fatalf("run: %d %s", code, errs)
	}
	id := onlySession(t, work, db)
	seq := firstCheckpoint(t, work, db, id)
	if readOr(filepath.Join(work, "a.txt"), "") != "changed\n" {
		t.Fatal("the command did not run")
	}

	// The preview lists the shell command's changes and changes nothing.
	p := startInput(t, nil, work, nil, "/rewind "+seq+"\nn\n/exit\n", "--session-db", db, "--resume", id, "--plain")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("line mode: %v\n%s", err, p.stderr.String())
	}
	preview := p.stderr.String()
	for _, want := range []string{"restore a.txt", "restore gone.txt", "remove  gen/deep/o.txt", "rmdir   gen/deep", "rmdir   gen"} {
		if !strings.Contains(strings.Join(strings.Fields(preview), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("/rewind preview lacks %q:\n%s", want, preview)
		}
	}
	if strings.Contains(preview, "cannot undo") {
		t.Errorf("/rewind preview lists the tracked command as not undoable:\n%s", preview)
	}
	if readOr(filepath.Join(work, "a.txt"), "") != "changed\n" {
		t.Fatal("the preview (answered n) changed a file")
	}

	// Someone else edits a file the command changed: the restore refuses.
	writeTree(t, work, map[string]string{"a.txt": "someone else\n"})
	code, _, errs := run(t, nil, work, "--session-db", db, "--restore", id, "--to", seq)
	if code == 0 || !strings.Contains(errs, "a.txt") || readOr(filepath.Join(work, "a.txt"), "") != "someone else\n" {
		t.Fatalf("restore over someone else's edit: exit %d, %q; want a refusal naming a.txt and the file kept", code, errs)
	}
	if _, err := os.Stat(filepath.Join(work, "gen/deep/o.txt")); err != nil {
		t.Fatalf("the refused restore removed a file: %v", err)
	}
	code, out, errs := run(t, nil, work, "--session-db", db, "--restore", id, "--to", seq, "--force")
	if code != 0 {
		t.Fatalf("--restore --force: %d %s", code, errs)
	}
	if got := readOr(filepath.Join(work, "a.txt"), ""); got != "original\n" {
		t.Errorf("a.txt after the restore: %q", got)
	}
	if got := readOr(filepath.Join(work, "gone.txt"), "(missing)"); got != "keep me\n" {
		t.Errorf("gone.txt after the restore: %q", got)
	}
	if _, err := os.Stat(filepath.Join(work, "gen")); !os.IsNotExist(err) {
		t.Errorf("gen/, made by the command, is still there: %v", err)
	}
	var res struct {
		NotUndone   []string `json:"not_undone"`
		UndoSession string   `json:"undo_session"`
		UndoSeq     int64    `json:"undo_seq"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.UndoSession == "" || len(res.NotUndone) != 0 {
		t.Fatalf("restore result %s (%v): want an undo session and nothing not undone", out, err)
	}
	// And the restore itself can be undone.
	code, _, errs = run(t, nil, work, "--session-db", db, "--restore", res.UndoSession, "--to", fmt.Sprint(res.UndoSeq))
	if code != 0 || readOr(filepath.Join(work, "gen/deep/o.txt"), "") != "out\n" || readOr(filepath.Join(work, "a.txt"), "") != "someone else\n" {
		t.Fatalf("undo of the restore: %d %s", code, errs)
	}
}

// TestCrashMidShellCommandReviewListsChanges: a SIGKILL while a bash
// command runs leaves a hazard whose review lists the files that differ
// from the manifest taken before it.
func TestCrashMidShellCommandReviewListsChanges(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo half > a.txt; mkdir -p out; echo x > out/new.txt; echo $$ > tool.pid; touch started; sleep 60"})}},
	)
	work := t.TempDir()
	writeTree(t, work, map[string]string{"a.txt": "whole\n", "same.txt": "same\n"})
	db := filepath.Join(t.TempDir(), "s.db")
	p := start(t, srv, work, "--session-db", db, "--allow", "bash", "run it")
	waitFor(t, "the tool to start", func() bool { _, err := os.Stat(filepath.Join(work, "started")); return err == nil })
	var tool int
	if _, err := fmt.Sscan(readOr(filepath.Join(work, "tool.pid"), ""), &tool); err == nil && tool > 0 {
		t.Cleanup(func() { syscall.Kill(-tool, syscall.SIGKILL) })
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	id := onlySession(t, work, db)
	in := sessionInfo(t, work, db, id)
	if len(in.Hazards) != 1 || in.Hazards[0].CallID != "b1" {
		t.Fatalf("hazards %+v, want b1", in.Hazards)
	}
	got := in.Hazards[0].Paths
	for _, want := range []string{"a.txt", "out", "out/new.txt", "started", "tool.pid"} {
		if !slices.Contains(got, want) {
			t.Errorf("review lists %v, want %s among them", got, want)
		}
	}
	if slices.Contains(got, "same.txt") {
		t.Errorf("review lists same.txt, which the command did not touch: %v", got)
	}
	code, out, _ := run(t, nil, work, "--session-db", db, "--recovery-info", id)
	if code != 0 || !strings.Contains(out, "out/new.txt") {
		t.Errorf("--recovery-info: %d %s; want it to list out/new.txt", code, out)
	}
}

// TestRestoreWaitsForAToolThatIsWriting: while another process runs a turn
// whose tool is still writing, a restore refuses (exit 4, naming that
// process) before it touches a file, instead of racing the tool.
func TestRestoreRefusesWhileAToolIsWriting(t *testing.T) {
	srv := startModel(t,
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("w1", "write", map[string]any{"path": "a.txt", "content": "first\n"})}},
		fakemodel.Reply{Text: "one"},
		fakemodel.Reply{ToolCalls: []fakemodel.ToolCall{toolCall("b1", "bash", map[string]any{"command": "echo $$ > tool.pid; touch started; for i in $(seq 1 40); do echo $i >> a.txt; sleep 0.05; done"})}},
		fakemodel.Reply{Text: "two"},
	)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "--allow", "edit", "first"); code != 0 {
		t.Fatalf("first turn: %d %s", code, errs)
	}
	id := onlySession(t, work, db)
	seq := firstCheckpoint(t, work, db, id)
	p := start(t, srv, work, "--session-db", db, "--allow", "bash", "--resume", id, "append slowly")
	waitFor(t, "the tool to start", func() bool { _, err := os.Stat(filepath.Join(work, "started")); return err == nil })
	var tool int
	if _, err := fmt.Sscan(readOr(filepath.Join(work, "tool.pid"), ""), &tool); err == nil && tool > 0 {
		t.Cleanup(func() { syscall.Kill(-tool, syscall.SIGKILL) })
	}
	code, _, errs := run(t, nil, work, "--session-db", db, "--restore", id, "--to", seq)
	if code != 4 || !strings.Contains(errs, fmt.Sprintf("process %d", p.cmd.Process.Pid)) {
		t.Fatalf("restore while a tool writes: exit %d, %q; want 4 naming the running process", code, errs)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the turn that was writing: %v\n%s", err, p.stderr.String())
	}
	if got := readOr(filepath.Join(work, "a.txt"), ""); !strings.HasPrefix(got, "first\n1\n") || !strings.HasSuffix(got, "\n40\n") {
		t.Fatalf("a.txt after the refused restore and the finished tool: %q", got)
	}
	// Once the turn is over the restore runs.
	if code, _, errs := run(t, nil, work, "--session-db", db, "--restore", id, "--to", seq); code != 0 {
		t.Fatalf("restore after the turn: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(work, "a.txt")); !os.IsNotExist(err) {
		t.Errorf("a.txt after restoring to before the first prompt: %v, want it gone", err)
	}
}
