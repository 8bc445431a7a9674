package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// envWriter names the database and session a child process of this test
// binary appends to until it is killed (see runWriter).
const envWriter = "LITE_AGENT_TEST_WRITER"

func init() {
	if v := os.Getenv(envWriter); v != "" {
		db, id, _ := strings.Cut(v, "\n")
		if err := runWriter(db, id); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
}

// runWriter appends prompts to session id in the SQLite database db, one
// Append at a time, printing "ready" after the first, until it is killed.
func runWriter(db, id string) error {
	s, err := sqlite.Open(db, nil)
	if err != nil {
		return err
	}
	ctx := context.Background()
	sum, err := s.Head(ctx, id)
	if err != nil {
		return err
	}
	head := sum.Head
	for i := 0; ; i++ {
		e := session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: fmt.Sprint("from the writer ", i)})
		if head, err = s.Append(ctx, id, head, []session.Event{e}); err != nil {
			return err
		}
		if i == 0 {
			fmt.Println("ready")
		}
	}
}

// TestInspectAfterKilledWriter kills a process in the middle of appending
// to a SQLite session database, many times, and inspects the session with
// lite-agent right after each kill: inspection must succeed (waiting for or
// recovering the WAL the killed writer left), never fail with SQLite's raw
// "locking protocol" error.
func TestInspectAfterKilledWriter(t *testing.T) {
	srv := startModel(t, fakemodel.Reply{Text: "hello"})
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := run(t, srv, work, "--session-db", db, "hi"); code != 0 {
		t.Fatalf("first turn: %d %s", code, errs)
	}
	id := onlySession(t, work, db)
	kills := 30
	if testing.Short() {
		kills = 5
	}
	// Each round kills the writer mid-append and at once starts the next
	// one (which recovers the WAL the killed one left) while lite-agent
	// inspects the session: the moment SQLite's WAL locking is raced.
	startWriter := func(i int) (*exec.Cmd, *bufio.Reader, *strings.Builder) {
		w := exec.Command(os.Args[0])
		w.Env = append(os.Environ(), envWriter+"="+db+"\n"+id)
		out, err := w.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		w.Stderr = &stderr
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Process.Kill(); w.Wait() })
		return w, bufio.NewReader(out), &stderr
	}
	w, out, stderr := startWriter(0)
	for i := range kills {
		if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("kill %d: the writer did not start: %q %v %s", i, line, err, stderr.String())
		}
		time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
		w.Process.Signal(syscall.SIGKILL)
		w.Wait()
		if ws, ok := w.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: the writer ended by itself: %v %s", i, w.ProcessState, stderr.String())
		}
		w, out, stderr = startWriter(i + 1)
		for _, args := range [][]string{{"--session-info", id}, {"--sessions"}} {
			code, _, errs := run(t, nil, work, append([]string{"--session-db", db}, args...)...)
			if code != 0 {
				t.Fatalf("kill %d: %s right after a writer was killed: exit %d, %q", i, args[0], code, errs)
			}
		}
	}
}
