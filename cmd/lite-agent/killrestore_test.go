//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
	"github.com/lite-agent/lite-agent/tool"
)

// killRestoreFiles is how many files the killed restore puts back, and
// killRestoreSize the size of each: enough that it is still writing when
// the test sees its first temporary file.
const (
	killRestoreFiles = 200
	killRestoreSize  = 64 << 10
)

// seedEdits stores a session whose one turn changed killRestoreFiles
// files from "old" content to "new", and leaves them new in work.
func seedEdits(t *testing.T, db, work, id string) {
	t.Helper()
	st, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := session.MustNew
	var paths []string
	var snaps []session.Event
	files := map[string]string{}
	for i := range killRestoreFiles {
		p := fmt.Sprintf("f%03d.txt", i)
		old := strings.Repeat(fmt.Sprintf("old %d\n", i), killRestoreSize/8)
		paths = append(paths, p)
		snaps = append(snaps, ev(session.TypeFileSnapshot, session.FileSnapshot{CallID: "e1", Path: p, Existed: true, Mode: 0o644, Content: []byte(old), Digest: sha(old)}))
		nu := "new\n"
		files[p] = sha(nu)
		if err := os.WriteFile(filepath.Join(work, p), []byte(nu), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	input, _ := json.Marshal(map[string]any{"paths": paths})
	log := []session.Event{
		ev(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: work, Workdir: work, Model: "m"}),
		ev(session.TypeUserPrompt, session.UserPrompt{Text: "rewrite them all"}),
		ev(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{{Type: session.BlockToolUse, ID: "e1", Name: "write", Input: input}}, StopReason: "tool_use"}),
		ev(session.TypeToolStarted, session.ToolStarted{CallID: "e1", Tool: "write", Paths: paths}),
	}
	log = append(log, snaps...)
	log = append(log,
		ev(session.TypeToolFinished, session.ToolFinished{CallID: "e1", Tool: "write", Output: "ok", Files: files}),
		ev(session.TypeTurnCompleted, session.TurnCompleted{StopReason: "end_turn"}),
	)
	if _, err := st.Append(context.Background(), id, 0, log); err != nil {
		t.Fatal(err)
	}
}

// strays lists the temporary files of interrupted writes in dir.
func strays(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, ok := tool.StrayTempOf(e.Name()); ok {
			out = append(out, e.Name())
		}
	}
	return out
}

// killMidRestore starts a restore of a fresh seeded session to its first
// checkpoint and SIGKILLs it as soon as it has put back its first file,
// until a kill lands before it put back the last one. It returns the
// workdir, database and session.
func killMidRestore(t *testing.T) (work, db, id string) {
	t.Helper()
	first, last := "f000.txt", fmt.Sprintf("f%03d.txt", killRestoreFiles-1)
	for attempt := range 20 {
		work, _ = filepath.EvalSymlinks(t.TempDir())
		db = filepath.Join(t.TempDir(), "s.db")
		id = fmt.Sprintf("01kill%020d", attempt)
		seedEdits(t, db, work, id)
		p := start(t, nil, work, "--session-db", db, "--restore", id, "--to", "1")
		exited := make(chan error, 1)
		go func() { exited <- p.cmd.Wait() }()
		var err error
	watch:
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Microsecond) {
			select {
			case err = <-exited:
				break watch
			default:
			}
			if b, _ := os.ReadFile(filepath.Join(work, first)); string(b) != "new\n" {
				p.cmd.Process.Kill()
				err = <-exited
				break
			}
		}
		if err == nil {
			continue // it finished first
		}
		if !strings.Contains(err.Error(), "killed") {
			t.Fatalf("the restore ended before the test saw it write (%v): %s", err, p.stderr)
		}
		if b, _ := os.ReadFile(filepath.Join(work, last)); string(b) == "new\n" {
			return work, db, id
		}
	}
	t.Fatal("20 restores were each killed too late, after putting back their last file")
	return
}

// plantStray puts beside name in dir a file of the shape a write through a
// temporary file leaves when it is cut off, and returns its name.
func plantStray(t *testing.T, dir, name string) string {
	t.Helper()
	stray := "." + name + ".lite-agent-abcdefgh23.tmp"
	if _, ok := tool.StrayTempOf(stray); !ok {
		t.Fatalf("%s is not of the shape of a temporary file", stray)
	}
	if err := os.WriteFile(filepath.Join(dir, stray), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	return stray
}

// TestKilledRestoreLeavesNoStrays: a restore SIGKILLed half-way (its claim
// stored, some files put back, others not) leaves no temporary file (it
// rewrites files in place; the re-run puts every file back); the next
// resume refuses (the restore is unfinished, exit 4) and, like the re-run,
// removes the temporary files of cut-off writes beside the files the
// restore's claim names (planted here: one such write is a tool's, through
// Loc.WriteFile); the re-run leaves every file as at the checkpoint, and a
// file of the user's beside them is kept.
func TestKilledRestoreLeavesNoStrays(t *testing.T) {
	for _, next := range []string{"resume", "restore"} {
		t.Run(next, func(t *testing.T) {
			work, db, id := killMidRestore(t)
			if left := strays(t, work); len(left) > 0 {
				t.Fatalf("the killed restore left temporary files %v", left)
			}
			left := []string{plantStray(t, work, "f150.txt")}
			mine := filepath.Join(work, ".f150.txt.lite-agent-notmine.tmp")
			if err := os.WriteFile(mine, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if next == "resume" {
				code, _, errs := run(t, nil, work, "--session-db", db, "--resume", id, "go on")
				if code != 4 || !strings.Contains(errs, "restore") {
					t.Fatalf("resume of a session whose restore was cut off: %d %s; want 4 asking to re-run the restore", code, errs)
				}
				if got := strays(t, work); len(got) > 0 {
					t.Fatalf("after the refused resume the temporary files %v are still there (before: %v)", got, left)
				}
			}
			if code, _, errs := run(t, nil, work, "--session-db", db, "--restore", id, "--to", "1"); code != 0 {
				t.Fatalf("re-run of the killed restore: %d %s", code, errs)
			}
			if got := strays(t, work); len(got) > 0 {
				t.Fatalf("after the re-run restore the temporary files %v are still there (before: %v)", got, left)
			}
			if _, err := os.Stat(mine); err != nil {
				t.Errorf("a file of the user's that only looks like a temporary file was removed: %v", err)
			}
			for i := range killRestoreFiles {
				b, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("f%03d.txt", i)))
				if err != nil || !strings.HasPrefix(string(b), fmt.Sprintf("old %d\n", i)) || len(b) != killRestoreSize/8*len(fmt.Sprintf("old %d\n", i)) {
					t.Fatalf("f%03d.txt after the re-run restore: %d bytes, %v; want its old content", i, len(b), err)
				}
			}
		})
	}
}
