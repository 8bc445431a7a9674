package liteagent_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	liteagent "github.com/lite-agent/lite-agent"
	"github.com/lite-agent/lite-agent/checkpoint/memory"
	"github.com/lite-agent/lite-agent/session"
)

// TestAcknowledgeRemovesStrayTemps: a write a crash cut off left its
// temporary file beside its target; acknowledging the interrupted call
// removes that file and nothing else: not a temporary file of another
// file, not a user's file of a similar name.
func TestAcknowledgeRemovesStrayTemps(t *testing.T) {
	store := memory.New()
	a := newAgent(t, nil, liteagent.Options{Checkpointer: store})
	work := a.Workdir()
	id := liteagent.NewSessionID()
	ns := a.Namespace()
	events := []session.Event{
		session.MustNew(session.TypeSessionStarted, session.SessionStarted{ID: id, Namespace: ns, Workdir: ns}),
		session.MustNew(session.TypeUserPrompt, session.UserPrompt{Text: "write it"}),
		session.MustNew(session.TypeAssistantMessage, session.AssistantMessage{Blocks: []session.Block{
			{Type: session.BlockToolUse, ID: "c1", Name: "write", Input: []byte(`{"path":"sub/a.txt","content":"x"}`)},
		}}),
		session.MustNew(session.TypeToolStarted, session.ToolStarted{CallID: "c1", Tool: "write", Paths: []string{"sub/a.txt"}}),
	}
	if _, err := store.Append(context.Background(), id, 0, events); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join("sub", ".a.txt.lite-agent-abcdefgh27.tmp")
	kept := []string{
		filepath.Join("sub", ".b.txt.lite-agent-abcdefgh27.tmp"), // another file's: not this call's
		filepath.Join("sub", ".a.txt.lite-agent-notes.tmp"),      // a user's file
		filepath.Join("sub", "a.txt.lite-agent-abcdefgh27.tmp"),  // no leading dot
		filepath.Join("sub", ".a.txt.lite-agent-ABCDEFGH27.tmp"), // not WriteFile's alphabet
		filepath.Join("sub", "a.txt"),
	}
	for _, p := range append([]string{stray}, kept...) {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Resume(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	hz := a.Hazards()
	if len(hz) != 1 || !slices.Equal(hz[0].Paths, []string{"sub/a.txt"}) {
		t.Fatalf("hazards %+v; want the write of sub/a.txt", hz)
	}
	if _, err := os.Stat(filepath.Join(work, stray)); err != nil {
		t.Fatalf("the stray went before the review: %v", err)
	}
	if err := a.Acknowledge(t.Context(), hz[0].Token); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, stray)); !os.IsNotExist(err) {
		t.Fatalf("the stray temporary file %s is still there after the acknowledgement (%v)", stray, err)
	}
	for _, p := range kept {
		if _, err := os.Stat(filepath.Join(work, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
