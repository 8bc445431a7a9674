package liteagent_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint"
	filestore "github.com/lite-agent/lite-agent/checkpoint/file"
	"github.com/lite-agent/lite-agent/internal/fakemodel"
)

// TestCutFileLogIsCorruption runs three turns into the file store (the
// SDK's default), cuts the session's log file in half, and checks that the
// SDK reports the session as damaged (checkpoint.ErrCorrupt, the session
// named) wherever it reads it, instead of carrying on with a shorter
// history, and that nothing is appended after the cut.
func TestCutFileLogIsCorruption(t *testing.T) {
	_, p := startModel(t, "anthropic",
		fakemodel.Reply{Text: "one"}, fakemodel.Reply{Text: "two"}, fakemodel.Reply{Text: "three"},
		fakemodel.Reply{Text: "must not be asked"},
	)
	root := filepath.Join(t.TempDir(), "sessions")
	work := t.TempDir()
	store, err := filestore.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: work})
	for _, prompt := range []string{"first", "second", "third"} {
		if _, err := a.Send(t.Context(), prompt); err != nil {
			t.Fatal(err)
		}
	}
	id := a.SessionID()
	a.Close()
	store.Close()

	target, err := os.Readlink(filepath.Join(root, "ids", id))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "ids", target)
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := whole[:len(whole)/2]
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}

	store, err = filestore.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	a = newAgent(t, p, liteagent.Options{Checkpointer: store, Workdir: work})
	corrupt := func(what string, err error) {
		t.Helper()
		ce, ok := checkpoint.IsCorrupt(err)
		if !ok || !errors.Is(err, checkpoint.ErrCorrupt) || ce.Session != id {
			t.Fatalf("%s of the cut session: %v, want a *checkpoint.CorruptError for %s", what, err, id)
		}
	}
	corrupt("Resume", a.Resume(t.Context(), id))
	_, err = a.SessionInfo(t.Context(), id)
	corrupt("SessionInfo", err)
	_, err = a.ListCheckpoints(t.Context(), id)
	corrupt("ListCheckpoints", err)
	_, err = a.Fork(t.Context(), id, 0)
	corrupt("Fork", err)
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, cut) {
		t.Fatalf("the cut log changed: %d bytes, was %d", len(after), len(cut))
	}
}
