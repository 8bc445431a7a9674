package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
	"github.com/lite-agent/lite-agent/session"
)

// TestConflictExitsFour resumes a session and, while the model answers,
// has another writer append to the same session: the run stops with exit
// status 4 and says how to go on, and the other writer's event stays.
func TestConflictExitsFour(t *testing.T) {
	isolate(t)
	work := t.TempDir()
	db := filepath.Join(t.TempDir(), "s.db")
	model(t, fakemodel.Reply{Text: "one"})
	if code, _, errs := runCLI(t, work, "", "--session-db", db, "first"); code != 0 {
		t.Fatalf("first run: %d %s", code, errs)
	}
	store, err := sqlite.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ns, _ := filepath.EvalSymlinks(work)
	list, err := store.List(context.Background(), ns, checkpoint.ListOptions{})
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %v", list, err)
	}
	id := list[0].ID
	first := list[0].Head
	srv := model(t, fakemodel.Reply{DelayMS: 3000, Text: "two"})
	other := make(chan error, 1)
	go func() {
		// The model has the request, and the prompt is stored (the first
		// model call goes out while the prompt is being appended).
		var h session.Summary
		var err error
		for len(srv.Requests()) == 0 || err != nil || h.Head == first {
			time.Sleep(5 * time.Millisecond)
			h, err = store.Head(context.Background(), id)
		}
		_, err = store.Append(context.Background(), id, h.Head, []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "from another writer"})})
		other <- err
	}()
	code, _, errs := runCLI(t, work, "", "--session-db", db, "--resume", id, "second")
	if err := <-other; err != nil {
		t.Fatalf("the other writer: %v", err)
	}
	if code != ExitConflict || !strings.Contains(errs, "--resume") || !strings.Contains(errs, id) {
		t.Fatalf("exit %d, stderr %q; want %d with a hint to resume", code, errs, ExitConflict)
	}
	events, err := checkpoint.ReadAll(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	var up session.UserPrompt
	if last := events[len(events)-1]; last.Type != session.TypeUserPrompt || last.Decode(&up) != nil || up.Text != "from another writer" {
		t.Fatalf("the log ends with %s, want the other writer's prompt", last.Type)
	}
}
