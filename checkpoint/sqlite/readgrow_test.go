package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/lite-agent/lite-agent/checkpoint"
	"github.com/lite-agent/lite-agent/checkpoint/sqlite"
	"github.com/lite-agent/lite-agent/session"
)

// TestReadPastTheHeadWhileAWriterAppends: a reader that asks for the
// events after the head it knows, while another connection appends, sees
// either nothing or the new events — never a log "damaged" because the
// head moved between the page it read and the head it checked.
func TestReadPastTheHeadWhileAWriterAppends(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	w, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := sqlite.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ev := func() []session.Event {
		return []session.Event{session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "x"})}
	}
	if _, err := w.Append(ctx, "s1", 0, append([]session.Event{session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: "s1"})}, ev()...)); err != nil {
		t.Fatal(err)
	}
	const appends = 300
	done := make(chan error, 1)
	go func() {
		head := int64(2)
		for range appends {
			h, err := w.Append(ctx, "s1", head, ev())
			if err != nil {
				done <- err
				return
			}
			head = h
		}
		done <- nil
	}()
	known := int64(2)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		for e, err := range r.Read(ctx, "s1", known+1) {
			if errors.Is(err, checkpoint.ErrCorrupt) {
				t.Fatalf("a read after head %d while a writer appends reported damage: %v", known, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			known = e.Seq
		}
	}
}
